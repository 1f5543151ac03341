"""`tandem-rlvr demo --quick`: the whole pipeline end to end, and reruns reuse finished phases."""

from __future__ import annotations

import json
import shutil

from tandem_app.commands.cli import main

PHASES = ("build_tiny", "sft", "eval")
# timed as one phase when trained side by side (a free core each, at that moment), else one each
TRAIN_PHASES = {True: ("train_tandem+grpo",), False: ("train_tandem", "train_grpo")}


def test_quick_demo_writes_report_figures_and_results(quick_demo):
    report = (quick_demo / "report.md").read_text()
    for needle in (
        "## Results",
        "TRL senior",
        "GRPO senior",
        "RL learns",
        "1. TRL matches GRPO solo",
        "2. TRL hands off better than GRPO",
        "3. TRL drifts less",
        "## Sample responses",
        "GRPO senior** + junior",
    ):
        assert needle in report
    for fig in ("reward_curves.png", "accuracy_bars.png"):
        assert (quick_demo / fig).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    results = json.loads((quick_demo / "eval" / "results.json").read_text())
    for name in ("base", "grpo", "tandem"):
        for key in ("drift_js_vs_base", "solo_terse_share"):
            assert 0.0 <= results[name][key] <= 1.0, (name, key)
        assert 0.0 < results[name]["handoff_senior_token_fraction"] < 1.0 and results[name]["handoff_mean_handoffs"] > 0
    check_accuracy_against_the_graded_samples(quick_demo, results)
    assert results["base"]["solo_acc"] >= 0.3  # the quick base solves a visible share, which RL can move
    timings = json.loads((quick_demo / "timings.json").read_text())
    assert set(timings) - set(PHASES) in [set(t) for t in TRAIN_PHASES.values()]  # side by side or one by one
    assert set(PHASES) <= set(timings)


def check_accuracy_against_the_graded_samples(out, results):
    """Each accuracy is the share of correct samples; the base's solo samples re-graded from their tokens agree."""
    from tandem.grading import reward
    from tandem.models.loading import load_tokenizer
    from tandem_app.task import generate_problems
    from tandem_app.experiments.demo import demo_config

    cfg = demo_config(quick=True)
    n, problems = cfg.eval.n_samples, generate_problems("test", cfg.eval.n_problems, cfg.seed, cfg.task)
    for name in ("base", "grpo", "tandem"):
        for kind in ("solo", "handoff"):
            counts = results[name][f"{kind}_counts"]
            assert len(counts) == len(problems) and all(0 <= c <= n for c in counts)
            assert results[name][f"{kind}_acc"] == sum(counts) / (n * len(problems)), (name, kind)
    tokenizer = load_tokenizer(out / "sft" / "model")
    base = json.loads((out / "eval" / "base.json").read_text())
    regraded = [sum(int(reward(tokenizer.decode(t, skip_special_tokens=True), p.answer)) for t in group)
                for group, p in zip(base["solo_tokens"], problems, strict=True)]
    assert regraded == results["base"]["solo_counts"]


def test_quick_demo_trains_both_methods_on_the_same_problems(quick_demo):
    trl = [json.loads(x) for x in (quick_demo / "tandem" / "metrics.jsonl").read_text().splitlines()]
    grpo = [json.loads(x) for x in (quick_demo / "grpo" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in trl] == [r["step"] for r in grpo]
    trl_train, grpo_train = [r for r in trl if "reward_mean" in r], [r for r in grpo if "reward_mean" in r]
    assert trl_train and all(0.0 < r["senior_token_fraction"] < 1.0 and r["mean_handoffs"] > 0 for r in trl_train)
    assert all(r["senior_token_fraction"] == 1.0 and r["mean_handoffs"] == 0 for r in grpo_train)
    cfg_trl = json.loads((quick_demo / "tandem" / "config.json").read_text())
    cfg_grpo = json.loads((quick_demo / "grpo" / "config.json").read_text())
    differ = {k for k in cfg_trl if cfg_trl[k] != cfg_grpo[k]}
    assert differ == {"method", "out"}


def test_demo_rerun_reuses_finished_phases(quick_demo, tmp_path):
    demo = shutil.copytree(quick_demo, tmp_path / "quick")  # the session's demo stays as it was built
    before = json.loads((demo / "timings.json").read_text())
    model = demo / "tandem" / "model" / "model.safetensors"
    mtime = model.stat().st_mtime_ns
    assert main(["demo", "--quick", "--out", str(demo), "--no-progress"]) == 0
    assert json.loads((demo / "timings.json").read_text()) == before
    assert model.stat().st_mtime_ns == mtime


def test_the_seed_table_reads_finished_runs(quick_demo, tmp_path):
    from tandem_app.experiments.seeds import write_seed_table

    (tmp_path / "seed-0").symlink_to(quick_demo, target_is_directory=True)
    table = write_seed_table(tmp_path, [0]).read_text()
    assert "| GRPO solo acc |" in table and "| 2. TRL hands off better than GRPO |" in table
    assert json.loads((tmp_path / "seeds.json").read_text())["0"]["minutes"] > 0


def _write_runs(out, grpo_rewards, tandem_rewards, form="flat"):
    """metrics.jsonl of a GRPO and a TRL run: a reward and terse share per step, validation every 2 steps."""
    from tandem.io.jsonl import write_jsonl
    from tandem.io.metric_log import metrics_row

    for method, rewards in (("grpo", grpo_rewards), ("tandem", tandem_rewards)):
        rows = [(s, {"reward_mean": r, "terse_frac": r / 2}) for s, r in enumerate(rewards)]
        rows += [(s, {"val_acc": rewards[s]}) for s in range(0, len(rewards), 2)]
        (out / method).mkdir(parents=True)
        write_jsonl(out / method / "metrics.jsonl", [metrics_row(s, m, form) for s, m in rows])


def test_the_report_reads_a_verl_form_metrics_log_as_the_flat_form(tmp_path):
    from tandem_app.experiments.report import reward_figure

    rewards = [0.1, 0.3, 0.2, 0.5]
    for form in ("flat", "verl"):
        _write_runs(tmp_path / form, rewards, rewards[::-1], form=form)
    flat, verl = reward_figure(tmp_path / "flat"), reward_figure(tmp_path / "verl")
    assert [len(ax.get_lines()) for ax in verl.axes] == [2, 2, 2]  # 4 steps: no running mean of 5, raw only
    for a, b in zip(flat.axes, verl.axes, strict=True):
        for x, y in zip(a.get_lines(), b.get_lines(), strict=True):
            assert (x.get_xdata() == y.get_xdata()).all() and (x.get_ydata() == y.get_ydata()).all()


def test_the_reward_plot_names_raw_and_smoothed_keeps_equal_runs_visible_and_counts_whole_steps(tmp_path):
    import io

    from tandem_app.experiments.report import SMOOTH, reward_figure

    same = [0.1, 0.3, 0.2, 0.5, 0.4, 0.6, 0.7]
    _write_runs(tmp_path, same, same)  # GRPO and TRL equal: TRL must not hide GRPO
    fig = reward_figure(tmp_path)
    fig.savefig(io.BytesIO(), format="png")  # draws it, as the report does
    reward, terse, val = fig.axes
    assert [t.get_text() for t in reward.get_legend().get_texts()] == [
        "GRPO, per step", f"GRPO, mean of the last {SMOOTH} steps",
        "TRL, per step", f"TRL, mean of the last {SMOOTH} steps"]
    for ax in (reward, terse, val):
        grpo, trl = ([line for line in ax.get_lines() if line.get_label().startswith(name)] for name in ("GRPO", "TRL"))
        for a, b in zip(grpo, trl, strict=True):
            assert (a.get_xdata() == b.get_xdata()).all() and (a.get_ydata() == b.get_ydata()).all()
            assert (a.get_linestyle(), a.get_marker()) != (b.get_linestyle(), b.get_marker())
        shown = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
        assert len(shown) >= 2 and all(float(t).is_integer() for t in shown), shown


def test_the_demo_ends_with_its_table_the_model_folders_and_the_report_the_readme_names(quick_demo, tmp_path,
                                                                                          monkeypatch, capsys):
    """Rerun where a user runs it (every phase reused): the last lines are the accuracy table with its legend,
    each model's folder (each a Hugging Face model folder), and the report the README points to."""
    from pathlib import Path

    from tandem_app.experiments.report import MODEL_DIRS, NAMES

    shutil.copytree(quick_demo, tmp_path / "runs" / "demo-quick")
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--quick", "--no-progress"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    results = json.loads((tmp_path / "runs" / "demo-quick" / "eval" / "results.json").read_text())
    table = lines[lines.index(next(l for l in lines if l.startswith("model "))):]
    for name in MODEL_DIRS:
        row = next(l for l in table if l.startswith(NAMES[name]))
        assert f"{results[name]['solo_acc']:.3f} ± " in row and f"{results[name]['handoff_acc']:.3f} ± " in row
        folder = f"runs/demo-quick/{MODEL_DIRS[name]}"
        assert f"  {NAMES[name]}: {folder}" in table and (tmp_path / folder / "config.json").is_file()
    assert any(l.startswith("accuracy over ") and "standard error" in l for l in table)
    written = lines[-1].removeprefix("report: ")
    first_result = (Path(__file__).resolve().parents[1] / "README.md").read_text().split("## A first result")[1]
    quick = first_result.split("The full demo")[0]
    assert written == "runs/demo-quick/report.md" and f"`{written}`" in quick, (written, quick)
    report = (tmp_path / written).read_text()  # written again by the rerun
    assert all(f"- {NAMES[name]}: runs/demo-quick/{d}" in report for name, d in MODEL_DIRS.items())


def test_a_run_shorter_than_the_window_or_without_validation_draws_only_what_it_has(tmp_path):
    from tandem.io.jsonl import write_jsonl
    from tandem.io.metric_log import metrics_row
    from tandem_app.experiments.report import SMOOTH, reward_figure

    for method in ("grpo", "tandem"):  # 3 steps, no validation rows (val_every=0)
        (tmp_path / method).mkdir()
        write_jsonl(tmp_path / method / "metrics.jsonl",
                    [metrics_row(s, {"reward_mean": 0.1 * s, "terse_frac": 0.2}, "flat") for s in range(3)])
    reward, terse, val = reward_figure(tmp_path).axes
    labels = [t.get_text() for ax in (reward, terse) for t in ax.get_legend().get_texts()]
    assert labels == ["GRPO, per step", "TRL, per step"] * 2 and not any(str(SMOOTH) in l for l in labels)
    assert not val.get_lines() and val.get_legend() is None
    assert [t.get_text() for t in val.texts] == ["no validation in these runs (val_every=0)"]


def test_a_demo_where_nothing_is_solved_draws_no_accuracy_chart(quick_demo, tmp_path):
    from tandem_app.experiments.report import write_report

    demo = shutil.copytree(quick_demo, tmp_path / "quick")
    results = json.loads((demo / "eval" / "results.json").read_text())
    for name in ("base", "grpo", "tandem"):
        results[name].update(solo_acc=0.0, handoff_acc=0.0)
    (demo / "eval" / "results.json").write_text(json.dumps(results))
    report = write_report(demo, {}).read_text()
    assert not (demo / "accuracy_bars.png").exists() and "accuracy_bars.png" not in report
    assert "No accuracy chart: every model's solo and handoff accuracy is 0." in report
