"""The `paper` eval preset: the release's values, the prompt, the budget rule, the round cap, refusing to mix presets,
and resuming a killed benchmark from its finished samples."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tandem.errors import TandemError
from tandem.io.jsonl import read_jsonl
from tandem.rollout.contract import Rollout
from tandem_eval.core import presets, runner, tool
from tandem_eval.core.backends import EvalBackend
from tandem_eval.core.run_config import EvalRun
from tandem_eval.core.handoff import cap_rounds, turn_spans
from tandem_eval.MATH import eval_solo, eval_step_handoff
from tandem.metrics import ks_for
from tandem_eval.core.prompts import PAPER_INSTRUCTION, chat_prompt_text

SMALL = ["--n", "2", "--max-new-tokens", "12"]


def test_paper_preset_holds_the_releases_values():
    p = presets.PRESETS["paper"]
    # eval/config.py, eval/common.py, eval/solo.py, eval/handoff.py of the release
    s = p.sampling
    assert (s.temperature, s.top_p, s.top_k, s.max_new_tokens) == (0.7, 0.8, 20, 3000)
    assert (p.n, s.seed, ks_for(p.n)) == (8, 17, [1, 2, 4, 8])
    assert p.benchmarks == ("aime2024", "aime2025", "aime2026", "amc_23_25")
    assert (p.context_length, p.context_reserve, p.max_rounds) == (4096, 8, 150)
    assert p.errata == "source" and p.instruction_separator == ""
    assert PAPER_INSTRUCTION == (" Solve the following math problem step by step. Put your final answer inside "
                                 "\\boxed{}, like \\boxed{42} or \\boxed{\\frac{1}{2}}.")


def test_paper_prompt_is_problem_then_instruction_without_thinking(shared_data):
    from tandem.models.loading import load_tokenizer

    tok = load_tokenizer(shared_data / "tokenizers" / "qwen3")
    text = chat_prompt_text(tok, "What is 1+1?", PAPER_INSTRUCTION, "")
    assert "<|im_start|>user\nWhat is 1+1? Solve the following math problem step by step." in text
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")  # the hybrid template's non-thinking turn


def test_budget_rule():
    paper = presets.PRESETS["paper"]
    assert presets.response_budget(paper, 3000, 200) == 3000
    assert presets.response_budget(paper, 3000, 1500) == 4096 - 1500 - 8
    assert presets.response_budget(presets.PRESETS["ours"], 3000, 5000) == 3000
    with pytest.raises(TandemError, match="no room for a response"):
        presets.response_budget(paper, 3000, 4090)


def test_the_amc_set_is_the_releases_121_problems_with_published_answers(shared_data):
    from tandem_eval.core.datasets import load_benchmark

    _, problems = load_benchmark("amc_23_25", shared_data, errata="source", allow_hub=False)
    answers = {p.answer for p in problems}
    # data/build_evals.py drops these answers, which its verifier cannot grade
    dropped = {"(0, \\frac{1}{2})", "[\\frac{3}{4}, \\frac{7}{8}]", "\\frac{\\pi}{2} - 2\\alpha", "D", "4{:}30", "k"}
    assert len(problems) == 121 and not answers & dropped
    assert {p.id: p.answer for p in problems}["2024-amc12b-25"] == "247"  # as published, not corrected


def _rollout(mask):
    return Rollout([1], list(range(10, 10 + len(mask))), mask, "", "stop", 0)


def test_cap_rounds_keeps_the_first_rounds_only():
    class Tok:
        def decode(self, ids, skip_special_tokens=True):
            return " ".join(map(str, ids))

    mask = [1, 1, 0, 1, 0, 0, 1]  # turns: S S | J | S | J J | S
    assert turn_spans(mask) == [(0, 2), (2, 3), (3, 4), (4, 6), (6, 7)]
    kept, cut = cap_rounds(_rollout(mask), 2, Tok())
    assert cut and kept.authorship_mask == [1, 1, 0, 1, 0, 0] and kept.finish_reason == "length"
    assert kept.text == "10 11 12 13 14 15"
    same, cut = cap_rounds(_rollout(mask), 3, Tok())
    assert not cut and same.authorship_mask == mask
    assert cap_rounds(_rollout(mask), None, Tok()) == (_rollout(mask), False)
    with pytest.raises(ValueError):
        cap_rounds(_rollout(mask), 0, Tok())


@pytest.fixture()
def mini(tmp_path):
    path = tmp_path / "mini.jsonl"
    rows = [{"id": f"m{i}", "problem": f"What is {i}+3?", "answer": str(i + 3), "source": "mini"} for i in range(5)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_paper_preset_run_records_itself_and_refuses_another_preset(tiny_dir, mini, tmp_path):
    out = tmp_path / "solo"
    args = ["--model", str(tiny_dir), "--benchmarks", str(mini), "--max-problems", "2", "--out-dir", str(out), *SMALL]
    assert eval_solo.main([*args, "--preset", "paper"]) == 0
    summary = json.loads((out / "mini.summary.json").read_text())
    config = summary["config"]
    assert config["preset"] == "paper" and config["sampling"]["seed"] == 17 and config["errata"] == "source"
    assert config["instruction"] == PAPER_INSTRUCTION and config["instruction_separator"] == ""
    assert config["budget_rule"] == {"context_length": 4096, "context_reserve": 8}
    assert json.loads((out / "summary.json").read_text())["preset"] == "paper"
    before = (out / "mini.samples.jsonl").read_bytes()
    with pytest.raises(TandemError, match="made with the 'paper' eval preset, this run asks for 'ours'"):
        settings = EvalRun.from_args(tool.parser(eval_solo).parse_args(args))
        runner.run_eval(settings, "solo", {"model": runner.model_id(str(tiny_dir))},
                        EvalBackend(settings.engine, settings.sampling))
    assert (out / "mini.samples.jsonl").read_bytes() == before  # nothing overwritten
    assert eval_solo.main([*args, "--overwrite"]) == 0
    assert json.loads((out / "mini.summary.json").read_text())["config"]["preset"] == "ours"


def test_budget_rule_caps_each_response(tiny_dir, mini, tmp_path, monkeypatch):
    from tandem.models.loading import load_tokenizer

    tok = load_tokenizer(tiny_dir)
    lens = [len(tok(chat_prompt_text(tok, f"What is {i}+3?", PAPER_INSTRUCTION, ""))["input_ids"]) for i in range(5)]
    tight = replace(presets.PRESETS["paper"], context_length=max(lens) + 8 + 3)
    monkeypatch.setitem(presets.PRESETS, "paper", tight)
    out = tmp_path / "tight"
    assert eval_solo.main(["--model", str(tiny_dir), "--benchmarks", str(mini), "--out-dir", str(out), "--preset",
                           "paper", "--n", "2", "--max-new-tokens", "40", "--temperature", "1", "--top-k", "0",
                           "--top-p", "1", "--seed", "3"]) == 0
    rows = read_jsonl(out / "mini.samples.jsonl")
    by_id = {f"m{i}": max(lens) + 3 - n for i, n in enumerate(lens)}
    assert all(r["num_tokens"] <= by_id[r["problem_id"]] for r in rows)
    assert any(r["num_tokens"] == by_id[r["problem_id"]] > 0 for r in rows)  # the cap was reached


def test_a_killed_run_resumes_from_its_finished_samples(tiny_dir, tiny_dir_seed1, mini, tmp_path, monkeypatch):
    common = ["--senior", str(tiny_dir), "--junior", str(tiny_dir_seed1), "--benchmarks", str(mini), "--preset",
              "paper", *SMALL]
    whole = tmp_path / "whole"
    assert eval_step_handoff.main([*common, "--out-dir", str(whole)]) == 0  # one chunk of all 5 problems
    common += ["--save-every", "2"]

    real, calls = runner._generate, []

    def dies_on_the_second_chunk(backend, problems, *a, **k):
        calls.append([p.id for p in problems])
        if len(calls) == 2:
            raise KeyboardInterrupt  # the run is killed
        return real(backend, problems, *a, **k)

    out = tmp_path / "killed"
    monkeypatch.setattr(runner, "_generate", dies_on_the_second_chunk)
    assert eval_step_handoff.main([*common, "--out-dir", str(out)]) == 130  # "interrupted"
    assert not (out / "mini.summary.json").exists()
    partial = read_jsonl(out / "mini.partial.jsonl")
    assert [r["problem_id"] for r in partial[1:]] == ["m0", "m0", "m1", "m1"]
    with open(out / "mini.partial.jsonl", "a") as f:
        f.write('{"problem_id": "m2", "sam')  # a write cut short by the kill

    calls.clear()
    monkeypatch.setattr(runner, "_generate", lambda *a, **k: (calls.append([p.id for p in a[1]]), real(*a, **k))[1])
    assert eval_step_handoff.main([*common, "--out-dir", str(out)]) == 0
    assert calls == [["m2", "m3"], ["m4"]]  # the finished problems were not generated again
    assert not (out / "mini.partial.jsonl").exists()
    assert json.loads((out / "mini.summary.json").read_text())["chains_cut_by_max_rounds"] == 0
    assert read_jsonl(out / "mini.samples.jsonl") == read_jsonl(whole / "mini.samples.jsonl")
    assert (json.loads((out / "summary.json").read_text())["macro"]
            == json.loads((whole / "summary.json").read_text())["macro"])


@pytest.mark.parametrize("cut", ["", '{"config": {"pre'])
def test_a_partial_file_whose_header_a_kill_cut_short_is_a_benchmark_not_started(tiny_dir, mini, tmp_path, cut):
    from tandem_eval.paper.reproduce import check_out_dir

    out = tmp_path / "runs" / "base" / "solo"  # where the paper command keeps a checkpoint's solo eval
    out.mkdir(parents=True)
    (out / "mini.partial.jsonl").write_text(cut)  # no whole first line: no finished problem in it
    check_out_dir(tmp_path, {})  # the paper command does not take it for another preset's output
    assert eval_solo.main(["--model", str(tiny_dir), "--benchmarks", str(mini), "--out-dir", str(out), "--preset",
                           "paper", *SMALL]) == 0
    assert not (out / "mini.partial.jsonl").exists() and len(read_jsonl(out / "mini.samples.jsonl")) == 5 * 2


@pytest.mark.parametrize("head", ['{"config": {"pre\n', "not json\n", '{"config": {"preset": "ours"}}\n'])
def test_the_paper_command_refuses_a_partial_file_whose_whole_header_is_not_its_preset(tmp_path, head):
    from tandem_eval.paper.reproduce import check_out_dir

    partial = tmp_path / "runs" / "base" / "solo" / "mini.partial.jsonl"
    partial.parent.mkdir(parents=True)
    partial.write_text(head)
    with pytest.raises(TandemError, match="eval preset, not 'paper'"):
        check_out_dir(tmp_path, {})
    assert partial.read_text() == head


def _sample_row(problem_id: str):
    """One graded sample row of a one-sample benchmark, as the runner writes it."""
    from tandem_eval.core.rows import SampleRow

    return SampleRow(problem_id=problem_id, benchmark="b", source="s", sample=0, gold="4", extracted_answer="4",
                     correct=True, finish_reason="stop", num_tokens=2, text="4", response_ids=[1, 2], prompt_ids=[3])


def test_a_partial_file_appears_only_whole_with_its_header(tmp_path, monkeypatch):
    from tandem_eval.core import resume

    path, config = tmp_path / "b.partial.jsonl", {"preset": "paper"}
    row = _sample_row("m0")

    def killed(*_):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr("os.replace", killed)  # killed before the rename
        with pytest.raises(KeyboardInterrupt):
            resume.append_rows(path, config, [row])
    assert not path.exists()
    resume.append_rows(path, config, [row])
    resume.append_rows(path, config, [row])
    assert read_jsonl(path) == [{"config": config}, row.to_json(), row.to_json()]


@pytest.mark.parametrize("torn", ["row", "header"])
def test_rows_appended_after_a_torn_last_line_are_kept(tmp_path, torn):
    from tandem_eval.core import resume

    path, config = tmp_path / "b.partial.jsonl", {"preset": "paper"}
    resume.write_partial(path, config, [_sample_row("m0"), _sample_row("m1")])
    whole = path.read_text(encoding="utf-8")
    cut = whole.index("\n") // 2 if torn == "header" else len(whole) - 20  # a kill mid-header, or mid-row m1
    path.write_text(whole[:cut], encoding="utf-8")
    resume.append_rows(path, config, [_sample_row("m2")])
    kept = ["m2"] if torn == "header" else ["m0", "m2"]
    assert sorted(resume.read_partial(path, config, n=1, overwrite=False)) == kept
    assert all(line.strip() for line in path.read_text(encoding="utf-8").splitlines())


def test_a_kill_while_resume_rewrites_the_partial_file_loses_no_finished_problem(tiny_dir, mini, tmp_path,
                                                                                  monkeypatch):
    from tandem_eval.core.rows import SampleRow

    args = ["--model", str(tiny_dir), "--benchmarks", str(mini), "--preset", "paper", *SMALL, "--save-every", "2"]
    out = tmp_path / "k"
    real, calls = runner._generate, []

    def dies_on_the_second_chunk(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **k)

    with monkeypatch.context() as m:
        m.setattr(runner, "_generate", dies_on_the_second_chunk)
        assert eval_solo.main([*args, "--out-dir", str(out)]) == 130
    partial = out / "mini.partial.jsonl"
    before = partial.read_bytes()
    assert len(read_jsonl(partial)) == 1 + 2 * 2  # the header and two finished problems

    real_to_json, written = SampleRow.to_json, []

    def killed_mid_rewrite(row):
        written.append(row)
        if len(written) == 2:
            raise KeyboardInterrupt
        return real_to_json(row)

    with monkeypatch.context() as m:
        m.setattr(SampleRow, "to_json", killed_mid_rewrite)
        assert eval_solo.main([*args, "--out-dir", str(out)]) == 130
    assert partial.read_bytes() == before
    assert eval_solo.main([*args, "--out-dir", str(out)]) == 0
    assert len(read_jsonl(out / "mini.samples.jsonl")) == 5 * 2


def test_a_partial_file_of_another_preset_is_refused(tiny_dir, mini, tmp_path):
    out = tmp_path / "p"
    out.mkdir()
    (out / "mini.partial.jsonl").write_text(json.dumps({"config": {"preset": "ours"}}) + "\n")
    code = eval_solo.main(["--model", str(tiny_dir), "--benchmarks", str(mini), "--out-dir", str(out), "--preset",
                           "paper", *SMALL])
    assert code == 2
    assert (out / "mini.partial.jsonl").read_text() == json.dumps({"config": {"preset": "ours"}}) + "\n"


def test_paper_preset_gives_vllm_engines_the_releases_context(tiny_dir):
    for preset, expected in (("paper", 4096), ("ours", None)):
        args = tool.parser(eval_solo).parse_args(["--model", str(tiny_dir), "--out-dir", "o", "--preset", preset])
        assert EvalRun.from_args(args).engine.max_model_len == expected


def test_paper_legibility_scores_the_text_tokens_and_drops_what_the_release_drops(tiny_dir):
    from tandem.models.loading import load_tokenizer
    from tandem_eval.analysis.legibility import legibility

    tok = load_tokenizer(tiny_dir)
    eos = tok.eos_token_id
    rows = [{"benchmark": b, "problem_id": f"p{i}", "sample": 0, "prompt_ids": [5, 6, 7], "response_ids": resp}
            for i, (b, resp) in enumerate([("a", [20, 21, 22, eos]), ("a", [30, 31]), ("b", [40, 41, 42, 43, eos])])]
    paper = legibility(str(tiny_dir), rows, 8, "cpu", "float64", None, preset="paper")
    without_eos = [{**r, "response_ids": [t for t in r["response_ids"] if t != eos]} for r in rows]
    ours = legibility(str(tiny_dir), without_eos, 8, "cpu", "float64", None, preset="ours")
    assert paper["mean_ce"] == pytest.approx(ours["mean_ce"], rel=1e-12) and paper["n_scored"] == 3
    assert paper["macro_ce"] == pytest.approx((paper["by_benchmark"]["a"] + paper["by_benchmark"]["b"]) / 2)


def test_paper_legibility_drops_responses_reaching_4096_minus_8(tmp_path):
    from tandem_app.zoo import TinyModelConfig, build_tiny
    from tandem_eval.analysis.legibility import legibility

    model = build_tiny(tmp_path / "t4k", seed=0, cfg=TinyModelConfig(max_position_embeddings=4096))

    def row(length):  # prompt (3) + response = length tokens, no EOS
        return {"benchmark": "a", "problem_id": f"p{length}", "sample": 0, "prompt_ids": [5, 6, 7],
                "response_ids": [10 + i % 400 for i in range(length - 3)]}

    paper = legibility(str(model), [row(4087), row(4088)], 2, "cpu", "float32", None, preset="paper")
    assert (paper["n_scored"], paper["n_dropped"]) == (1, 1)
    ours = legibility(str(model), [row(4087), row(4088)], 2, "cpu", "float32", None, preset="ours")
    assert (ours["n_scored"], ours["n_dropped"]) == (2, 0)
