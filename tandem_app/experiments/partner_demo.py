"""The partner experiment on the embedded demo: with which junior, and which reward, does tandem help?

On a demo seed (OUT/seed-S, run first if unfinished: base, TRL beside the frozen base, GRPO)
it trains each asked-for variant from the same base, seed, budget and hyper-parameters,
into OUT/seed-S/partner-NAME:

    weaker      TRL beside a weaker junior: the base's SFT stopped at WEAK_SFT_FRACTION of its steps
    sync        TRL, tandem.junior_update = SYNC (the junior becomes the senior every K optimizer steps)
    ema         TRL, tandem.junior_update = EMA
    all_tokens  TRL with the release's loss denominator (loss.loss_denominator = all_response_tokens:
                junior tokens count in the token-mean's denominator; the demo divides by the senior's)
    score       TRL with the partner score (partner_reward: weight SCORE_WEIGHT, target solution)
    grpo_score  GRPO with the partner score, scored by the base (RLT's student)
    grpo_answer_score  the same with target `answer`, the target that separates a senior's own
                explanation from another's on these bases (issue 44's validity benchmark)
    grpo_answer_kl_only      grpo_answer_score with the log-prob coefficients 0: RLT's KL-to-base terms alone
    grpo_answer_target_only  grpo_answer_score with the KL coefficients 0: the target's log-prob terms alone
    transfer    TRL with the project's variant of RLTR's transfer reward (partner_reward.kind=transfer,
                weight TRANSFER_WEIGHT, the cut drawn per response and moved back before the answer,
                golds that cannot be located skipped, the receiver writing the rest of the budget:
                `TransferConfig(**PROJECT_VARIANT)`): the junior (the base) continues each response's
                leak-free prefix and the verifier grades it
    grpo_transfer  GRPO with that variant, the base as the receiver
    grpo_rltr   GRPO with RLTR's transfer reward as RLTR defines it (partner_reward.preset=rltr: uniform
                cut, no answer rule, no skips, the receiver's whole budget), weight RLTR_WEIGHTS[name];
                grpo_rltr_w0.25 and grpo_rltr_w1 the same at other weights
    grpo_rltr_cut, grpo_rltr_skips, grpo_rltr_rest
                grpo_rltr (w = 0.5) with one rule of the project's variant added (RLTR_PLUS_ONE_RULE):
                the cut before the answer; the skips of undetermined golds and empty cuts; the
                receiver writing only the rest of the budget
    rlt         RLT's setting at toy scale (issue 44): the writer sees each problem's solution
                (partner_reward.writer_sees_solution) in RLT's format, whose tags and instruction are
                tokens of the demo's tokenizer (OUT/seed-S/rlt-student: the base with them added,
                `tandem_app.zoo.add_format_tokens`); the writer is warmed up on the format first
                (OUT/seed-S/rlt-warmup, `writer_warmup`); RL rewards the score alone, -1 where the
                explanation is left unclosed (RLT_TEACHER_REWARD), scored by the base at RLT's
                temperature 0.7, under a budget that holds the longest solution; evaluated on plain
                prompts as the rest, with the base (and the weaker junior) holding the format tokens

Every senior (the demo's TRL and GRPO included) is evaluated on the demo's test problems:
solo accuracy, handoff to the base, handoff to the weaker junior, drift from the base
(JS, bits) and the base's cross-entropy on its solo responses (junior CE). OUT/partner.md
and OUT/partner.json hold the numbers per seed, each variant minus GRPO and minus TRL
paired over problems (mean ± SE), drift and junior CE differences per seed, and the
mean ± SE of each difference over seeds.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

from tandem.io import run_lock
from tandem.io.config_files import config_to_dict
from tandem.io.jsonl import write_json
from tandem.models.loading import load_model, load_tokenizer
from tandem.rewards.partner_config import RLT_TEACHER_REWARD
from tandem.rewards.partner_config import PartnerRewardConfig
from tandem.rewards.transfer_config import PROJECT_VARIANT, TransferConfig
from tandem_app.task import generate_problems
from tandem_app.train.data import prompt_ids_batch
from tandem_app.experiments.demo_folder import SEED_FOLDERS, check_own_out
from tandem_app.experiments.demo import DemoConfig, demo_config, run_demo, sft_config, train_config
from tandem_app.train.evaluate import drift_js, evaluate_senior, junior_legibility
from tandem_app.train.grpo_trainer import GRPOTrainer
from tandem_app.train.sft import run_sft
from tandem_app.experiments.partner_variants import (ABLATIONS, DENOMINATORS, GRPO_VARIANTS, RLTR_PLUS_ONE_RULE,
                                                     RLTR_WEIGHTS, VARIANTS, check_variants)
from tandem_app.experiments.seeds import spread
from tandem_app.stats import over_seeds_text, paired_difference

WEAK_SFT_FRACTION = 0.25  # the weaker junior: the base's SFT, same seed and data, a quarter of the steps
SYNC, EMA = "sync:20", "ema:0.9"  # per optimizer step; the demo makes 2 per training step (200 in all)
SCORE_WEIGHT = 0.1  # partner score per unit of verifier reward
TRANSFER_WEIGHT = 0.5  # R_transfer per unit of verifier reward (RLTR's w was not found: SPEC §15)
# Each ablation zeroes one pair of RLT's terms (tandem.rewards.partner_config.TERMS); the other keeps RLT's coefficients
ABLATION_TERMS = {"grpo_answer_kl_only": {"logprob_mean": 0.0, "logprob_min": 0.0},
                  "grpo_answer_target_only": {"kl_mean": 0.0, "kl_max": 0.0}}
SENIORS = ("grpo", "tandem", *VARIANTS)  # evaluated; `tandem` is the paper's TRL (frozen base)
# RLT's setting (`rlt`): RLT samples its teacher and scores its student at 0.7 (teacher_rlt.yaml:
# temperature, unbias_student_log_probs_temp); 128 tokens hold the demo task's longest worked
# solution (86 tokens) as an explanation, its closing tag and the end of turn (the demo's 82 did not).
RLT_TEMPERATURE = 0.7
RLT_MAX_NEW_TOKENS = 128
RLT_WEIGHT = 1.0  # the score is the whole reward (RLT's), so its scale is RLT's
RLT_STUDENT, RLT_WARMUP = "rlt-student", "rlt-warmup"  # under OUT/seed-S
LABELS = {"grpo": "GRPO", "tandem": "TRL (frozen base)", "weaker": "TRL, weaker junior", "sync": f"TRL, {SYNC}",
          "ema": f"TRL, {EMA}", "all_tokens": "TRL, the release's loss denominator (all response tokens)",
          "score": "TRL + partner score", "grpo_score": "GRPO + partner score",
          "grpo_answer_score": "GRPO + partner score (target answer)",
          "grpo_answer_kl_only": "GRPO + score (answer), KL terms only",
          "grpo_answer_target_only": "GRPO + score (answer), target terms only",
          "rlt": "RLT: warmed-up writer sees the solution, rewarded by the student score",
          "transfer": "TRL + transfer reward (project's variant)", "grpo_transfer": "GRPO + transfer reward (project's variant)",
          **{n: f"GRPO + RLTR's transfer reward, w = {w}" for n, w in RLTR_WEIGHTS.items()},
          "grpo_rltr_cut": "GRPO + RLTR, the variant's cut before the answer",
          "grpo_rltr_skips": "GRPO + RLTR, the variant's skips", "grpo_rltr_rest": "GRPO + RLTR, the variant's rest-of-budget receiver"}


def variant_config(cfg: DemoConfig, seed_dir: Path, name: str):
    """The `TrainConfig` of variant `name`: the demo's TRL (or GRPO) config with one thing changed."""
    tc = train_config(cfg, seed_dir, "grpo" if name in GRPO_VARIANTS else "tandem")
    tc = replace(tc, out=str(seed_dir / f"partner-{name}"))
    if name == "weaker":
        return replace(tc, tandem=replace(tc.tandem, junior_model=str(seed_dir / "sft-weak" / "model")))
    if name in ("sync", "ema"):
        return replace(tc, tandem=replace(tc.tandem, junior_update=SYNC if name == "sync" else EMA))
    if name in DENOMINATORS:
        return replace(tc, loss=replace(tc.loss, loss_denominator=DENOMINATORS[name]))
    if name == "rlt":
        return rlt_config(tc, seed_dir)
    if name.endswith("transfer"):  # the receiver: the run's junior (TRL) or its base (GRPO), the same model
        return replace(tc, partner_reward=PartnerRewardConfig(weight=TRANSFER_WEIGHT, kind="transfer",
                                                              transfer=TransferConfig(**PROJECT_VARIANT)))
    if name in RLTR_WEIGHTS:
        return replace(tc, partner_reward=PartnerRewardConfig(weight=RLTR_WEIGHTS[name], kind="transfer", preset="rltr"))
    if name in RLTR_PLUS_ONE_RULE:  # RLTR's transfer section with one of the variant's rules: no preset to re-fill it
        return replace(tc, partner_reward=PartnerRewardConfig(weight=RLTR_WEIGHTS["grpo_rltr"], kind="transfer",
                                                              transfer=TransferConfig(**RLTR_PLUS_ONE_RULE[name])))
    if name == "grpo_answer_score":  # the validated target (the default)
        return replace(tc, partner_reward=PartnerRewardConfig(weight=SCORE_WEIGHT, target="answer"))
    if name in ABLATIONS:
        return replace(tc, partner_reward=PartnerRewardConfig(weight=SCORE_WEIGHT, target="answer", **ABLATION_TERMS[name]))
    return replace(tc, partner_reward=PartnerRewardConfig(weight=SCORE_WEIGHT, target="solution"))


def rlt_config(tc, seed_dir: Path):
    """RLT's setting on the demo's GRPO config: the warmed-up writer, RLT's reward, student, temperature
    and a budget that holds the longest solution (`prepare_rlt` makes the two models it names)."""
    return replace(tc, model=str(seed_dir / RLT_WARMUP / "model"),
                   sampling=replace(tc.sampling, temperature=RLT_TEMPERATURE, max_new_tokens=RLT_MAX_NEW_TOKENS),
                   partner_reward=PartnerRewardConfig(weight=RLT_WEIGHT, target="solution", writer_sees_solution=True,
                                                      student=str(seed_dir / RLT_STUDENT), **RLT_TEACHER_REWARD))


def prepare_rlt(cfg: DemoConfig, seed_dir: Path, progress: bool = True) -> None:
    """RLT's student (the base with the format tokens) and the writer's warm-up from it; reused when done."""
    from tandem_app.experiments.writer_warmup import run_writer_warmup
    from tandem_app.zoo import add_format_tokens

    student = add_format_tokens(seed_dir / "sft" / "model", seed_dir / RLT_STUDENT)
    run_writer_warmup(student, seed_dir / RLT_WARMUP, cfg.seed, cfg.task, threads=cfg.threads, progress=progress)


def weak_sft_config(cfg: DemoConfig, seed_dir: Path):
    sft = sft_config(cfg, seed_dir)
    return replace(sft, out=str(seed_dir / "sft-weak"), steps=max(1, round(sft.steps * WEAK_SFT_FRACTION)))


def run_partner_seed(cfg: DemoConfig, seed_dir: Path, variants: list[str], progress: bool = True) -> dict:
    """The demo (if unfinished), the weaker junior, each variant and every evaluation of one seed."""
    run_demo(cfg, seed_dir, progress=progress)
    weak = weak_sft_config(cfg, seed_dir)
    if not (Path(weak.out) / "summary.json").is_file():
        run_sft(weak, resume=Path(weak.out).exists(), progress=progress)
    timings = _load(seed_dir / "partner_timings.json")
    for name in variants:
        tc = variant_config(cfg, seed_dir, name)
        if not (Path(tc.out) / "summary.json").is_file():
            t0 = time.time()
            if name == "rlt":
                prepare_rlt(cfg, seed_dir, progress)
            GRPOTrainer(tc, progress=progress).train(resume=Path(tc.out).exists())
            timings[name] = time.time() - t0
            write_json(seed_dir / "partner_timings.json", timings)
    return evaluate_partners(cfg, seed_dir, ["grpo", "tandem", *variants], progress)


def evaluate_partners(cfg: DemoConfig, seed_dir: Path, seniors: list[str], progress: bool = True) -> dict:
    """Solo, handoff (base and weaker junior), drift and junior CE of each senior; cached per senior
    (`progress=False`: no eval bars, as `--no-progress` promises)."""
    base_dir, weak_dir = seed_dir / "sft" / "model", seed_dir / "sft-weak" / "model"
    tokenizer, base = load_tokenizer(base_dir), load_model(base_dir)
    problems = generate_problems("test", cfg.eval.n_problems, cfg.seed, cfg.task)
    prompts = prompt_ids_batch(tokenizer, problems)
    tag = f"test/{cfg.seed}"
    base_tokens = [t for g in _load(seed_dir / "eval" / "base.json")["solo_tokens"] for t in g]  # the demo's
    results = {}
    for name in seniors:
        path = seed_dir / "partner-eval" / f"{name}.json"
        if not path.is_file():
            senior_dir = seed_dir / (name if name in ("grpo", "tandem") else f"partner-{name}") / "model"
            # RLT's writer holds the format tokens: its juniors are the same models with them added
            juniors = (base_dir, weak_dir) if name != "rlt" else _format_juniors(seed_dir, base_dir, weak_dir)
            r = evaluate_senior(senior_dir, juniors[0], problems, cfg.eval, tag=tag, progress=progress)
            weak = evaluate_senior(senior_dir, juniors[1], problems, cfg.eval, tag=tag, progress=progress)
            tokens = [t for g in r.pop("solo_tokens") for t in g]
            flat_prompts = [p for p in prompts for _ in range(r["solo_n"])]  # problem-major, as the tokens
            row = {k: r[k] for k in ("solo_acc", "solo_counts", "solo_n", "handoff_acc", "handoff_counts",
                                     "handoff_n", "solo_terse_share")}
            row.update(weak_handoff_acc=weak["handoff_acc"], weak_handoff_counts=weak["handoff_counts"],
                       weak_handoff_n=weak["handoff_n"],
                       drift_js_vs_base=drift_js(tokens, base_tokens, load_tokenizer(juniors[0])),
                       junior_ce=junior_legibility(base, flat_prompts, tokens))
            write_json(path, row)
        results[name] = _load(path)
    write_json(seed_dir / "partner-eval" / "results.json", {**results, "_meta": {"eval": config_to_dict(cfg.eval)}})
    return results


def _format_juniors(seed_dir: Path, base_dir: Path, weak_dir: Path) -> tuple[Path, Path]:
    """The base and the weaker junior with RLT's format tokens added (same weights): one vocabulary with RLT's writer."""
    from tandem_app.zoo import add_format_tokens

    return (add_format_tokens(base_dir, seed_dir / RLT_STUDENT),
            add_format_tokens(weak_dir, seed_dir / f"{RLT_STUDENT}-weak"))


NUMBERS = [("solo acc", "solo_acc"), ("handoff to base", "handoff_acc"), ("handoff to weaker junior",
           "weak_handoff_acc"), ("drift vs base, bits", "drift_js_vs_base"), ("junior CE, nats", "junior_ce"),
           ("terse steps", "solo_terse_share")]
PAIRED = [("solo", "solo"), ("handoff to base", "handoff"), ("handoff to weaker junior", "weak_handoff")]


def paired_rows(results: dict, against: str) -> dict[str, dict[str, tuple[float, float]]]:
    """{senior: {mode: (mean, SE)}} of accuracy(senior) - accuracy(against), paired over problems."""
    ref = results[against]
    return {name: {mode: paired_difference(r[f"{key}_counts"], r[f"{key}_n"], ref[f"{key}_counts"], ref[f"{key}_n"])
                   for mode, key in PAIRED}
            for name, r in results.items() if name != against and not name.startswith("_")}


def _numbers_table(label: str, key: str, seeds: list[int], seniors: list[str], per_seed: dict) -> list[str]:
    d = 4 if "bits" in label else 3
    lines = [f"## {label}", "", "| senior | " + " | ".join(f"seed {s}" for s in seeds) + " | mean ± sd |",
             "|" + "---|" * (len(seeds) + 2)]
    for name in seniors:
        values = [per_seed[s][name][key] for s in seeds]
        sp = spread(values)
        lines.append(f"| {LABELS[name]} | " + " | ".join(f"{v:.{d}f}" for v in values)
                     + f" | {sp['mean']:.{d}f} ± {sp['sd']:.{d}f} |")
    return lines + [""]


def _difference_table(title: str, cells: dict[str, list[tuple[float, float]]], seeds: list[int], d: int = 3) -> list[str]:
    """One row per senior: each seed's difference (± its SE over problems where it has one), then the
    mean over seeds ± its SE over seeds (the seed-to-seed spread, which the per-seed SEs do not hold) and its
    95% interval with t on k - 1 degrees of freedom."""
    lines = [f"## {title}", "", "| senior | " + " | ".join(f"seed {s}" for s in seeds) + " | over seeds, mean ± SE, 95% t interval |",
             "|" + "---|" * (len(seeds) + 2)]
    for name, row in cells.items():
        shown = [f"{m:+.{d}f} ± {e:.{d}f}" if e is not None else f"{m:+.{d}f}" for m, e in row]
        lines.append(f"| {LABELS[name]} | " + " | ".join(shown) + f" | {over_seeds_text([m for m, _ in row], d)} |")
    return lines + [""]


def write_partner_table(out: Path, seeds: list[int], per_seed: dict[int, dict]) -> Path:
    """OUT/partner.md and OUT/partner.json: every number per seed, its mean ± sd over seeds, and each
    senior minus GRPO and minus the paper's TRL, per seed and over seeds (mean ± SE)."""
    seniors = [s for s in SENIORS if all(s in per_seed[k] for k in seeds)]
    lines = [f"# Partner experiment over seeds {', '.join(map(str, seeds))}", "",
             "Each senior trained from the same base, seed and budget. Numbers: per seed, then mean ± sd over "
             "seeds. Differences: per seed, accuracies paired over the seed's test problems (± SE over problems), "
             "drift and junior CE as one difference per seed; then mean ± SE over seeds, with the 95% interval "
             "from t on k - 1 degrees of freedom.", ""]
    for label, key in NUMBERS:
        lines += _numbers_table(label, key, seeds, seniors, per_seed)
    table = {}
    for against in ("grpo", "tandem"):
        others = [n for n in seniors if n != against]
        for mode, _ in PAIRED:
            cells = {n: [paired_rows(per_seed[s], against)[n][mode] for s in seeds] for n in others}
            table.update({f"{n}-{against}/{mode}": c for n, c in cells.items()})
            lines += _difference_table(f"{mode}: senior - {LABELS[against]}, paired", cells, seeds)
        for label, key in NUMBERS[3:5]:
            cells = {n: [(per_seed[s][n][key] - per_seed[s][against][key], None) for s in seeds] for n in others}
            table.update({f"{n}-{against}/{key}": [m for m, _ in c] for n, c in cells.items()})
            lines += _difference_table(f"{label}: senior - {LABELS[against]}, same seed", cells, seeds,
                                       4 if "bits" in label else 3)
    write_json(out / "partner.json", {"seeds": {str(s): per_seed[s] for s in seeds}, "paired": table})
    path = out / "partner.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def run_partner_experiment(seeds: list[int], out: str | Path, variants: list[str], quick: bool = False,
                           progress: bool = True, threads: int = 0) -> Path:
    """Every seed (OUT/seed-S), then OUT/partner.md; finished runs and evaluations are reused."""
    out = Path(out)
    check_variants(variants)
    check_own_out(out, SEED_FOLDERS)
    with run_lock.hold(out):  # one writer per folder: each seed's folder and run hold their own lock too
        per_seed = {s: run_partner_seed(demo_config(quick=quick, seed=s, threads=threads), out / f"seed-{s}", variants, progress)
                    for s in seeds}
        return write_partner_table(out, seeds, per_seed)


def _load(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}
