"""One room owns every legacy and release name: `tandem/io/legacy.py`.

The spellings below are the release's or an earlier version's; the code reads them (config
keys, old metrics logs, old checkpoints) only through `tandem.io.legacy`, so no other source
file may spell them, not even in a docstring. Generic words that are also present names
(`enabled`, `frozen`, `num_handoffs` of one response) are left out of the scan; their
translation is still `tandem.io.legacy`'s (`pop_switch`, `AUTHOR_NAMES`, `metric_name`). The
output field `senior_fraction` is kept for its readers but written from
`legacy.SENIOR_FRACTION_FIELD` only, so the scan covers it.
"""

import re
from pathlib import Path

from tandem.io import legacy
from tandem.process.config import TandemConfig
from tandem.loss.loss_config import TandemLossConfig
from tandem.io.strict import build

ROOT = Path(__file__).resolve().parents[1]
CODE = ("tandem", "tandem_app", "tandem_backends", "tandem_eval", "vllm_source", "hf_grpo", "verl", "scripts")
KEYS = (*legacy.PROCESS_KEYS, *legacy.LOSS_KEYS, legacy.PLACEMENT_KEY, "primary_model",
        *(name for name in legacy.METRIC_NAMES if "/" in name), legacy.SENIOR_FRACTION_FIELD)
# A checkpoint name as a path or a string; `tandem_junior` alone is also the rollout server's RPC.
PATHS = tuple(rf"{re.escape(n)}/|{re.escape(n)}\b(?!\.pt)(?=[\"'])" if "." not in n else re.escape(n)
              for n in legacy.JUNIOR_CHECKPOINT_NAMES)


def _sources():
    for folder in CODE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path != ROOT / "tandem" / "io" / "legacy.py":
                yield path


def test_no_source_file_but_the_legacy_room_spells_a_legacy_name():
    keys = r"(?<![\w/.])(?:" + "|".join(re.escape(n) for n in KEYS) + r")(?![\w])"
    pattern = re.compile(keys + "|" + "|".join(PATHS))
    found = [f"{path.relative_to(ROOT).as_posix()}:{i}: {m.group(0)}"
             for path in _sources()
             for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             for m in pattern.finditer(line)]
    assert not found, "legacy spellings outside tandem/io/legacy.py:\n" + "\n".join(found)


def test_the_config_classes_take_their_legacy_tables_from_the_room():
    assert TandemConfig.ALIASES is legacy.PROCESS_KEYS
    assert TandemConfig.RETIRED is legacy.PROCESS_RETIRED
    assert TandemLossConfig.ALIASES is legacy.LOSS_KEYS
    from tandem_app.train.train_config import TrainConfig  # noqa: PLC0415 - the app floor's class
    assert TrainConfig.MOVED is legacy.TRAIN_MOVED


def test_legacy_spellings_still_configure_and_read_as_the_present_ones(tmp_path):
    assert build(TandemConfig, {"prob_primary": 0.3, "frozen_model": "base"}, "tandem") == \
        TandemConfig(prob_senior=0.3, junior_model="base")
    assert legacy.metric_name("actor/tandem_senior_token_frac") == "actor/tandem/senior_token_fraction"
    assert legacy.metric_name(legacy.SENIOR_FRACTION_FIELD) == "senior_token_fraction"
    (tmp_path / "tandem_junior").mkdir()
    assert legacy.junior_checkpoint(tmp_path, "junior") == tmp_path / "tandem_junior"
    (tmp_path / "junior").mkdir()
    assert legacy.junior_checkpoint(tmp_path, "junior") == tmp_path / "junior"  # the present name wins
