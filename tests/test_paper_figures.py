"""Figures and table from eval outputs: bootstrap SEs, Table 2 with its reference rows apart under their caption,
no empty figure panel or file, mixed presets refused, training curves from verl's file logger, and the
best-checkpoint rule."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tandem.errors import TandemError
from tandem.io.metric_log import metrics_row, read_metrics
from tandem_eval.analysis import training_curves
from tandem_eval.paper import paper_figures, paper_table
from tandem_eval.core.bootstrap import pass_at_k_with_se
from tandem_eval.paper.paper_results import CheckpointResult, PhaseResult, load_checkpoint


def test_bootstrap_se_matches_the_binomial_standard_error():
    # 400 problems, one sample each, 30% solved: SE of the mean = sqrt(p (1 - p) / P) = 0.02291
    counts = {"b": [(1, int(i < 120)) for i in range(400)]}
    stats = pass_at_k_with_se(counts, [1], resamples=4000, seed=1)
    assert stats["b"]["pass@1"]["mean"] == pytest.approx(0.3)
    assert stats["b"]["pass@1"]["se"] == pytest.approx(math.sqrt(0.3 * 0.7 / 400), rel=0.05)


def test_macro_se_of_two_independent_benchmarks():
    a = [(1, int(i < 50)) for i in range(100)]
    b = [(1, int(i < 20)) for i in range(100)]
    stats = pass_at_k_with_se({"a": a, "b": b}, [1], resamples=4000, seed=2)
    expected = 0.5 * math.sqrt(0.25 / 100 + 0.16 / 100)  # SE of (mean_a + mean_b) / 2
    assert stats["macro"]["pass@1"]["mean"] == pytest.approx(0.35)
    assert stats["macro"]["pass@1"]["se"] == pytest.approx(expected, rel=0.06)
    again = pass_at_k_with_se({"a": a, "b": b}, [1], resamples=4000, seed=2)
    assert again == stats  # the seed fixes the bands


def _phase(directory: Path, preset: str, counts: dict[str, list[int]], n: int) -> None:
    directory.mkdir(parents=True)
    ks = [k for k in (1, 2, 4, 8) if k <= n]
    for bench, cs in counts.items():
        per = [{"id": f"{bench}-{i}", "source": bench, "n": n, "c": c} for i, c in enumerate(cs)]
        (directory / f"{bench}.summary.json").write_text(json.dumps({"per_problem": per}))
    overall = {"preset": preset, "ks": ks, "config": {"preset": preset}, "benchmarks": {b: {} for b in counts}}
    (directory / "summary.json").write_text(json.dumps(overall))


@pytest.fixture()
def checkpoints(tmp_path):
    counts = {"base": ({"aime2024": [0, 1, 8, 2], "amc_23_25": [4, 4, 0]}, {"aime2024": [0, 0, 8, 1], "amc_23_25": [2, 3, 0]}),
              "trl": ({"aime2024": [1, 1, 8, 3], "amc_23_25": [5, 4, 1]}, {"aime2024": [1, 0, 8, 2], "amc_23_25": [4, 3, 1]})}
    for label, (solo, handoff) in counts.items():
        _phase(tmp_path / label / "solo", "paper", solo, 8)
        _phase(tmp_path / label / "handoff", "paper", handoff, 8)
    (tmp_path / "trl" / "legibility.json").write_text(json.dumps({"legibility": {"mean_ce": 0.5, "macro_ce": 0.6,
                                                                                 "n_scored": 56, "n_dropped": 0},
                                                                  "drift": {"js_bits": 0.01}}))
    return tmp_path


def test_table_two_rows_and_reference(checkpoints, tmp_path):
    out = tmp_path / "out" / "table"
    assert paper_table.main(["--checkpoint", f"base={checkpoints / 'base'}", "--checkpoint",
                             f"trl={checkpoints / 'trl'}", "--out", str(out), "--resamples", "100"]) == 0
    table = json.loads(Path(f"{out}.json").read_text())
    trl = table["checkpoints"]["trl"]
    # macro solo pass@1: mean over benchmarks of mean c/n
    assert trl["solo"]["macro"]["pass@1"]["mean"] == pytest.approx(((1 + 1 + 8 + 3) / 32 + (5 + 4 + 1) / 24) / 2)
    assert set(trl["handoff"]) == {"aime2024", "amc_23_25", "macro"} and trl["drift"]["js_bits"] == 0.01
    md = Path(f"{out}.md").read_text()
    assert "| *paper Table 2: TRL* | — | 54.85 | — | — | 54.74 | — |" in md
    pct = 100 * trl["solo"]["macro"]["pass@4"]["mean"]
    assert "| trl | " in md and f"{pct:.2f} ± " in md
    refs = json.loads(paper_table.REFERENCE_FILE.read_text())["rows"]
    assert all(r["source"] for r in refs)  # every published number names where it was read


def test_figure_is_written_as_png_and_svg(checkpoints, tmp_path):
    results = [load_checkpoint(lbl, checkpoints / lbl) for lbl in ("base", "trl")]
    written = paper_figures.passk_figure(results, tmp_path / "fig" / "passk", resamples=50)
    assert [p.suffix for p in written] == [".png", ".svg"] and all(p.stat().st_size > 1000 for p in written)
    assert written[0].read_bytes()[:4] == b"\x89PNG" and b"<svg" in written[1].read_bytes()[:500]


def test_mixed_presets_and_repeated_labels_are_refused(checkpoints, tmp_path):
    _phase(tmp_path / "ours" / "solo", "ours", {"aime2024": [0, 1, 8, 2], "amc_23_25": [4, 4, 0]}, 8)
    with pytest.raises(TandemError, match="'ours' preset"):
        paper_table.build_table([load_checkpoint("base", checkpoints / "base"), load_checkpoint("o", tmp_path / "ours")])
    assert paper_table.main(["--checkpoint", f"a={checkpoints / 'base'}", "--checkpoint", f"a={checkpoints / 'trl'}",
                             "--out", str(tmp_path / "t")]) == 2
    assert not Path(f"{tmp_path / 't'}.md").exists()


def _log(path: Path, rows: list[tuple[int, dict]]) -> Path:
    path.write_text("".join(json.dumps({"step": s, "data": d}) + "\n" for s, d in rows))
    return path


def _val(a: float, b: float) -> dict:
    return {"val-core/amc_23_25/acc/best@4/mean": a, "val-aux/amc_23_25/acc/mean@4": a / 2,
            "val-core/aime_24_26/acc/best@4/mean": b, "val-aux/aime_24_26/acc/mean@4": b / 2}


@pytest.fixture()
def logs(tmp_path):
    trl = _log(tmp_path / "trl.jsonl", [
        (1, {"actor/tandem/senior_token_fraction": 0.51, "response_length/mean": 900.0}),  # as verl logs ours
        (20, {**_val(0.5, 0.2), "actor/tandem/senior_token_fraction": 0.49, "response_length/mean": 950.0}),
        (40, {**_val(0.6, 0.3), "actor/tandem_senior_token_frac": 0.5, "response_length/mean": 990.0}),  # release's
        (60, {**_val(0.7, 0.2), "response_length/mean": 1000.0}),
    ])
    grpo = _log(tmp_path / "grpo.jsonl", [(20, {**_val(0.4, 0.4), "response_length/mean": 800.0}),
                                          (40, {**_val(0.5, 0.3), "response_length/mean": 850.0})])
    return trl, grpo


def test_best_step_is_the_best_validation_macro_pass_at_4(logs, capsys):
    trl, grpo = logs
    assert training_curves.best_step(trl) == (40, pytest.approx(0.45))  # step 60 ties at 0.45: the earlier wins
    assert training_curves.main(["best-step", str(grpo)]) == 0
    assert capsys.readouterr().out.strip() == "20"
    rows = read_metrics(trl)
    assert training_curves.validation_pass_at_k(rows, 1)[20] == pytest.approx(0.175)
    assert training_curves.series(rows, training_curves.SENIOR_FRACTION_KEYS) == {1: 0.51, 20: 0.49, 40: 0.5}


def test_a_flat_log_and_a_verl_log_with_the_releases_key_give_one_curve(tmp_path):
    steps = [(1, 0.51, 900.0), (20, 0.49, 950.0)]
    flat = tmp_path / "metrics.jsonl"  # the embedded trainer's rows, its unprefixed names
    flat.write_text("".join(json.dumps(metrics_row(s, {"senior_token_fraction": f, "response_length/mean": n}))
                            + "\n" for s, f, n in steps))
    verl = _log(tmp_path / "verl.jsonl", [(s, {"actor/tandem_senior_token_frac": f, "response_length/mean": n})
                                          for s, f, n in steps])
    curves = [(training_curves.series(rows, training_curves.SENIOR_FRACTION_KEYS),
               training_curves.series(rows, training_curves.LENGTH_KEY)) for rows in map(read_metrics, (flat, verl))]
    assert curves[0] == curves[1] == ({1: 0.51, 20: 0.49}, {1: 900.0, 20: 950.0})


def test_training_curves_figure(logs, tmp_path):
    trl, grpo = logs
    assert training_curves.main(["plot", "--run", f"trl={trl}", "--run", f"grpo={grpo}", "--out",
                                 str(tmp_path / "curves")]) == 0
    assert (tmp_path / "curves.png").stat().st_size > 1000 and (tmp_path / "curves.svg").is_file()


def test_a_log_without_validation_is_one_line(tmp_path, capsys):
    bare = _log(tmp_path / "bare.jsonl", [(1, {"response_length/mean": 10.0})])
    assert training_curves.main(["best-step", str(bare)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no validation entries" in err[0]
    assert training_curves.main(["plot", "--run", f"x={bare}", "--out", str(tmp_path / "c")]) == 2
    assert "no validation entries" in capsys.readouterr().err and not (tmp_path / "c.png").exists()


def _handoff(clean: bool, prefix: bool) -> PhaseResult:
    counts = {"aime2024": [(8, 1), (8, 4), (8, 0)]}
    return PhaseResult("paper", [1, 2, 4, 8], counts, {}, clean_counts=counts if clean else {},
                       prefix_counts={"0.5": counts} if prefix else {})


@pytest.mark.parametrize("clean, prefix, panels", [(False, False, None), (True, False, 1), (True, True, 2),
                                                   (False, True, 2)])
def test_the_transfer_figure_draws_only_panels_with_data_and_no_empty_file(clean, prefix, panels, tmp_path,
                                                                           monkeypatch):
    import matplotlib.figure

    drawn = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda fig, path, **kw: drawn.append(len(fig.axes)))
    result = CheckpointResult("trl", {"handoff": _handoff(clean, prefix)})
    written = paper_figures.transfer_figure([result], tmp_path / "fig-transfer", resamples=20)
    assert (drawn[:1] or [None])[0] == panels and (written == []) == (panels is None)


def test_the_papers_reference_rows_stand_apart_from_yours_under_captions(checkpoints, tmp_path):
    out = tmp_path / "table"
    assert paper_table.main(["--checkpoint", f"trl={checkpoints / 'trl'}", "--out", str(out), "--resamples", "20"]) == 0
    md = Path(f"{out}.md").read_text().splitlines()
    published = md.index(next(line for line in md if line.startswith("*Published reference*")))
    yours = md.index("*Your checkpoints*, on aime2024, amc_23_25:")
    reference_rows = [i for i, line in enumerate(md) if line.startswith("| *paper Table 2")]
    user_rows = [i for i, line in enumerate(md) if line.startswith("| trl |")]
    assert published < min(reference_rows) and max(reference_rows) < yours < user_rows[0]
    assert md[yours + 2].startswith("| checkpoint |")  # a table of its own, with its header
    assert paper_table.main(["--checkpoint", f"trl={checkpoints / 'trl'}", "--out", str(tmp_path / "bare"),
                             "--resamples", "20", "--no-reference"]) == 0
    assert "*Your checkpoints*" not in Path(f"{tmp_path / 'bare'}.md").read_text()  # nothing to set apart
