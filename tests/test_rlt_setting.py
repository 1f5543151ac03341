"""RLT's setting at toy scale (issue 44, item 2): what `tandem-rlvr demo --partner rlt` trains, piece by piece.

The writer's format tokens are tokens of the demo's tokenizer; the writer is warmed up on the
format (question + solution -> explanation, loss on the explanation); RL rewards the student
score alone, -1 where the explanation is left unclosed, the KL over the explanation only;
RLT's temperature 0.7; a budget that holds the longest solution; distillation in RLT's
student form, think(explanation) + solution. model_spec/SPEC.md §14 lists what still differs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tandem.errors import TandemError
from tandem.models.loading import load_model, load_tokenizer
from tandem.rewards.partner_config import RLT_TEACHER_REWARD, PartnerRewardConfig
from tandem.rewards.partner_score import combined_reward, partner_rewards
from tandem.rollout.contract import Rollout
from tandem.rewards.solution_prompt import (EXPLANATION_TAGS, FORMAT_TOKENS, INSTRUCTION_TOKEN, SYSTEM, THOUGHT_TAGS,
                                    student_completion, writer_prompt_ids, writer_warmup_response)
from tandem.trainers import require_partner_reward
from tandem_app.task import DEMO_TASK, generate_problems
from tandem_app.train.data import prompt_ids_batch, response_ids
from tandem_app.zoo import add_format_tokens

RLT = PartnerRewardConfig(weight=1.0, target="solution", writer_sees_solution=True, **RLT_TEACHER_REWARD)


@pytest.fixture(scope="module")
def fmt_dir(tiny_dir, tmp_path_factory) -> Path:
    return add_format_tokens(tiny_dir, tmp_path_factory.mktemp("rlt") / "student")


@pytest.fixture(scope="module")
def problems():
    return generate_problems("train", 400, 0, DEMO_TASK)


def test_the_format_tokens_are_tokens_and_nothing_else_moves(tiny_dir, fmt_dir):
    before, after = load_tokenizer(tiny_dir), load_tokenizer(fmt_dir)
    ids = [after(t, add_special_tokens=False)["input_ids"] for t in FORMAT_TOKENS]
    assert all(len(i) == 1 and i[0] >= len(before) for i in ids)  # one token each, after the BPE's ids
    assert {k: v for k, v in after.get_vocab().items() if k in before.get_vocab()} == before.get_vocab()
    assert (fmt_dir / "model.safetensors").read_bytes() == (tiny_dir / "model.safetensors").read_bytes()
    assert add_format_tokens(tiny_dir, fmt_dir) == fmt_dir  # a finished copy is reused


def test_the_writers_prompt_costs_about_three_questions_as_rlts_does(tiny_dir, fmt_dir, problems):
    """RLT's teacher prompt is about 2-3x its student's (a ~300-token instruction and the solution beside the
    question); the demo's tokenizer in words made it 7x (341 tokens against 49)."""
    plain = sum(len(p) for p in prompt_ids_batch(load_tokenizer(fmt_dir), problems[:50]))
    for model, low, high in ((fmt_dir, 2.5, 3.5), (tiny_dir, 6.0, 8.0)):
        tok = load_tokenizer(model)
        writer = sum(len(writer_prompt_ids(tok, p.prompt, p.solution)) for p in problems[:50])
        assert low < writer / plain < high, (model, writer / plain)
    text = load_tokenizer(fmt_dir).decode(writer_prompt_ids(load_tokenizer(fmt_dir), "Q?", "S."))
    assert INSTRUCTION_TOKEN in text and SYSTEM not in text  # the instruction is the token the warm-up teaches


def test_the_warm_up_trains_the_explanation_after_the_writers_prompt(fmt_dir, problems, tmp_path):
    from tandem_app.experiments.writer_warmup import WarmupConfig, run_writer_warmup, warmup_examples

    tok = load_tokenizer(fmt_dir)
    (prompt, response), = warmup_examples(tok, problems[:1])
    p = problems[0]
    assert prompt == writer_prompt_ids(tok, p.prompt, p.solution)  # question + solution: not under the loss
    assert tok.decode(response) == f"{p.solution}\n{EXPLANATION_TAGS[1]}<|im_end|>"  # explanation + tag: the loss
    model = run_writer_warmup(fmt_dir, tmp_path / "warm", 0, DEMO_TASK,
                              WarmupConfig(steps=2, batch_size=2, n_problems=4, save_every=10), progress=False)
    assert (model / "config.json").is_file() and len(load_tokenizer(model)) == len(tok)


def test_a_warm_up_of_a_tokenizer_without_the_format_is_refused(tiny_dir, tmp_path):
    from tandem_app.experiments.writer_warmup import run_writer_warmup

    with pytest.raises(TandemError, match=r"splits RLT's format tokens .*tandem_app.zoo.add_format_tokens$"):
        run_writer_warmup(tiny_dir, tmp_path / "warm", 0, DEMO_TASK, progress=False)
    assert not (tmp_path / "warm").exists()


def _rollout(tok, prompt, text_ids, senior_lp):
    return Rollout(list(prompt), list(text_ids), [1] * len(text_ids), tok.decode(text_ids), "stop",
                   senior_logprobs=list(senior_lp))


def test_rlts_reward_is_the_score_alone_and_minus_one_without_the_closing_tag(fmt_dir, problems):
    tok, scorer = load_tokenizer(fmt_dir), load_model(fmt_dir)
    p = problems[0]
    prompt = prompt_ids_batch(tok, [p])[0]
    explanation = tok("She buys 2 more.", add_special_tokens=False)["input_ids"]
    close, end = tok.convert_tokens_to_ids(EXPLANATION_TAGS[1]), tok.convert_tokens_to_ids("<|im_end|>")
    closed = [*explanation, close, end]
    unclosed = [*explanation, end]
    lp = [-0.5] * len(explanation)
    # a huge senior log-prob after the tag: RLT's KL covers the explanation only, so it must not count
    rollouts = [_rollout(tok, prompt, closed, [*lp, 50.0, 50.0]), _rollout(tok, prompt, unclosed, [*lp, 50.0])]
    score, terms = partner_rewards(RLT, scorer, tok, [prompt, prompt], rollouts, [p.solution] * 2, 0.7, False)
    assert terms["closed"].tolist() == [1.0, 0.0]
    assert float(score[1] - score[0]) == pytest.approx(-1.0, abs=1e-9)  # the only difference: the missing tag
    assert float(terms["kl_max"][0]) < 40.0 and float(terms["kl_max"][0]) == pytest.approx(float(terms["kl_max"][1]))
    verifier = torch.tensor([1.0, 0.0], dtype=torch.float64)
    reward = combined_reward(verifier, score, RLT.weight, RLT.verifier_weight)
    assert torch.equal(reward, score)  # the verifier's weight is 0: a right answer earns nothing by itself


def test_the_rlt_variant_samples_and_scores_at_07_under_a_budget_for_the_longest_solution(fmt_dir):
    from tandem_app.experiments.demo import demo_config, train_config
    from tandem_app.experiments.partner_demo import RLT_MAX_NEW_TOKENS, variant_config

    tc = variant_config(demo_config(), Path("runs/x/seed-0"), "rlt")
    assert tc.sampling.temperature == 0.7 and tc.sampling.logprob_temperature == 0.7  # teacher_rlt.yaml
    assert tc.model.endswith("rlt-warmup/model") and tc.partner_reward.student.endswith("rlt-student")
    assert (tc.partner_reward.verifier_weight, tc.partner_reward.format_penalty) == (0.0, -1.0)
    assert tc.partner_reward.writer_sees_solution and tc.method == "grpo"
    tok = load_tokenizer(fmt_dir)
    longest = max(len(response_ids(tok, writer_warmup_response(p.solution)))
                  for p in generate_problems("train", 5000, 0, DEMO_TASK))
    assert longest <= RLT_MAX_NEW_TOKENS == tc.sampling.max_new_tokens
    assert longest > train_config(demo_config(), Path("x"), "grpo").sampling.max_new_tokens  # the demo's 82 cut it


def test_rlts_reward_keys_are_refused_where_they_are_not_computed_and_checked_here():
    for trainer, label in (("hf_trl", "HF TRL"), ("verl", "verl")):
        with pytest.raises(TandemError, match=rf"{label} adds the partner score to the verifier's reward"):
            require_partner_reward(trainer, RLT)
    require_partner_reward("embedded", RLT)
    require_partner_reward("verl", PartnerRewardConfig(weight=0.1, target="solution", writer_sees_solution=True))
    with pytest.raises(TandemError, match="only a writer who sees the solution writes"):
        PartnerRewardConfig(weight=1.0, format_penalty=-1.0)
    with pytest.raises(TandemError, match="format_penalty must be a number <= 0"):
        PartnerRewardConfig(weight=1.0, target="solution", writer_sees_solution=True, format_penalty=1.0)
    with pytest.raises(TandemError, match="verifier_weight=0 with weight=0 leaves no reward"):
        PartnerRewardConfig(verifier_weight=0.0)


def test_the_student_learns_rlts_student_form_think_explanation_then_solution(fmt_dir):
    from tandem_app.distill.config import DistillConfig
    from tandem_app.distill.preflight import Inputs
    from tandem_app.distill.problems import load_split
    from tandem_app.distill.traces import collect

    tok = load_tokenizer(fmt_dir)
    cfg = DistillConfig(n_train_problems=2, writer_sees_solution=True)
    train = load_split(cfg, "train", 2)

    class Teacher:  # writes "E<i>." and closes it, then text after the tag that is not explanation
        def solo(self, prompts, keys):
            out = []
            for i, p in enumerate(prompts):
                ids = [*tok(f"Step {i}.\n", add_special_tokens=False)["input_ids"],
                       tok.convert_tokens_to_ids(EXPLANATION_TAGS[1]), *tok("junk", add_special_tokens=False)["input_ids"],
                       tok.convert_tokens_to_ids("<|im_end|>")]
                out.append(Rollout(list(p), ids, [1] * len(ids), tok.decode(ids, skip_special_tokens=True), "stop"))
            return out

    rows, _ = collect(cfg, Inputs(tok, tok, True, 1024, train, []), Teacher())
    for i, (row, p) in enumerate(zip(rows, train)):
        want = student_completion(f"Step {i}.", p.solution)
        assert want.startswith(f"{THOUGHT_TAGS[0]}\nStep {i}.\n{THOUGHT_TAGS[1]}\n\n")
        assert row["response"] == want and tok.decode(row["student_response_ids"]) == want + "<|im_end|>"
        assert json.dumps(row)  # a traces.jsonl row
