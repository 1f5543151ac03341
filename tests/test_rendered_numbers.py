"""Every number in a result block of README.md and model_spec/RESULTS.md is what `scripts/render_results.py`
renders from its record in `model_spec/results/` (issue 63, item 4: numbers are generated, not copied).

Fails on a block that differs from its render, on a block with no result file, on a result file
without its commit or machine, and on a block left open; the check itself is shown to fail on one
edited digit. `scripts/record_results.py` is checked on made-up run folders.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tandem.errors import TandemError
from tandem.io.result_record import missing_keys, read_record

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "model_spec" / "results"


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"_script_{name}", REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # before it runs: its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


render = _script("render_results")
recorder = _script("record_results")


def test_every_block_of_the_documents_is_what_its_record_renders():
    assert render.run(REPO, list(render.DOCS), write=False) == []


def test_every_results_section_with_typed_digits_says_so():
    """A section of RESULTS that reports numbers (every heading but the predictions') either renders them from a
    record or opens with a label, `(Typed, ...` or `(Regenerated, ...`, naming what is typed and where the
    regenerated block is: a reader never takes a typed digit for a generated one."""
    text = (REPO / "model_spec" / "RESULTS.md").read_text(encoding="utf-8")
    parts = re.split(r"(?m)^(#{2,3} .*)$", text)
    unlabelled = []
    for heading, body in zip(parts[1::2], parts[2::2]):
        typed = re.search(r"[-+]?\d\.\d{2,}", render.BLOCK.sub("", body))
        labelled = re.search(r"(?m)^\((Typed|Regenerated)\b", body) or render.BLOCK.search(body)
        if "prediction" not in heading and typed and not labelled:
            unlabelled.append(heading)
    assert not unlabelled, f"sections with typed digits, no block and no (Typed/Regenerated label: {unlabelled}"


def _typed_decimals_no_block_holds(text: str) -> dict[str, list[str]]:
    """{heading: its typed decimals that no block of `text` holds}, over the results sections that carry no label
    (those that render their numbers): a digit in their prose must be one a block printed. A digit inside double
    quotes is a quoted sentence (a withdrawn one), not a measurement."""
    blocks = " ".join(m.group(0) for m in render.BLOCK.finditer(text))
    parts = re.split(r"(?m)^(#{2,3} .*)$", text)
    found = {}
    for heading, body in zip(parts[1::2], parts[2::2]):
        if "prediction" in heading or re.search(r"(?m)^\((Typed|Regenerated)\b", body):
            continue
        prose = re.sub(r'"[^"\n]*"', "", render.BLOCK.sub("", body))
        missing = [d for d in re.findall(r"\d+\.\d{2,}", prose) if d not in blocks]
        if missing:
            found[heading] = missing
    return found


def test_every_digit_a_rendered_section_types_is_one_its_blocks_printed():
    assert _typed_decimals_no_block_holds((REPO / "model_spec" / "RESULTS.md").read_text(encoding="utf-8")) == {}


def test_the_typed_digit_check_fails_on_a_digit_no_block_printed():
    text = (REPO / "model_spec" / "RESULTS.md").read_text(encoding="utf-8")
    heading = "### The last typed readings: results (2026-12-07)"
    edited = text.replace(heading, heading + "\n\nThe student reached 0.9137 on every seed.", 1)
    assert _typed_decimals_no_block_holds(edited) == {heading: ["0.9137"]}
    quoted = text.replace(heading, heading + '\n\nWithdrawn: "it reached 0.9137".', 1)
    assert _typed_decimals_no_block_holds(quoted) == {}


def test_the_readmes_quick_demo_numbers_are_rendered_blocks_naming_the_cpu_and_the_commit():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert {"quick_demo", "quick_demo:gains"} <= set(render.blocks(readme))
    record = read_record(RESULTS / "quick_demo.json")
    table = render.render_block("quick_demo", REPO)
    assert record["machine"]["cpu_model"] in table and record["commit"]["sha"][:7] in table
    assert len(record["numbers"]["seeds"]) >= 3 and f"{len(record['numbers']['seeds'])} seeds" in table
    # the quick demo's section holds no accuracy outside the blocks (a number typed by hand)
    quick = readme.split("## A first result")[1].split("The full demo")[0]
    outside = render.BLOCK.sub("", quick)
    assert re.findall(r"\b0\.\d{2,}", outside) == []


@pytest.mark.parametrize("path", sorted(RESULTS.glob("*.json")), ids=lambda p: p.name)
def test_every_result_file_names_its_commit_and_machine(path):
    record = read_record(path)
    assert re.fullmatch(r"[0-9a-f]{40}", record["commit"]["sha"]) and isinstance(record["commit"]["dirty"], bool)
    machine = record["machine"]
    assert machine["cpu_model"] and machine["platform"]
    # a lent GPU machine's scripts state its GPU, not its cores; a CPU record states the cores its runs had
    assert machine.get("gpu") or machine["cores"] >= 1
    assert record["command"].startswith("python scripts/record_results.py ")


def _copy(tmp_path: Path) -> Path:
    """A root holding the documents and their records, to edit."""
    shutil.copytree(RESULTS, tmp_path / "model_spec" / "results")
    for doc in render.DOCS:
        if (REPO / doc).is_file():
            shutil.copy(REPO / doc, tmp_path / doc)
    return tmp_path


def test_one_edited_digit_in_a_rendered_block_fails_the_check_and_write_restores_it(tmp_path, capsys):
    root = _copy(tmp_path)
    readme = (root / "README.md").read_text(encoding="utf-8")
    block = next(render.BLOCK.finditer(readme), None)
    digit = re.search(r"\| (\d)\.(\d)", block.group(0))  # the first accuracy of the table
    start = block.start() + digit.start(2)
    edited = readme[:start] + str((int(readme[start]) + 1) % 10) + readme[start + 1:]
    (root / "README.md").write_text(edited, encoding="utf-8")
    assert render.main(["--check", "--root", str(root)]) == 1
    assert f"README.md: results:{block.group('spec')} differs from its render" in capsys.readouterr().err
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "render_results.py"), "--check", "--root", str(root)],
                          capture_output=True, text=True)
    assert done.returncode == 1 and "differs from its render" in done.stderr
    assert render.main(["--write", "--root", str(root)]) == 0
    assert (root / "README.md").read_text(encoding="utf-8") == readme


def test_a_block_without_a_result_file_fails(tmp_path):
    (tmp_path / "README.md").write_text("a\n<!-- results:nothing -->\n<!-- /results:nothing -->\n")
    problems = render.run(tmp_path, ["README.md"], write=True)
    assert len(problems) == 1 and "results:nothing" in problems[0] and "no such result file" in problems[0]
    assert render.main(["--check", "--root", str(tmp_path), "--docs", "README.md"]) == 1


@pytest.mark.parametrize("key", ["commit", "machine"])
def test_a_result_file_without_its_commit_or_machine_fails(tmp_path, key):
    record = json.loads((RESULTS / "quick_demo.json").read_text())
    del record[key]
    (tmp_path / "model_spec" / "results").mkdir(parents=True)
    (tmp_path / "model_spec" / "results" / "quick_demo.json").write_text(json.dumps(record))
    (tmp_path / "README.md").write_text("<!-- results:quick_demo -->\n<!-- /results:quick_demo -->\n")
    problems = render.run(tmp_path, ["README.md"], write=False)
    assert len(problems) == 1 and f"lacks {key}" in problems[0]
    assert missing_keys({**record, key: {}})  # an empty stamp is no stamp either


def test_a_block_left_open_or_of_an_unknown_view_fails(tmp_path):
    shutil.copytree(RESULTS, tmp_path / "model_spec" / "results")
    (tmp_path / "README.md").write_text("<!-- results:quick_demo -->\nno close\n"
                                        "<!-- results:quick_demo:nosuchview -->\n<!-- /results:quick_demo:nosuchview -->\n")
    problems = render.run(tmp_path, ["README.md"], write=False)
    assert any("results:quick_demo is not closed" in p for p in problems)
    assert any("no renderer for kind 'quick-demo', view 'nosuchview'" in p for p in problems)


def test_numbers_over_seeds_are_the_mean_and_the_range():
    assert render.over_seeds([0.5, 0.75, 1.0]) == "0.750 (0.500 to 1.000)"
    assert render.over_seeds([-0.02, 0.01], signed=True) == "-0.005 (-0.020 to +0.010)"
    assert render.over_seeds([0.25]) == "0.250"


def test_a_second_renderer_or_kind_under_one_name_is_refused():
    with pytest.raises(ValueError, match="twice"):
        render.renderer("quick-demo", "table")(lambda record, path: "")
    with pytest.raises(ValueError, match="twice"):
        recorder.kind("quick-demo")(lambda runs: None)


def _fake_run(folder: Path, seed: int, solved: int) -> Path:
    """A finished quick-demo folder: its record and evaluation (ten problems, four samples each)."""
    def model(k: int, js: float) -> dict:
        return {"solo_counts": [k] * 10, "solo_n": 4, "solo_acc": k / 4, "handoff_counts": [k] * 10, "handoff_n": 4,
                "handoff_acc": k / 4, "drift_js_vs_base": js, "solo_terse_share": 0.5}

    res = {"base": model(solved, 0.01), "grpo": model(solved + 1, 0.1), "tandem": model(solved + 1, 0.02),
           "_meta": {"n_problems": 10, "eval": {"n_samples": 4}}}
    cfg = {"seed": seed, "quick": True, "threads": 0, "model": {"num_hidden_layers": 2, "hidden_size": 64},
           "task": {"min_steps": 2, "max_steps": 2}, "sft": {"steps": 800}, "train": {"steps": 12}}
    (folder / "eval").mkdir(parents=True)
    (folder / "eval" / "results.json").write_text(json.dumps(res))
    (folder / "demo_config.json").write_text(json.dumps(cfg))
    return folder


def test_the_recorder_stamps_each_seeds_numbers_and_the_renderer_reads_them(tmp_path):
    runs = [_fake_run(tmp_path / f"seed-{s}", s, k) for s, k in ((0, 1), (1, 2))]
    out = tmp_path / "model_spec" / "results" / "fake.json"
    assert recorder.main(["quick-demo", "--runs", *map(str, runs), "--out", str(out)]) == 0
    record = read_record(out)
    assert record["kind"] == "quick-demo" and record["commit"]["sha"] and record["machine"]["cores"] >= 1
    assert record["runs"] == [f"tandem-rlvr demo --quick --seed {s} --out {r}" for s, r in enumerate(runs)]
    assert record["numbers"]["seeds"]["1"]["numbers"]["base solo acc"] == 0.5
    assert record["numbers"]["preset"]["n_problems"] == 10
    table = render.quick_demo_table(record, "model_spec/results/fake.json")
    assert "| base (SFT, pre-RL) | 0.375 (0.250 to 0.500) |" in table and "2 seeds (0, 1)" in table
    gains = render.quick_demo_gains(record, "model_spec/results/fake.json")
    assert "GRPO +0.250 (+0.250 to +0.250)" in gains and "3. TRL drifts less from the base: 2 of 2" in gains


def test_the_recorder_refuses_a_seed_twice_and_a_folder_that_is_no_run(tmp_path, capsys):
    run = _fake_run(tmp_path / "a", 0, 1)
    twice = _fake_run(tmp_path / "b", 0, 2)
    with pytest.raises(TandemError, match="seed 0 is recorded twice"):
        recorder.record("quick-demo", [run, twice], "cmd")
    assert recorder.main(["quick-demo", "--runs", str(tmp_path), "--out", str(tmp_path / "x.json")]) == 2
    assert "a finished run folder" in capsys.readouterr().err and not (tmp_path / "x.json").exists()


def _fake_partner_run(folder: Path, seed: int, solved: dict[str, tuple[int, int, int]]) -> Path:
    """A finished `demo --partner` seed folder: per senior, problems (of 4) solved alone, in handoff to the
    base and in handoff to the weaker junior, each problem 1 sample, so accuracies are quarters."""
    def row(solo: int, handoff: int, weak: int) -> dict:
        counts = lambda k: [1] * k + [0] * (4 - k)  # noqa: E731 - one line per mode
        return {"solo_acc": solo / 4, "solo_counts": counts(solo), "solo_n": 1, "handoff_acc": handoff / 4,
                "handoff_counts": counts(handoff), "handoff_n": 1, "weak_handoff_acc": weak / 4,
                "weak_handoff_counts": counts(weak), "weak_handoff_n": 1, "drift_js_vs_base": 0.01 * solo,
                "junior_ce": 0.1, "solo_terse_share": 1.0 if solo < 4 else 0.0}
    (folder / "partner-eval").mkdir(parents=True)
    for name, (solo, handoff, weak) in solved.items():
        (folder / "partner-eval" / f"{name}.json").write_text(json.dumps(row(solo, handoff, weak)))
    (folder / "demo_config.json").write_text(json.dumps({"seed": seed, "quick": False, "threads": 1}))
    return folder


def test_the_partner_record_pairs_each_senior_with_grpo_and_trl_and_the_checks_count_the_seeds(tmp_path):
    # seed 0: the sync junior hands off below TRL (2 vs 4 problems); seed 1: above it (TRL's 2 vs 3)
    runs = [_fake_partner_run(tmp_path / "seed-0", 0, {"grpo": (3, 1, 0), "tandem": (4, 4, 2), "sync": (3, 2, 1)}),
            _fake_partner_run(tmp_path / "seed-1", 1, {"grpo": (3, 1, 0), "tandem": (4, 2, 2), "sync": (4, 3, 2)})]
    record = recorder.record("partner", runs, "cmd")
    sync0 = record["numbers"]["seeds"]["0"]["sync"]
    assert sync0["handoff_minus_tandem"][0] == -0.5 and sync0["solo_minus_grpo"][0] == 0.0
    assert sync0["weak_handoff_minus_tandem"][0] == -0.25
    assert record["runs"][0] == f"tandem-rlvr demo --seeds 0 --partner sync --out {tmp_path} --threads 1"
    record["made_at"], record["machine"] = [], {"cpu_model": "a CPU", "cores": 2, "threads": 1}
    table = render.notebook_table(record, "x.json")
    assert "| TRL, `sync:20` junior (0, 1) | 0.750 / 1.000; 0.875 | 0.500 / 0.750; 0.625 |" in table
    assert "-0.500 ± 0.289, +0.250 ± 0.250; -0.125 ± 0.375" in table  # the seeds disagree: a wide interval
    checks = render.notebook_checks(record, "x.json")
    assert "TRL, `sync:20` junior hands off to the base below TRL: 1 of 2 seeds" in checks
    assert "TRL, `sync:20` junior solo below TRL: 1 of 2 seeds" in checks
    assert "weaker" not in checks  # a senior that did not run is not counted as failing or holding
    assert "TRL, `sync:20` junior 0.50" in checks and "TRL 0.00" in checks



def test_the_partner_checks_count_issue_48s_arms_and_the_release_denominator_per_seed(tmp_path):
    # seed 0: GRPO + transfer solves all alone (verbose) and hands off +0.5 above GRPO: the split holds;
    # seed 1: it stays terse yet hands off +0.25 above GRPO: the split fails. The release's denominator: as TRL on
    # seed 0, 0.25 lower in handoff on seed 1.
    runs = [_fake_partner_run(tmp_path / "seed-0", 0, {"grpo": (3, 1, 0), "tandem": (4, 4, 2), "grpo_transfer": (4, 3, 0),
                                                       "all_tokens": (4, 4, 2), "grpo_answer_score": (4, 4, 1)}),
            _fake_partner_run(tmp_path / "seed-1", 1, {"grpo": (3, 1, 0), "tandem": (4, 4, 2), "grpo_transfer": (3, 2, 0),
                                                       "all_tokens": (4, 3, 2), "grpo_answer_score": (3, 1, 0)})]
    record = recorder.record("partner", runs, "cmd") | {"made_at": [], "machine": {"cpu_model": "a CPU", "cores": 2, "threads": 1}}
    checks = render.notebook_checks(record, "x.json")
    assert "hands off at least 0.1 above GRPO exactly where its terse share is below 0.5: 1 of 2 seeds" in checks
    assert "GRPO + the project's variant (all three rules) solo not below GRPO by more than 0.01: 2 of 2 seeds" in checks
    assert "(`all_response_tokens`) within 0.03 of TRL solo and in handoff to the base: 1 of 2 seeds" in checks
    assert "(`all_response_tokens`) terse share below 0.2: 2 of 2 seeds" in checks
    assert "GRPO + score (answer) hands off at least 0.1 above GRPO: 1 of 2 seeds" in checks
    assert "GRPO + score (answer) terse share below 0.4: 1 of 2 seeds" in checks
    assert "GRPO + score (answer) hands off within 0.1 of TRL: 1 of 2 seeds" in checks
    assert "| TRL, the release's loss denominator (`all_response_tokens`) (0, 1) | 1.000 / 1.000; 1.000 |" in render.notebook_table(record, "x.json")


def test_a_repeated_partner_record_counts_the_numbers_equal_to_the_last_bit_and_names_the_earlier_record(tmp_path):
    earlier_runs = [_fake_partner_run(tmp_path / "a" / "seed-0", 0, {"grpo": (3, 1, 0), "tandem": (4, 4, 2)})]
    earlier = recorder.record("partner", earlier_runs, "cmd")
    earlier["made_at"] = ["abc1234"]
    earlier_path = tmp_path / "earlier.json"
    earlier_path.write_text(json.dumps(earlier))
    # retrained: GRPO identical, TRL one handoff sample different; a senior only the new record holds is not compared;
    # GRPO's paired difference to TRL moves with TRL, so only each senior's own measurements are compared
    runs = [_fake_partner_run(tmp_path / "b" / "seed-0", 0, {"grpo": (3, 1, 0), "tandem": (4, 3, 2), "sync": (3, 2, 1)})]
    record = recorder.record("partner", runs, "cmd", repeats=earlier_path)
    rep = record["numbers"]["repeat_of"]
    assert rep["record"] == "earlier.json" and rep["made_at"] == ["abc1234"]  # an absolute path: its name only
    assert set(rep["seeds"]["0"]) == {"grpo", "tandem"}
    grpo, trl = rep["seeds"]["0"]["grpo"], rep["seeds"]["0"]["tandem"]
    assert grpo["equal"] == grpo["compared"] and grpo["largest_difference"] == 0.0
    assert trl["equal"] < trl["compared"] and trl["largest_difference"] == 0.25
    record["made_at"], record["machine"] = [], {"cpu_model": "a CPU", "cores": 2, "threads": 1}
    text = render.partner_repeat(record, "x.json")
    assert grpo["compared"] == len(recorder.PARTNER_FIELDS) and trl["equal"] == trl["compared"] - 1
    assert "| 0 | GRPO | 6 of 6 | 0 |" in text and "| 0 | TRL | 5 of 6 | 0.25 |" in text
    assert "Every compared number equal on 0 of 1 seeds." in text
    with pytest.raises(TandemError, match="compares partner and demo records; 'leak' is not one"):
        recorder.record("leak", [tmp_path / "b"], "cmd", repeats=earlier_path)
    with pytest.raises(TandemError, match="no repeat_of"):
        render.partner_repeat(earlier | {"machine": record["machine"]}, "x.json")


def _fake_demo_run(folder: Path, seed: int, solved: int) -> Path:
    """A finished default-budget demo seed folder (`_fake_run`'s evaluation, without `--quick`)."""
    _fake_run(folder, seed, solved)
    (folder / "demo_config.json").write_text(json.dumps({"seed": seed, "quick": False, "threads": 1}))
    return folder


def test_a_resumed_demo_record_compares_every_number_of_its_seed_table_with_the_earlier_one(tmp_path):
    earlier = recorder.record("demo", [_fake_demo_run(tmp_path / "a" / "seed-0", 0, 1)], "cmd") | {"made_at": ["abc1234"]}
    (tmp_path / "earlier.json").write_text(json.dumps(earlier))
    same = recorder.record("demo", [_fake_demo_run(tmp_path / "b" / "seed-0", 0, 1)], "cmd", repeats=tmp_path / "earlier.json")
    n = len(earlier["numbers"]["seeds"]["0"]["numbers"])
    assert same["numbers"]["repeat_of"]["seeds"]["0"]["demo"] == {"compared": n, "equal": n, "largest_difference": 0.0}
    # one problem more solved by every model: the accuracies move, the differences between models do not
    moved = recorder.record("demo", [_fake_demo_run(tmp_path / "c" / "seed-0", 0, 2)], "cmd", repeats=tmp_path / "earlier.json")
    got = moved["numbers"]["repeat_of"]["seeds"]["0"]["demo"]
    assert 0 < got["equal"] < n and got["largest_difference"] == 0.25
    moved["made_at"], moved["machine"] = [], {"cpu_model": "a CPU", "cores": 2, "threads": 1}
    text = render.partner_repeat(moved, "x.json")
    assert f"| 0 | the seed table (base, GRPO, TRL) | {got['equal']} of {n} | 0.25 |" in text
    assert "Every compared number equal on 0 of 1 seeds." in text and text.startswith("The seed table both records hold")
    partner = recorder.record("partner", [_fake_partner_run(tmp_path / "d" / "seed-0", 0, {"grpo": (3, 1, 0)})], "cmd")
    (tmp_path / "partner.json").write_text(json.dumps(partner))
    with pytest.raises(TandemError, match="a record of kind 'partner'; give a demo record"):
        recorder.record("demo", [tmp_path / "b" / "seed-0"], "cmd", repeats=tmp_path / "partner.json")


def _fake_leak_result(handoff: list[int], clean: list[tuple[int, int]], prefix: list[int], visible: float) -> dict:
    """`evaluate_transfer`'s result on 4 problems of 2 samples (the first gold undetermined) at one fraction."""
    rates = {"visible_rate": visible, "undetermined_rate": 0.25, "hit_budget_rate": 0.0, "junior_final_rate": 1.0}
    return {"n": 2, "handoff_counts": handoff, "handoff_clean": [list(c) for c in clean], "determined": [False, True, True, True],
            "prefix": {"0.3": {"counts": [[2, c] for c in prefix], "mean_cut_fraction": 0.3}},
            "handoff_rates": rates, "solo_rates": rates}


def test_the_leak_record_scores_each_arm_and_pair_and_the_checks_count_the_seeds(tmp_path):
    grpo = _fake_leak_result([1, 1, 0, 2], [(0, 0), (2, 1), (2, 0), (2, 2)], [0, 1, 1, 1], visible=0.1)
    tandem = _fake_leak_result([2, 2, 2, 2], [(0, 0), (0, 0), (1, 0), (0, 0)], [2, 2, 2, 2], visible=1.0)
    worse = _fake_leak_result([2, 2, 2, 2], [(0, 0)] * 4, [0, 0, 0, 0], visible=0.5)  # seed 1: prefix below GRPO's
    (tmp_path / "leak.json").write_text(json.dumps({"seeds": {"0": {"grpo": grpo, "tandem": tandem},
                                                              "1": {"grpo": grpo, "tandem": worse}}, "threads": 1}))
    for s in (0, 1):
        _fake_run(tmp_path / f"seed-{s}", s, 1)  # its eval: GRPO's terse share 0.5
    record = recorder.record("leak", [tmp_path], "cmd")
    arm = record["numbers"]["seeds"]["0"]["arms"]["tandem"]["measures"]
    assert arm["handoff"] == [1.0, 4] and arm["handoff, gold determined"] == [1.0, 3]
    assert arm["handoff, no leak"] == [0.0, 1]  # one problem kept a clean sample
    assert record["numbers"]["seeds"]["1"]["arms"]["tandem"]["measures"]["handoff, no leak"] == [None, 0]
    assert record["numbers"]["paired"]["tandem-grpo"]["prefix 0.3"]["0"] == [0.625, pytest.approx(0.125), 4]
    assert record["runs"] == [f"python -m tandem_app.experiments.leak_demo --out {tmp_path} --seeds 0 1 --threads 1"]
    record["made_at"], record["machine"] = [], {"cpu_model": "a CPU", "cores": 2, "threads": 1}
    assert "| handoff, no leak | TRL | 0.000 (1) | — (0) |" in render.leak_table(record, "x.json")
    assert "| TRL − GRPO | prefix 0.3 | +0.625 ± 0.125 (4) | -0.375 ± 0.125 (4) |" in render.leak_paired(record, "x.json")
    checks = render.leak_checks(record, "x.json")
    assert "determined handoffs on 1 of 2 (TRL's: 1.000 / 0.500" in checks
    # the largest budget share over every seed, arm and mode, not the largest list of shares
    record["numbers"]["seeds"]["0"]["arms"]["grpo"]["rates"]["solo budget hit"] = 0.03
    record["numbers"]["seeds"]["1"]["arms"]["tandem"]["rates"]["handoff budget hit"] = 0.5
    assert "on any seed: 0.500" in render.leak_checks(record, "x.json")
    assert "at least 0.9 on 0 of 2" in checks  # GRPO never mostly terse: the prefix condition is not tested
    for s in (0, 1):
        (tmp_path / f"seed-{s}" / "eval" / "results.json").write_text(
            (tmp_path / f"seed-{s}" / "eval" / "results.json").read_text().replace('"solo_terse_share": 0.5', '"solo_terse_share": 1.0'))
    checks = render.leak_checks(recorder.record("leak", [tmp_path], "cmd") | {"made_at": [], "machine": record["machine"]}, "x")
    assert "at least 0.9 on 2 of 2, and TRL − GRPO prefix transfer positive at every fraction on 1 of those 2" in checks


def _prefix_arms() -> tuple[dict, dict, dict]:
    """Leak results of GRPO, TRL and an arm whose prefixes the base continues half as often as TRL's."""
    return (_fake_leak_result([1, 1, 0, 2], [(0, 0)] * 4, [0, 1, 1, 1], visible=0.1),
            _fake_leak_result([2, 2, 2, 2], [(0, 0)] * 4, [2, 2, 2, 2], visible=1.0),
            _fake_leak_result([2, 2, 2, 2], [(0, 0)] * 4, [1, 1, 1, 1], visible=1.0))


def _leak_record(folder: Path, seeds: dict) -> dict:
    """The leak record of a made-up `leak_demo --out FOLDER` over the given arms per seed, stamped for rendering."""
    (folder / "leak.json").write_text(json.dumps({"seeds": seeds, "threads": 1}))
    for s in seeds:
        _fake_run(folder / f"seed-{s}", int(s), 1)
    return recorder.record("leak", [folder], "cmd") | {"made_at": [], "machine": {"cpu_model": "a CPU", "cores": 2, "threads": 1}}


def test_the_score_arms_prefix_checks_count_each_seed_within_their_bounds(tmp_path):
    grpo, tandem, far = _prefix_arms()
    record = _leak_record(tmp_path, {"0": {"grpo": grpo, "tandem": tandem, "score": tandem, "grpo_score": grpo},
                                     "1": {"grpo": grpo, "tandem": tandem, "score": far, "grpo_score": tandem}})
    checks = render.leak_score_checks(record, "x.json")
    assert "within 0.04 at every prefix fraction on 1 of 2 (prefix 0.3: +0.000 / -0.500)" in checks
    assert "GRPO + score − GRPO at f = 0.3: +0.000 / +0.625, within 0.05 on seed 0." in checks
    del record["numbers"]["paired"]["score-tandem"]
    with pytest.raises(TandemError, match="no score-tandem"):
        render.leak_score_checks(record, "x.json")


def test_issue_48s_prefix_checks_count_each_pair_per_seed(tmp_path):
    grpo, tandem, far = _prefix_arms()
    # seed 0: the score arm transfers as TRL, the transfer arm as GRPO; seed 1 the other way round
    record = _leak_record(tmp_path, {
        "0": {"grpo": grpo, "tandem": tandem, "grpo_answer_score": tandem, "grpo_transfer": grpo, "transfer": tandem},
        "1": {"grpo": grpo, "tandem": tandem, "grpo_answer_score": grpo, "grpo_transfer": tandem, "transfer": far}})
    checks = render.leak_transfer_checks(record, "x.json")
    assert "GRPO + score (answer) − GRPO at f = 0.3: +0.625 / +0.000, at least +0.1 on 1 of 2;" in checks
    assert "GRPO + the project's variant − GRPO at f = 0.3: +0.000 / +0.625, at least +0.05 on seed 1;" in checks
    assert "TRL + the project's variant − TRL within 0.03 at every prefix fraction on 1 of 2." in checks
    del record["numbers"]["paired"]["transfer-tandem"]
    with pytest.raises(TandemError, match="needs the pairs"):
        render.leak_transfer_checks(record, "x.json")


def test_the_majority_record_and_its_checks_count_each_seed(tmp_path):
    seeds = {"0": {"base": {"pass@1": 0.6, "maj@8": 0.8}, "grpo": {"pass@1": 0.9, "maj@8": 0.9},
                   "tandem": {"pass@1": 0.95, "maj@8": 0.97}},
             "1": {"base": {"pass@1": 0.6, "maj@8": 0.6}, "grpo": {"pass@1": 0.8, "maj@8": 0.85},  # GRPO's vote gains more
                   "tandem": {"pass@1": 0.95, "maj@8": 0.85}}}
    (tmp_path / "majority.json").write_text(json.dumps({"k": 8, "seeds": seeds, "differences": {}, "threads": 1}))
    record = recorder.record("majority", [tmp_path], "cmd")
    assert record["runs"] == [f"python -m tandem_app.experiments.majority_demo --out {tmp_path} --seeds 0 1 --k 8 --threads 1"]
    record["made_at"], record["machine"] = [], {"cpu_model": "a CPU", "cores": 2, "threads": 1}
    table = render.majority_table(record, "x.json")
    assert "| TRL | 0.950 / 0.950 | 0.970 / 0.850 | +0.020 / -0.100 | +0.035 ± 0.035, 95% t(1)" in table
    checks = render.majority_checks(record, "x.json")
    assert "above every trained senior's on 1 of 2; TRL's Maj@8 above GRPO's on 1 of 2." in checks
    for s, maj in (("0", 0.9), ("1", 0.8)):  # at GRPO's on seed 0 (counts), below it on seed 1
        record["numbers"]["seeds"][s]["grpo_answer_score"] = {"pass@1": 0.9, "maj@8": maj}
    assert ("TRL's Maj@8 above GRPO's on 1 of 2; GRPO + score (answer)'s Maj@8 at least GRPO's on 1 of 2."
            in render.majority_checks(record, "x.json"))
    for s, (p1, maj) in (("0", (0.95, 0.99)), ("1", (0.95, 0.97))):  # the vote adds 0.04 on seed 0, 0.02 on seed 1
        record["numbers"]["seeds"][s]["score"] = {"pass@1": p1, "maj@8": maj}
    assert "TRL + partner score (`solution`)'s Maj@8 within 0.03 of its pass@1 on 1 of 2." in render.majority_checks(record, "x.json")


def test_the_distill_record_and_its_checks_count_each_student(tmp_path):
    def row(after: float, gain: float, se: float, terse: tuple[float, float]) -> dict:
        return {"n_traces": 600, "trace_tokens": 48000, "traces_correct_fraction": 0.9, "teacher_terse": terse[0],
                "accuracy_before": 0.6, "accuracy_after": after, "gain": gain, "gain_se": se, "student_terse": terse[1],
                "after_counts": [], "n_samples": 4}
    got = {"seeds": {"0": {"grpo": row(0.9, 0.3, 0.02, (1.0, 1.0)), "tandem": row(0.95, 0.35, 0.02, (0.0, 0.0))},
                     "1": {"grpo": row(0.8, 0.1, 0.03, (0.8, 0.5)), "tandem": row(0.75, 0.15, 0.02, (0.0, 0.1))}},
           "pairs": {"tandem - grpo": {"per_seed": {"0": [0.05, 0.01], "1": [-0.05, 0.02]}}},
           "protocol": {"threads": 1}}
    (tmp_path / "distill.json").write_text(json.dumps(got))
    record = recorder.record("distill", [tmp_path], "cmd")
    assert record["runs"] == [f"python -m tandem_app.experiments.distill_demo --demo DEMO --out {tmp_path} --seeds 0 1 "
                              "--teachers grpo tandem"] and record["machine"]["threads"] == 1
    record["made_at"], record["machine"] = [], {"cpu_model": "a CPU", "cores": 2, "threads": 1}
    table = render.distill_table(record, "x.json")
    assert "| TRL | 600 / 600 | 0.900 / 0.900 | 0.00 / 0.00 | 0.600 / 0.600 | 0.950 / 0.750 | +0.350 ± 0.020, +0.150 ± 0.020 |" in table
    assert "| TRL − GRPO | +0.050 ± 0.010, -0.050 ± 0.020 | +0.000 ± 0.050" in table
    checks = render.distill_checks(record, "x.json")
    # seed 1's GRPO student gains 0.1 at SE 0.03 (3.3 SE) and writes 0.5 terse from 0.8 terse traces
    assert "TRL's student above GRPO's on 1 of 2; students at least 6 paired SE above the base: 3 of 4" in checks
    assert "within 0.15 of their teacher's traces: 3 of 4" in checks
    assert "TRL + score's student" not in checks  # no score teacher ran: prediction 24's count is not printed
    record["numbers"]["pairs"]["score - tandem"] = {"0": [0.02, 0.01], "1": [-0.06, 0.02]}
    assert "TRL + score's student within 0.05 of TRL's: 1 of 2 (+0.020 / -0.060)." in render.distill_checks(record, "x.json")
    assert "GRPO + score (answer)'s student" not in render.distill_checks(record, "x.json") and "RLT's student" not in checks
    record["numbers"]["pairs"] |= {"grpo_answer_score - grpo": {"0": [0.03, 0.01], "1": [-0.01, 0.02]},
                                   "transfer - tandem": {"0": [0.031, 0.01], "1": [-0.03, 0.02]}}
    for s, gain in (("0", -0.45), ("1", -0.15)):  # RLT's student collapses on seed 0 only
        record["numbers"]["seeds"][s]["rlt"] = row(0.2, gain, 0.03, (0.0, 0.0))
    checks = render.distill_checks(record, "x.json")
    assert "GRPO + score (answer)'s student above GRPO's: 1 of 2 (+0.030 / -0.010)." in checks
    assert "TRL + the project's variant's student within 0.03 of TRL's: 1 of 2 (+0.031 / -0.030)." in checks
    assert "RLT's student at least 0.2 below its base: 1 of 2; its gain over seeds -0.300 ± 0.150, 95% t(1)" in checks
    del record["numbers"]["pairs"]["tandem - grpo"]  # no GRPO teacher (RLT's record): no count of 0 of 0
    assert "Counted per seed (0, 1): students at least 6 paired SE" in render.distill_checks(record, "x.json")


def _fake_curve_run(folder: Path, seed: int, arms: dict[str, list[dict]]) -> Path:
    """A demo seed folder whose RL runs logged the given rows (steps 1, 2, ...), after step 0's validation row."""
    folder.mkdir(parents=True)
    for name, rows in arms.items():
        (folder / name).mkdir()
        lines = [{"step": 0, "val_acc": 0.5}] + [{"step": i, **r} for i, r in enumerate(rows, 1)]
        (folder / name / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
        (folder / name / "summary.json").write_text('{"wall_seconds": 60.0}')  # a finished run's
    (folder / "demo_config.json").write_text(json.dumps({"seed": seed, "quick": False, "threads": 1}))
    return folder


def _rlt_rows(closed: tuple[float, float], length: tuple[float, float], score: tuple[float, float]) -> list[dict]:
    """20 steps: the first block's 10 rows, then the second's."""
    return [{"accuracy": 1.0, "terse_frac": 0.0, "resp_len": length[b], "zero_var_groups": 0.5 * b,
             "partner_score": score[b] + (0.1 if i % 2 else -0.1), "partner_score/logprob_mean": -2.0,
             "partner_score/kl_mean": 0.3, "partner_score/closed": closed[b]} for b in (0, 1) for i in range(10)]


def test_the_curves_record_averages_whole_blocks_and_the_rlt_checks_read_the_first_and_last(tmp_path):
    # seed 0 holds the format and the length; seed 1 opens below 0.9 closed (the last block is fine) and grows 20%
    runs = [_fake_curve_run(tmp_path / "seed-0", 0, {"partner-rlt": _rlt_rows((1.0, 0.95), (80, 84), (-5, -4.9)),
                                                     "grpo": [{"accuracy": 0.5, "terse_frac": 0.2, "resp_len": 70}] * 20}),
            _fake_curve_run(tmp_path / "seed-1", 1, {"partner-rlt": _rlt_rows((0.8, 1.0), (80, 96), (-4, -3.5))})]
    record = recorder.record("curves", runs, "cmd")
    rlt = record["numbers"]["seeds"]["0"]["rlt"]
    assert rlt["steps"] == 20 and rlt["blocks"]["partner_score"] == [pytest.approx(-5.0), pytest.approx(-4.9)]
    assert "transfer/reward_mean" not in rlt["blocks"]  # a metric the run did not log is not recorded as 0
    assert record["numbers"]["seeds"]["0"]["grpo"]["blocks"]["terse_frac"] == [pytest.approx(0.2)] * 2
    assert record["runs"][1] == f"tandem-rlvr demo --seeds 1 --partner rlt --out {tmp_path} --threads 1"
    assert record["numbers"]["unfinished"] == {}
    stopped = _fake_curve_run(tmp_path / "more" / "seed-2", 2, {"partner-rlt": _rlt_rows((1.0, 1.0), (80, 80), (-5, -5)),
                                                                "partner-score": _rlt_rows((1.0, 1.0), (80, 80), (-5, -5))[:3]})
    (stopped / "partner-score" / "summary.json").unlink()  # stopped at step 3: named, not recorded, not refused
    more = recorder.record("curves", [stopped], "cmd")["numbers"]
    assert list(more["seeds"]["2"]) == ["rlt"] and more["unfinished"] == {"2": ["score"]}
    assert "Stopped before their end, so not recorded: seed 2: TRL + partner score (`solution`)." in render.curves_rlt(
        {"numbers": more, "commit": record["commit"], "made_at": [], "machine": {"cpu_model": "a CPU", "cores": 2}}, "x.json")
    record["made_at"], record["machine"] = [], {"cpu_model": "a CPU", "cores": 2, "threads": 1}
    table = render.curves_rlt(record, "x.json")
    assert "| 1 | -4.000 -> -3.500 | 0.500 | 80.0 -> 96.0 (+20%) | 0.800 to 1.000 | 0.00 to 0.50 |" in table
    assert "(steps 1-10 -> 11-20)" in table
    # the runs logged no worst log-prob or largest KL (shown as —) and one validation, at step 0
    assert "| 0.00 to 0.50 | 1.000 -> 1.000 | — | — | 0.500 |" in table
    assert rlt["validation"] == {"0": 0.5}
    assert "on 1 of 2; the last block's mean length within 10% of the first's on 1 of 2." in table
    transfer = render.curves_transfer(record, "x.json")
    assert "| GRPO | 0 | 0.500 -> 0.500 | 0.20 -> 0.20 | — | — | — | — |" in transfer
    assert "(steps 1-10 -> 11-20)" in transfer
    record["numbers"]["seeds"]["1"]["grpo"] = {**record["numbers"]["seeds"]["0"]["grpo"], "steps": 30}
    assert "(steps" not in render.curves_transfer(record, "x.json")  # runs of other lengths: no one span is named
    with pytest.raises(TandemError, match="no run logged time_partner"):
        render.curves_cost(record, "x.json")
    for s in ("0", "1"):  # 10 s a step, of which the partner pass takes 2 (seed 0) or 5 (seed 1)
        record["numbers"]["seeds"][s]["rlt"]["blocks"] |= {"time_step": [10.0, 10.0], "time_partner": [2.0 + 3 * int(s)] * 2}
    assert "| RLT's reward and form at toy scale (the writer) | 1.25 / 2.00 | 10.0 / 10.0 |" in render.curves_cost(record, "x.json")


def test_the_curves_record_refuses_an_unfinished_run_a_missing_step_and_a_folder_without_rl(tmp_path):
    rows = _rlt_rows((1.0, 1.0), (80, 80), (-5, -5))
    unfinished = _fake_curve_run(tmp_path / "a" / "seed-0", 0, {"partner-rlt": rows[:15]})
    with pytest.raises(TandemError, match="steps 1 to 15 are not whole blocks of 10"):
        recorder.record("curves", [unfinished], "cmd")
    gap = _fake_curve_run(tmp_path / "b" / "seed-0", 0, {"tandem": rows})
    lines = (gap / "tandem" / "metrics.jsonl").read_text().splitlines()
    (gap / "tandem" / "metrics.jsonl").write_text("\n".join(lines[:5] + lines[6:]) + "\n")  # step 5 lost
    with pytest.raises(TandemError, match="not whole blocks"):
        recorder.record("curves", [gap], "cmd")
    empty = _fake_curve_run(tmp_path / "c" / "seed-0", 0, {})
    with pytest.raises(TandemError, match="no finished RL run"):
        recorder.record("curves", [empty], "cmd")
    (empty / "demo_config.json").write_text(json.dumps({"quick": False, "threads": 1}))
    with pytest.raises(TandemError, match="no integer `seed`"):
        recorder.record("curves", [empty], "cmd")
    (empty / "demo_config.json").write_text("{")
    with pytest.raises(TandemError, match="not JSON"):
        recorder.record("curves", [empty], "cmd")
    with pytest.raises(TandemError, match="no seed holds RLT's writer"):
        render.curves_rlt({"numbers": {"block": 10, "seeds": {"0": {}}}}, "x.json")


def test_the_curves_record_holds_rlts_warmup_and_every_block_renders_as_the_notebooks_table(tmp_path):
    run = _fake_curve_run(tmp_path / "seed-0", 0, {"partner-rlt": _rlt_rows((1.0, 0.95), (80, 84), (-5, -4.9)),
                                                   "rlt-warmup": []})
    (run / "rlt-warmup" / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "loss": 1 / s, "lr": 1e-3}) + "\n"
                                                              for s in (20, 40, 200)))
    (run / "rlt-warmup" / "summary.json").write_text('{"wall_seconds": 251.4}')
    record = recorder.record("curves", [run], "cmd")
    assert record["numbers"]["warmups"] == {"0": {"loss": {"20": 0.05, "40": 0.025, "200": 0.005}, "wall_seconds": 251.4}}
    assert record["numbers"]["seeds"]["0"]["rlt"]["wall_seconds"] == 60.0
    assert list(record["numbers"]["seeds"]["0"]) == ["rlt"]  # the warm-up is SFT, not an RL run's curve
    record["made_at"], record["machine"] = [], {"cpu_model": "a CPU", "cores": 2, "threads": 1}
    warmup = render.curves_rlt_warmup(record, "x.json")
    assert "| 0 | 0.050 (step 20) -> 0.0050 (step 200) | 251 | 60 (20) |" in warmup  # steps as numbers, not text
    blocks = render.curves_rlt_blocks(record, "x.json")
    assert "| 0 | 1-10 | -5.000 | -2.000 | — | 0.300 | — | 1.000 | 80.0 | 0.00 | 1.000 | — |" in blocks
    assert "| 0 | 11-20 | -4.900 | -2.000 | — | 0.300 | — | 0.950 | 84.0 | 0.50 | 1.000 | — |" in blocks
    del record["numbers"]["warmups"]  # a record of an older recorder
    with pytest.raises(TandemError, match="no seed holds RLT's writer's warm-up"):
        render.curves_rlt_warmup(record, "x.json")


def _validity_base(target, means, own_beats, swap_a_beats, ties=0, n=64):
    return {"target": target, "n": n, "temperature": 1.0, "mean_score": dict(zip(("own", "shuffled", "empty", "sampled"), means)),
            "own_beats_shuffled_fraction": own_beats,
            "pairwise": {"own_wrong_total_vs_shuffled_gold_total": {"a_beats_b_fraction": swap_a_beats, "ties": ties}}}


def test_the_validity_view_counts_each_target_at_its_bounds():
    bases = {"s0-solution": _validity_base("solution", (-2.0, -2.1, -0.02, -2.0), 0.656, 0.5),
             "s1-solution": _validity_base("solution", (-2.0, -2.1, -0.02, -2.0), 0.9, 0.5),  # at 0.9: not below
             "s2-solution": _validity_base("solution", (-0.01, -2.1, -0.02, -2.0), 0.5, 0.5),  # own best, not empty
             "s0-answer": _validity_base("answer", (-0.001, -5.5, -5.7, -2.2), 0.9, 0.0),
             "s1-answer": _validity_base("answer", (-0.001, -5.5, -5.7, -2.2), 0.89, 0.5),  # swap exactly 0.5
             "s2-answer": _validity_base("answer", (-0.001, -5.5, -5.7, -2.2), 0.95, 0.25, ties=32)}  # swap 1-.25-.5
    record = {"numbers": {"bases": bases}, "commit": {"short": "abc1234"}, "machine": {"cpu_model": "a CPU", "cores": 2}}
    bases["s2-answer"]["demo"] = {"seed": 2, "quick": False}  # a record that names the demo whose base it scored
    text = render.controls_validity(record, "x.json")
    assert "after each explanation, at temperature 1;" in text
    assert "| s0-solution (64) | `solution` | -2.0000 | -2.1000 | -0.0200 | -2.0000 | 0.656 | `empty` | 0.500 |" in text
    assert "| s2-answer (demo seed 2; 64) | `answer` | -0.0010 | -5.5000 | -5.7000 | -2.2000 | 0.950 | `own` | 0.250 |" in text
    assert ("Counted: target `solution`: own beats shuffled below 0.9 and `empty` best on 1 of 3 bases; target "
            "`answer`: own beats shuffled on at least 0.9 of problems on 2 of 3 bases, and the swap at least 0.5 on 2 "
            "of 3.") in text


def test_rlts_teachers_copy_shares_are_recorded_rendered_and_counted_against_predictions_35_and_37(tmp_path):
    def row(copies: tuple[float, float] | None, after: float) -> dict:
        r = {"n_traces": 282, "trace_tokens": 48000, "traces_correct_fraction": 0.95, "teacher_terse": 0.0,
             "accuracy_before": 0.65, "accuracy_after": after, "gain": after - 0.65, "gain_se": 0.03, "student_terse": 0.0}
        return r | ({"copies": {"n": 282, "carries_numbers": copies[0], "exact": copies[1]}} if copies else {})
    # seed 0: a copier on both counts, its warm-up 0.05 away on one share (within); seed 1: carries only 0.89 and
    # copies exactly on 0.5 of traces (neither count), its warm-up 0.06 away (not within)
    got = {"seeds": {"0": {"rlt": row((0.98, 0.10), 0.21), "rlt_warmup": row((0.93, 0.10), 0.20), "tandem": row(None, 0.98)},
                     "1": {"rlt": row((0.89, 0.50), 0.13), "rlt_warmup": row((0.95, 0.50), 0.20)}},
           "pairs": {"rlt - rlt_warmup": {"per_seed": {"0": [0.01, 0.01], "1": [-0.07, 0.02]}}}, "protocol": {"threads": 1}}
    (tmp_path / "distill.json").write_text(json.dumps(got))
    record = recorder.record("distill", [tmp_path], "cmd")
    assert "copies" not in record["numbers"]["seeds"]["0"]["tandem"]  # recorded only where the teacher's traces hold it
    record["made_at"], record["machine"] = [], {"cpu_model": "a CPU", "cores": 2, "threads": 1}
    table = render.distill_copies(record, "x.json")
    assert "| 1 | RLT's writer before RL (its warm-up) | 282 | 0.950 | 0.950 | 0.500 | 0.650 -> 0.200 | -0.450 ± 0.030 |" in table
    assert "TRL |" not in table
    checks = render.distill_checks(record, "x.json")
    assert ("RLT's writer's traces carrying every number of the solution on at least 0.9: 1 of 2; its exact copies "
            "below 0.5: 1 of 2. The warm-up writer's two shares both within 0.05 of the RL writer's: 1 of 2.") in checks
    assert "RLT's writer's student within 0.05 of its warm-up's: 1 of 2 (+0.010 / -0.070)." in checks
    for s in ("0", "1"):
        for t in ("rlt", "rlt_warmup"):
            record["numbers"]["seeds"][s][t].pop("copies")
    with pytest.raises(TandemError, match="no teacher's traces were read for copies"):
        render.distill_copies(record, "x.json")
    assert "exact copies" not in render.distill_checks(record, "x.json")


def _gold_run(folder: Path, seed: int, golds: list[str], arms: dict[str, list[int]]) -> Path:
    """A demo seed folder: its test golds, the base's solo counts in eval/results.json, each other arm's in
    partner-eval/ARM.json (4 samples a problem)."""
    (folder / "eval").mkdir(parents=True)
    (folder / "partner-eval").mkdir()
    (folder / "test.jsonl").write_text("".join(json.dumps({"id": f"t{i}", "answer": g}) + "\n" for i, g in enumerate(golds)))
    (folder / "eval" / "results.json").write_text(json.dumps({"base": {"solo_counts": arms.pop("base"), "solo_n": 4},
                                                              "_meta": {}}))
    for arm, counts in arms.items():
        (folder / "partner-eval" / f"{arm}.json").write_text(json.dumps({"solo_counts": counts, "solo_n": 4}))
    (folder / "partner-eval" / "results.json").write_text("{}")  # the partner eval's summary, not an arm
    (folder / "demo_config.json").write_text(json.dumps({"seed": seed, "quick": False, "threads": 1}))
    return folder


def test_the_solo_split_by_the_golds_length_and_prediction_38s_count(tmp_path):
    golds = ["7", "-3", "12", "15"]  # two golds the transfer variant skips (one digit, its sign aside), two it pays on
    # seed 0: TRL + transfer's gap is 0.375 (1.000 against 0.625), as large as the base's (0.625 against 0.250): not
    # counted. seed 1: a gap of 0.25 over a base gap of 0: counted. seed 2: a gap of 0.125, 0.125 above the base's: not.
    runs = [_gold_run(tmp_path / "a" / "seed-0", 0, golds, {"base": [3, 2, 1, 1], "transfer": [4, 4, 2, 3]}),
            _gold_run(tmp_path / "b" / "seed-1", 1, golds, {"base": [2, 2, 2, 2], "transfer": [4, 4, 3, 3]}),
            _gold_run(tmp_path / "c" / "seed-2", 2, golds, {"base": [2, 2, 2, 2], "transfer": [4, 3, 3, 3]})]
    record = recorder.record("solo-by-gold", runs, "cmd")
    seed0 = record["numbers"]["seeds"]["0"]
    assert seed0["base"] == {"skipped": {"problems": 2, "accuracy": 0.625}, "paid": {"problems": 2, "accuracy": 0.25}}
    assert list(seed0) == ["base", "transfer"]  # the partner eval's results.json is not an arm
    assert record["runs"][0] == f"tandem-rlvr demo --seeds 0 --partner transfer --out {tmp_path / 'a'} --threads 1"
    record["made_at"], record["machine"] = [], {"cpu_model": "a CPU", "cores": 2, "threads": 1}
    table = render.solo_by_gold_table(record, "x.json")
    assert "| 0 | TRL + the project's transfer variant | 1.000 (2) | 0.625 (2) | +0.375 | +0.000 |" in table
    assert "| 0 | base (SFT, no RL) | 0.625 (2) | 0.250 (2) | +0.375 |  |" in table
    assert "TRL + transfer's gap at least 0.15 and at least 0.1 above the base's: on seed 1 of 0, 1, 2." in table
    bad = _gold_run(tmp_path / "d" / "seed-3", 3, golds[:3], {"base": [1, 1, 1], "transfer": [1, 1, 1, 1]})
    with pytest.raises(TandemError, match="transfer's solo counts cover 4 problems, test.jsonl 3"):
        recorder.record("solo-by-gold", [bad], "cmd")
    (bad / "test.jsonl").unlink()
    with pytest.raises(TandemError, match="test.jsonl: missing"):
        recorder.record("solo-by-gold", [bad], "cmd")


def test_the_gold_split_within_the_bases_difficulty_groups_and_prediction_39s_clauses(tmp_path):
    golds = ["7", "3", "12", "15", "20", "8", "44"]  # skipped: 7, 3, 8; paid: 12, 15, 20, 44
    base = [4, 0, 4, 0, 0, 2, 3]  # groups: c=4 {7 | 12}, c=0 {3 | 15, 20}, c=2 {8 | -}, c=3 {- | 44}
    seed1 = {"base": base, "transfer": [4, 4, 2, 0, 2, 4, 0], "grpo": [4] * 7, "tandem": [4, 4, 4, 3, 4, 4, 4]}
    seed0 = {**seed1, "base": list(base), "transfer": seed1["tandem"]}  # TRL + transfer is TRL there
    runs = [_gold_run(tmp_path / "a" / "seed-0", 0, golds, seed0), _gold_run(tmp_path / "b" / "seed-1", 1, golds, seed1)]
    record = recorder.record("solo-by-difficulty", runs, "cmd")
    transfer = record["numbers"]["seeds"]["1"]["transfer"]
    assert transfer == {"n": 4, "by_base_count": {"0": {"skipped": {"problems": 1, "correct": 4},
                                                        "paid": {"problems": 2, "correct": 2}},
                                                  "2": {"skipped": {"problems": 1, "correct": 4}},
                                                  "3": {"paid": {"problems": 1, "correct": 0}},
                                                  "4": {"skipped": {"problems": 1, "correct": 4},
                                                        "paid": {"problems": 1, "correct": 2}}}}
    record["made_at"], record["machine"] = [], {"cpu_model": "a CPU", "cores": 2, "threads": 1}
    table = render.solo_by_difficulty_table(record, "x.json")
    # raw: 12/12 skipped against 4/16 paid; adjusted: (1 x (1 - 2/4) + 2 x (1 - 2/8)) / 3, the c=3 paid gold uncompared
    assert "| 1 | TRL + the project's transfer variant | +0.750 | +0.667 | 3 of 4 |" in table
    assert "| 1 | base (SFT, no RL) | +0.062 | +0.000 | 3 of 4 |" in table  # 0 by construction, whatever its raw gap
    assert "| 1 | TRL | +0.062 | +0.083 | 3 of 4 |" in table
    assert "(a) seed 1's TRL + transfer adjusted gap +0.667, at least 0.25: held." in table
    assert "(b) seed 1's GRPO adjusted gap +0.000, at most half of TRL + transfer's (+0.333): held." in table
    assert "(c) seed 1's TRL adjusted gap +0.083, within 0.05 of 0: failed." in table
    assert ("(d) TRL + transfer's adjusted gap within 0.05 of TRL's on the other seeds: on seed 0 of 0 "
            "(seed 0 +0.083 against +0.083).") in table
    del record["numbers"]["seeds"]["1"]["grpo"]
    assert "GRPO and TRL are not all in this record; not read." in render.solo_by_difficulty_table(record, "x.json")


def test_the_difficulty_groups_refuse_a_senior_sampled_otherwise_than_the_base(tmp_path):
    run = _gold_run(tmp_path / "a" / "seed-0", 0, ["7", "12"], {"base": [1, 2], "transfer": [1, 1]})
    (run / "partner-eval" / "transfer.json").write_text(json.dumps({"solo_counts": [1, 1], "solo_n": 8}))
    with pytest.raises(TandemError, match="base was sampled 4 times a problem, a senior 8"):
        recorder.record("solo-by-difficulty", [run], "cmd")
