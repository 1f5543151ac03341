"""The evaluation's sampling is a preset of the one sampling config, not a class of its own.

`tandem_eval.core.sampling.eval_sampling()` is a `tandem.rollout.sampling.SamplingConfig` holding the paper's
values; an evaluation records its five keys, and a config section of it (`eval.sampling`,
distill's `eval_sampling`) takes those five keys, a key left out keeping the section's default.
"""

from __future__ import annotations

from dataclasses import asdict, replace

import pytest

from tandem.io.config_files import config_to_dict, load_config
from tandem.errors import TandemError
from tandem.rollout.sampling import SamplingConfig
from tandem.io.strict import build
from tandem_app.distill.config import DistillConfig
from tandem_app.train.eval_config import EvalConfig
from tandem_eval.core import tool
from tandem_eval.MATH import eval_solo
from tandem_eval.core.presets import PRESETS
from tandem_eval.core.run_config import EvalRun
from tandem_eval.core.sampling import SAMPLING_FIELDS, eval_sampling, record


def test_the_eval_preset_is_a_sampling_config_with_the_papers_values():
    s = eval_sampling()
    assert type(s) is SamplingConfig
    assert record(s) == {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "max_new_tokens": 3000, "seed": 0}
    assert eval_sampling(seed=17) == replace(s, seed=17) == PRESETS["paper"].sampling
    assert PRESETS["ours"].sampling == s


def test_an_output_records_the_five_evaluation_keys_only():
    assert tuple(record(eval_sampling(stop_strings=("x",)))) == SAMPLING_FIELDS
    assert {k: v for k, v in PRESETS["paper"].record().items() if k in SAMPLING_FIELDS} == record(eval_sampling(seed=17))
    assert not {"stop_strings", "stop_token_ids", "eos_token_ids"} & set(PRESETS["paper"].record())


def test_a_section_key_left_out_keeps_the_fields_default():
    default = DistillConfig().eval_sampling
    assert (default.max_new_tokens, default.seed) == (128, 12345) and default == EvalConfig().sampling
    cfg = load_config(DistillConfig, overrides=["eval_sampling.max_new_tokens=64"])
    assert cfg.eval_sampling == replace(default, max_new_tokens=64)  # seed 12345 kept (issue 59: one key only)


def test_a_section_is_written_and_suggested_as_its_five_keys():
    assert config_to_dict(DistillConfig())["eval_sampling"] == record(DistillConfig().eval_sampling)
    with pytest.raises(TandemError, match=r"^unknown config key 'eval_sampling.stop_strings': valid keys: "
                                          r"temperature, top_p, top_k, max_new_tokens, seed$"):
        load_config(DistillConfig, overrides=["eval_sampling.stop_strings=[x]"])
    with pytest.raises(TandemError, match="did you mean eval_sampling.temperature"):
        load_config(DistillConfig, overrides=["eval_sampling.temprature=1"])


def test_a_whole_instance_as_a_mapping_builds_the_section():
    given = replace(EvalConfig().sampling, max_new_tokens=256)
    assert build(DistillConfig, {"eval_sampling": asdict(given)}).eval_sampling == given


def test_an_eval_flag_out_of_range_is_named_as_the_user_typed_it():
    args = tool.parser(eval_solo).parse_args(["--model", "m", "--out-dir", "o", "--top-p", "2"])
    with pytest.raises(TandemError, match=r"^--top-p must be in \(0, 1\], got 2.0$"):
        EvalRun.from_args(args)
