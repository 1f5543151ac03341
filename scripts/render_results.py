"""Render the documents' result blocks from the result records, or check that they are what renders.

A document holds a block where a number of an experiment appears:

    <!-- results:NAME -->            (or <!-- results:NAME:VIEW -->)
    ... whatever the renderer writes ...
    <!-- /results:NAME -->           (closed with the same NAME[:VIEW])

The block is rendered from `model_spec/results/NAME.json` (a record of `scripts/record_results.py`,
stamped with its commit and machine) by the renderer registered for the record's `kind` and the
VIEW (`table` when none is named): a table, or sentences that stand in the prose. Numbers over
seeds are the mean with the range (min to max) and the seed count; every block names the CPU model
and the commit its record was made on.

    python scripts/render_results.py --check     # exit 1 naming each block that differs or has no record
    python scripts/render_results.py --write     # rewrite the blocks in place

To add a renderer: `@renderer("KIND", "VIEW")` on a function (record, its path -> markdown text).
`tests/test_rendered_numbers.py` runs the check over README.md and model_spec/RESULTS.md.
"""

from __future__ import annotations

import argparse
import difflib
import re
import statistics
import sys
from pathlib import Path
from typing import Callable

from tandem.errors import TandemError
from tandem.io.metric_log import (ACCURACY, PARTNER_SCORE, RESPONSE_LENGTH, TERSE_FRACTION, TIME_PARTNER, TIME_STEP,
                                  TRANSFER_REWARD_MEAN, TRANSFER_UNDETERMINED_FRACTION, ZERO_VARIANCE_GROUPS)
from tandem.io.result_record import read_record

REPO = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "model_spec/RESULTS.md")
RESULTS = "model_spec/results"
DEFAULT_VIEW = "table"
SPEC = r"[A-Za-z0-9_.-]+(?::[A-Za-z0-9_-]+)?"
OPEN = re.compile(rf"<!-- results:({SPEC}) -->")
BLOCK = re.compile(rf"<!-- results:(?P<spec>{SPEC}) -->\n(?P<body>.*?)<!-- /results:(?P=spec) -->", re.S)

RENDERERS: dict[tuple[str, str], Callable[[dict, str], str]] = {}


def renderer(kind: str, view: str = DEFAULT_VIEW):
    """Register a function (record, its path -> markdown) as the renderer of `kind`'s `view`; a second one is refused."""
    def register(fn):
        if (kind, view) in RENDERERS:
            raise ValueError(f"a renderer for {kind}:{view} is registered twice")
        RENDERERS[(kind, view)] = fn
        return fn
    return register


# --- formatting shared by the renderers ---------------------------------------------------------

def over_seeds(values: list[float], digits: int = 3, signed: bool = False) -> str:
    """The mean and, in brackets, the range (min to max) of one number over seeds; one seed: the number."""
    fmt = f"{'+' if signed else ''}.{digits}f"
    mean = format(statistics.fmean(values), fmt)
    if len(values) == 1:
        return mean
    return f"{mean} ({format(min(values), fmt)} to {format(max(values), fmt)})"


def provenance(record: dict, path: str) -> str:
    """Where the digits come from: the CPU and its threads, the torch build, the commit, the record's file."""
    m, c = record["machine"], record["commit"]
    threads = m.get("threads")
    torch = (m.get("packages") or {}).get("torch")
    thread_text = "torch's default threads" if threads is None else f"{threads} torch thread{'s' * (threads != 1)}"
    dirty = " plus uncommitted changes" if c.get("dirty") else ""
    short = c.get("short") or (c.get("sha") or "unknown")[:7]
    at = (f"made at commit{'s' * (len(record['made_at']) > 1)} {', '.join(record['made_at'])}, recorded at {short}{dirty}"
          if record.get("made_at") else f"at commit {short}{dirty}")
    return (f"Run on {m['cpu_model']} ({m['cores']} cores, {thread_text}{f', torch {torch}' if torch else ''}) "
            f"{at}; the digits depend on the CPU and the torch build. Record: `{path}`.")


def seed_list(record: dict) -> list[str]:
    return sorted(record["numbers"]["seeds"], key=int)


def per_seed(record: dict, label: str) -> list[float]:
    seeds = record["numbers"]["seeds"]
    return [seeds[s]["numbers"][label] for s in seed_list(record)]


def on_seeds(seeds: list[str]) -> str:
    """`on seed 1`, `on seeds 0, 2`, or `on no seed`."""
    return f"on seed{'s' * (len(seeds) > 1)} {', '.join(seeds)}" if seeds else "on no seed"


def seeds_phrase(record: dict) -> str:
    seeds = seed_list(record)
    return f"{len(seeds)} seed{'s' * (len(seeds) != 1)} ({', '.join(seeds)})"


# --- the quick demo -----------------------------------------------------------------------------

QUICK_MODELS = (("base (SFT, pre-RL)", "base"), ("GRPO senior", "GRPO"), ("TRL senior", "TRL"))


@renderer("quick-demo", "table")
def quick_demo_table(record: dict, path: str) -> str:
    p = record["numbers"]["preset"]
    lines = [
        f"{seeds_phrase(record)} of `tandem-rlvr demo --quick --seed S`, each cell the mean over the "
        f"seeds and, in brackets, their range (min to max); accuracy over {p['n_problems']} test problems x "
        f"{p['n_samples']} samples per seed. {provenance(record, path)}",
        "",
        "| model | solo acc | handoff acc |",
        "|---|---|---|",
    ]
    for name, label in QUICK_MODELS:
        lines.append(f"| {name} | {over_seeds(per_seed(record, f'{label} solo acc'))} | "
                     f"{over_seeds(per_seed(record, f'{label} handoff acc'))} |")
    return "\n".join(lines) + "\n"


@renderer("quick-demo", "gains")
def quick_demo_gains(record: dict, path: str) -> str:
    n = len(seed_list(record))
    gains = {label: per_seed(record, f"{label} - base, solo") for label in ("GRPO", "TRL")}
    up = ", ".join(f"{label} in {sum(v > 0 for v in values)} of {n}" for label, values in gains.items())
    verdicts = record["numbers"]["seeds"]
    titles = list(verdicts[seed_list(record)[0]]["verdicts"])
    met = "; ".join(f"{t}: {sum(verdicts[s]['verdicts'][t] for s in seed_list(record))} of {n}" for t in titles)
    return (
        f"Solo accuracy minus the base's, paired over each seed's test problems (mean, range over {n} seeds): "
        f"GRPO {over_seeds(gains['GRPO'], signed=True)}, TRL {over_seeds(gains['TRL'], signed=True)}; above the "
        f"base in a seed: {up}. TRL minus GRPO: solo "
        f"{over_seeds(per_seed(record, 'TRL - GRPO, solo'), signed=True)}, handoff "
        f"{over_seeds(per_seed(record, 'TRL - GRPO, handoff'), signed=True)}. The report's targets, met in how "
        f"many seeds: {met}."
    )


# --- the default demo and its partner experiment -----------------------------------------------

def t_text(values: list[float], digits: int = 3) -> str:
    """Mean ± SE over seeds with its 95% t(k-1) interval and the seed count (`tandem_app.stats`)."""
    from tandem_app.stats import over_seeds_text

    text = over_seeds_text(values, digits)
    return text if len(values) == 1 else f"{text}, {len(values)} seeds"  # one seed's text names its count


def slash(values: list[float], digits: int = 3, signed: bool = False) -> str:
    return " / ".join(format(v, f"{'+' if signed else ''}.{digits}f") for v in values)


DEMO_MODELS = (("base (junior)", "base"), ("GRPO senior", "GRPO"), ("TRL senior", "TRL"))


@renderer("demo", "table")
def demo_table(record: dict, path: str) -> str:
    seeds = seed_list(record)
    lines = [f"{seeds_phrase(record)} of `tandem-rlvr demo --seeds S` (the default budget; 200 test problems x 4 "
             f"per seed). Each cell: seed {' / '.join(seeds)}, then the mean and range. {provenance(record, path)}", "",
             "| model | solo acc | handoff acc | drift: JS vs base (bits) | terse steps |", "|---|---|---|---|---|"]
    for name, label in DEMO_MODELS:
        drift = "noise floor JS(base, base), bits" if label == "base" else f"drift JS({label}, base), bits"
        cells = [f"{slash(per_seed(record, f'{label} {k} acc'))}; {over_seeds(per_seed(record, f'{label} {k} acc'))}"
                 for k in ("solo", "handoff")]
        cells.append(f"{slash(per_seed(record, drift), 4)}; {over_seeds(per_seed(record, drift), 4)}")
        cells.append(slash(per_seed(record, f"terse steps, {label}"), 2))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


@renderer("demo", "findings")
def demo_findings(record: dict, path: str) -> str:
    n = len(seed_list(record))
    verdicts = record["numbers"]["seeds"]
    titles = list(verdicts[seed_list(record)[0]]["verdicts"])
    met = "; ".join(f"{t}: {sum(verdicts[s]['verdicts'][t] for s in seed_list(record))} of {n}" for t in titles)
    return (f"Paired over each seed's test problems, then over seeds: TRL minus GRPO solo "
            f"{t_text(per_seed(record, 'TRL - GRPO, solo'))}; handoff {t_text(per_seed(record, 'TRL - GRPO, handoff'))}. "
            f"The report's targets, met in how many seeds: {met}.")


PARTNER_VIEWS = {  # view -> the seniors it shows, in order (partner_demo's names)
    "ablation": ("grpo", "grpo_answer_score", "grpo_answer_kl_only", "grpo_answer_target_only", "tandem"),
    "rltr": ("grpo", "grpo_rltr", "grpo_rltr_w0.25", "grpo_rltr_w1", "tandem"),
    "rules": ("grpo", "grpo_rltr", "grpo_rltr_cut", "grpo_rltr_skips", "grpo_rltr_rest", "grpo_transfer"),
}
PARTNER_LABELS = {"grpo": "GRPO", "tandem": "TRL", "grpo_answer_score": "GRPO + score (answer)",
                  "grpo_answer_kl_only": "GRPO + score, KL terms only", "grpo_answer_target_only": "GRPO + score, target terms only",
                  "grpo_rltr": "GRPO + RLTR transfer, w = 0.5", "grpo_rltr_w0.25": "GRPO + RLTR transfer, w = 0.25",
                  "grpo_rltr_w1": "GRPO + RLTR transfer, w = 1",
                  "grpo_rltr_cut": "GRPO + RLTR + the variant's cut before the answer",
                  "grpo_rltr_skips": "GRPO + RLTR + the variant's skips",
                  "grpo_rltr_rest": "GRPO + RLTR + the variant's rest-of-budget receiver",
                  "grpo_transfer": "GRPO + the project's variant (all three rules)",
                  "weaker": "TRL, weaker junior", "sync": "TRL, `sync:20` junior", "ema": "TRL, `ema:0.9` junior",
                  "all_tokens": "TRL, the release's loss denominator (`all_response_tokens`)",
                  "score": "TRL + partner score (`solution`)", "grpo_score": "GRPO + partner score (`solution`)",
                  "transfer": "TRL + the project's transfer variant",
                  "rlt": "RLT's reward and form at toy scale (the writer)",
                  "rlt_warmup": "RLT's writer before RL (its warm-up)", "base": "base (SFT, no RL)"}


def _partner_rows(record: dict, view: str) -> list[tuple[str, list[str], dict]]:
    """(senior, the seeds that evaluated it, {seed: numbers}) for each senior of the view that ran."""
    return _seniors_that_ran(record, PARTNER_VIEWS[view])


def _seniors_that_ran(record: dict, names: tuple[str, ...]) -> list[tuple[str, list[str], dict]]:
    seeds = record["numbers"]["seeds"]
    rows = []
    for name in names:
        have = [s for s in sorted(seeds, key=int) if name in seeds[s]]
        if have:
            rows.append((name, have, {s: seeds[s][name] for s in have}))
    return rows


def partner_table(record: dict, path: str, view: str) -> str:
    lines = [f"Each cell: the seeds' values in seed order (the seeds in brackets). {provenance(record, path)}", "",
             "| senior (seeds) | solo | handoff to base | terse steps | drift (bits) | handoff minus GRPO, paired: "
             "per seed; over seeds |", "|---|---|---|---|---|---|"]
    for name, have, got in _partner_rows(record, view):
        diff = [got[s]["handoff_minus_grpo"] for s in have]
        over = t_text([m for m, _ in diff]) if name != "grpo" else ""
        per = ", ".join(f"{m:+.3f} ± {e:.3f}" for m, e in diff) if name != "grpo" else ""
        lines.append(f"| {PARTNER_LABELS[name]} ({', '.join(have)}) | "
                     + " | ".join(slash([got[s][f] for s in have], d) for f, d in
                                  (("solo_acc", 3), ("handoff_acc", 3), ("solo_terse_share", 2), ("drift_js_vs_base", 4)))
                     + f" | {per}{'; ' + over if over else ''} |")
    return "\n".join(lines) + "\n"


for _view in PARTNER_VIEWS:
    renderer("partner", _view)(lambda record, path, _v=_view: partner_table(record, path, _v))


@renderer("partner", "solo")
def partner_solo(record: dict, path: str) -> str:
    """Each non-GRPO senior's solo minus GRPO's, paired, over seeds with its t interval."""
    parts = []
    for view in PARTNER_VIEWS:
        for name, have, got in _partner_rows(record, view):
            if name == "grpo" or any(name == p[0] for p in parts):
                continue
            parts.append((name, t_text([got[s]["solo_minus_grpo"][0] for s in have])))
    return "Solo minus GRPO's, paired over problems, then over seeds: " + "; ".join(
        f"{PARTNER_LABELS[n]} {t}" for n, t in parts) + "."


# --- the notebook's partner arms, regenerated (issues 25, 26, 44 and 48 rerun for issue 63) ------------

NOTEBOOK_SENIORS = ("grpo", "tandem", "weaker", "sync", "ema", "all_tokens", "score", "grpo_score", "transfer",
                    "grpo_transfer", "grpo_answer_score", "rlt")


def _over(got: dict, have: list[str], key: str, digits: int) -> str:
    """One number of one senior: its value per seed and, over two or more seeds, their mean."""
    values = [got[s][key] for s in have]
    if len(values) == 1:
        return slash(values, digits)
    return f"{slash(values, digits)}; {statistics.fmean(values):.{digits}f}"


@renderer("partner", "notebook")
def notebook_table(record: dict, path: str) -> str:
    """Every senior of the notebook's partner table: its numbers per seed and their mean, and its handoff to the
    base minus TRL's, paired over problems per seed, then over seeds with the t interval."""
    lines = [f"Each cell: the seeds' values in seed order (the seeds in brackets), then their mean. {provenance(record, path)}",
             "", "| senior (seeds) | solo | handoff to base | handoff to weaker junior | terse steps | drift (bits) "
             "| junior CE (nats) | handoff minus TRL, paired: per seed; over seeds |", "|---|---|---|---|---|---|---|---|"]
    for name, have, got in _seniors_that_ran(record, NOTEBOOK_SENIORS):
        diff = [got[s]["handoff_minus_tandem"] for s in have]
        per = ", ".join(f"{m:+.3f} ± {e:.3f}" for m, e in diff) + f"; {t_text([m for m, _ in diff])}" if name != "tandem" else ""
        cells = [_over(got, have, k, d) for k, d in (("solo_acc", 3), ("handoff_acc", 3), ("weak_handoff_acc", 3),
                                                     ("solo_terse_share", 2), ("drift_js_vs_base", 4), ("junior_ce", 3))]
        lines.append(f"| {PARTNER_LABELS[name]} ({', '.join(have)}) | " + " | ".join(cells) + f" | {per} |")
    return "\n".join(lines) + "\n"


# What predictions 12-15, 20, 21, 25, 26 and 32 of RESULTS name, counted per seed: (senior, what is counted, the test on its numbers).
NOTEBOOK_CHECKS = (
    ("sync", "hands off to the base below TRL", lambda r: r["handoff_minus_tandem"][0] < 0),
    ("sync", "solo below TRL", lambda r: r["solo_minus_tandem"][0] < 0),
    ("ema", "hands off to the base below TRL", lambda r: r["handoff_minus_tandem"][0] < 0),
    ("ema", "solo below TRL", lambda r: r["solo_minus_tandem"][0] < 0),
    ("weaker", "solo below TRL", lambda r: r["solo_minus_tandem"][0] < 0),
    ("weaker", "hands off to the base below TRL", lambda r: r["handoff_minus_tandem"][0] < 0),
    ("weaker", "hands off to the weaker junior not above TRL", lambda r: r["weak_handoff_minus_tandem"][0] <= 0),
    ("transfer", "hands off to the base within 0.03 of TRL", lambda r: abs(r["handoff_minus_tandem"][0]) <= 0.03),
    ("score", "hands off to the base within 0.02 of TRL", lambda r: abs(r["handoff_minus_tandem"][0]) <= 0.02),
    ("score", "solo not below TRL by more than 0.02", lambda r: r["solo_minus_tandem"][0] >= -0.02),
    ("score", "terse share below 0.2", lambda r: r["solo_terse_share"] < 0.2),
    ("grpo_score", "stays terse (share at least 0.8)", lambda r: r["solo_terse_share"] >= 0.8),
    ("grpo_score", "stays terse and hands off to the base within 0.03 of GRPO",
     lambda r: r["solo_terse_share"] >= 0.8 and abs(r["handoff_minus_grpo"][0]) <= 0.03),
    ("all_tokens", "within 0.03 of TRL solo and in handoff to the base",
     lambda r: abs(r["solo_minus_tandem"][0]) <= 0.03 and abs(r["handoff_minus_tandem"][0]) <= 0.03),
    ("all_tokens", "terse share below 0.2", lambda r: r["solo_terse_share"] < 0.2),
    ("grpo_transfer", "solo not below GRPO by more than 0.01", lambda r: r["solo_minus_grpo"][0] >= -0.01),
    ("grpo_transfer", "hands off at least 0.1 above GRPO exactly where its terse share is below 0.5",
     lambda r: (r["handoff_minus_grpo"][0] >= 0.1) == (r["solo_terse_share"] < 0.5)),
    ("grpo_transfer", "terse share below 0.5", lambda r: r["solo_terse_share"] < 0.5),
    ("grpo_answer_score", "terse share below 0.4", lambda r: r["solo_terse_share"] < 0.4),
    ("grpo_answer_score", "hands off at least 0.1 above GRPO", lambda r: r["handoff_minus_grpo"][0] >= 0.1),
    ("grpo_answer_score", "hands off within 0.1 of TRL", lambda r: abs(r["handoff_minus_tandem"][0]) <= 0.1),
    ("rlt", "solves below 0.1 alone", lambda r: r["solo_acc"] < 0.1),
    ("rlt", "hands off to the base below GRPO", lambda r: r["handoff_minus_grpo"][0] < 0),
)


@renderer("partner", "notebook_checks")
def notebook_checks(record: dict, path: str) -> str:
    """For each check of the predictions, on how many of the seeds that ran the senior it holds; and each
    co-trained senior's terse share, mean over seeds, beside TRL's."""
    ran = {name: (have, got) for name, have, got in _seniors_that_ran(record, NOTEBOOK_SENIORS)}
    counts = []
    for name, what, test in NOTEBOOK_CHECKS:
        if name in ran:
            have, got = ran[name]
            counts.append(f"{PARTNER_LABELS[name]} {what}: {sum(test(got[s]) for s in have)} of {len(have)} seeds")
    terse = [f"{PARTNER_LABELS[name]} {statistics.fmean(ran[name][1][s]['solo_terse_share'] for s in ran[name][0]):.2f}"
             for name in ("tandem", "sync", "ema") if name in ran]
    return "Counted per seed: " + "; ".join(counts) + ". Terse share of solo steps, mean over seeds: " + ", ".join(terse) + "."


REPEAT_LABELS = {**PARTNER_LABELS, "demo": "the seed table (base, GRPO, TRL)"}


@renderer("partner", "repeat")
@renderer("demo", "repeat")
def partner_repeat(record: dict, path: str) -> str:
    """The seniors (demo: the seed tables) this record retrained or resumed from an earlier record's seeds
    (`record_results.py --repeats`): per seed, how many of each one's numbers are equal to the last bit, and the
    largest difference."""
    rep = record["numbers"].get("repeat_of")
    if rep is None:
        raise TandemError(f"{path}: no repeat_of; record it with `scripts/record_results.py {record['kind']} --repeats RECORD`")
    then = (f"{rep['cpu_model']}, {rep['threads']} torch thread{'s' * (rep['threads'] != 1)}, made at "
            f"{', '.join(rep['made_at'])}")
    unit = ("Each senior both records evaluated, retrained" if record["kind"] == "partner"
            else "The seed table both records hold, rerun")
    lines = [f"{unit} from the same seed: the numbers equal to the last bit "
             f"(of those both hold) and the largest absolute difference. Earlier: `{rep['record']}` ({then}). "
             f"{provenance(record, path)}", "", "| seed | senior | numbers equal | largest difference |", "|---|---|---|---|"]
    seeds = sorted(rep["seeds"], key=int)
    for seed in seeds:
        for name, c in rep["seeds"][seed].items():
            lines.append(f"| {seed} | {REPEAT_LABELS[name]} | {c['equal']} of {c['compared']} | {c['largest_difference']:.3g} |")
    same = sum(all(c["equal"] == c["compared"] for c in rep["seeds"][s].values()) for s in seeds)
    lines += ["", f"Every compared number equal on {same} of {len(seeds)} seeds."]
    return "\n".join(lines) + "\n"


# --- leaks and prefix transfer (issues 37 and 44, regenerated for issue 63) ------------------------

LEAK_ARMS = ("grpo", "tandem", "score", "grpo_score", "transfer", "grpo_transfer", "grpo_answer_score")


def _leak_cell(measure: list) -> str:
    acc, kept = measure
    return "— (0)" if not kept else f"{acc:.3f} ({kept})"


@renderer("leak", "table")
def leak_table(record: dict, path: str) -> str:
    """pass@1 of each measure per arm and seed, with the problems it scored (of 200)."""
    seeds = record["numbers"]["seeds"]
    order = seed_list(record)
    arms = [a for a in LEAK_ARMS if all(a in seeds[s]["arms"] for s in order)]
    measures = list(seeds[order[0]]["arms"]["grpo"]["measures"])
    lines = [f"pass@1 (n = 4) per seed, with the problems scored in brackets (of 200; a problem with no clean, or no "
             f"continued, sample is left out). {provenance(record, path)}", "",
             "| measure | senior | " + " | ".join(f"seed {s}" for s in order) + " |", "|" + "---|" * (2 + len(order))]
    for m in measures:
        for a in arms:
            lines.append(f"| {m} | {PARTNER_LABELS[a]} | "
                         + " | ".join(_leak_cell(seeds[s]["arms"][a]["measures"][m]) for s in order) + " |")
    return "\n".join(lines) + "\n"


@renderer("leak", "paired")
def leak_paired(record: dict, path: str) -> str:
    """Each pair's difference per measure: per seed (± SE over the problems both score, how many), then over seeds."""
    order = seed_list(record)
    lines = [f"Each pair paired over the problems both arms score (± SE over problems; problems), then over the seeds "
             f"that scored any. {provenance(record, path)}", "",
             "| pair | measure | " + " | ".join(f"seed {s}" for s in order) + " | over seeds |", "|" + "---|" * (3 + len(order))]
    for pair, measures in record["numbers"]["paired"].items():
        first, second = pair.split("-")
        for m, per in measures.items():
            cells = [f"{d:+.3f} ± {e:.3f} ({k})" if k else "— (0)" for d, e, k in (per[s] for s in order)]
            scored = [per[s][0] for s in order if per[s][2]]
            lines.append(f"| {PARTNER_LABELS[first]} − {PARTNER_LABELS[second]} | {m} | " + " | ".join(cells)
                         + f" | {t_text(scored) if scored else '—'} |")
    return "\n".join(lines) + "\n"


def _prefix_fractions(pair: dict) -> list[str]:
    """A pair's prefix-transfer measures over every response (not those over correct solo responses)."""
    return [m for m in pair if m.startswith("prefix") and "correct" not in m]


@renderer("leak", "checks")
def leak_checks(record: dict, path: str) -> str:
    """What predictions 16 and 17 of RESULTS name, counted per seed."""
    seeds, paired = record["numbers"]["seeds"], record["numbers"]["paired"]["tandem-grpo"]
    order = seed_list(record)

    def rates(arm: str, key: str) -> list[float]:
        return [seeds[s]["arms"][arm]["rates"][key] for s in order]

    visible = rates("tandem", "handoff visible")
    junior = [min(g, r) for g, r in zip(rates("grpo", "junior wrote the answer"), rates("tandem", "junior wrote the answer"))]
    budget = max(v for a in ("grpo", "tandem") for m in ("solo", "handoff") for v in rates(a, f"{m} budget hit"))
    prefix = _prefix_fractions(paired)
    terse = [s for s in order if seeds[s]["grpo_terse_share"] >= 0.9]
    positive = [s for s in terse if all(paired[m][s][2] and paired[m][s][0] > 0 for m in prefix)]
    clean = [seeds[s]["arms"]["tandem"]["measures"]["handoff, no leak"][1] for s in order]
    n = len(order)
    return (f"Counted per seed ({', '.join(order)}): TRL's answer visible before the junior's last turn in at least "
            f"90% of its determined handoffs on {sum(v >= 0.9 for v in visible)} of {n} (TRL's: {slash(visible)}; "
            f"GRPO's: {slash(rates('grpo', 'handoff visible'))}); the junior wrote at least 95% of the final answers "
            f"of both on {sum(v >= 0.95 for v in junior)} of {n}; the largest share of responses that hit the budget, "
            f"either arm, solo or handoff, on any seed: {budget:.3f}. GRPO's terse share "
            f"{slash([seeds[s]['grpo_terse_share'] for s in order], 2)}: at least 0.9 on {len(terse)} of {n}, and "
            f"TRL − GRPO prefix transfer positive at every fraction on {len(positive)} of those {len(terse)}. "
            f"TRL's problems with a clean sample: {', '.join(map(str, clean))} (of 200).")


@renderer("leak", "score_checks")
def leak_score_checks(record: dict, path: str) -> str:
    """What prediction 23 of RESULTS names, counted per seed: TRL + score minus TRL within 0.04 at every prefix
    fraction; GRPO + score minus GRPO at f = 0.3, per seed (the terse condition is the partner record's)."""
    paired, order = record["numbers"]["paired"], seed_list(record)
    if "score-tandem" not in paired or "grpo_score-grpo" not in paired:
        raise TandemError(f"{path}: no score-tandem or grpo_score-grpo pair; run leak_demo where both score arms trained")
    trl, grpo = paired["score-tandem"], paired["grpo_score-grpo"]
    prefix = _prefix_fractions(trl)
    within = [s for s in order if all(trl[m][s][2] and abs(trl[m][s][0]) <= 0.04 for m in prefix)]
    at_03 = [grpo["prefix 0.3"][s][0] for s in order]
    per_fraction = "; ".join(f"{m}: {slash([trl[m][s][0] for s in order], signed=True)}" for m in prefix)
    return (f"Counted per seed ({', '.join(order)}): TRL + score − TRL within 0.04 at every prefix fraction on "
            f"{len(within)} of {len(order)} ({per_fraction}); GRPO + score − GRPO at f = 0.3: "
            f"{slash(at_03, signed=True)}, within 0.05 {on_seeds([s for s, d in zip(order, at_03) if abs(d) <= 0.05])}.")


@renderer("leak", "transfer_checks")
def leak_transfer_checks(record: dict, path: str) -> str:
    """What prediction 28 of RESULTS names, per seed: GRPO + score (answer) and GRPO + transfer minus GRPO at
    f = 0.3 (the terse split is the partner record's), and TRL + transfer minus TRL within 0.03 at every fraction."""
    paired, order = record["numbers"]["paired"], seed_list(record)
    need = ("grpo_answer_score-grpo", "grpo_transfer-grpo", "transfer-tandem")
    if any(p not in paired for p in need):
        raise TandemError(f"{path}: needs the pairs {', '.join(need)}; run leak_demo where those arms trained")
    score, transfer = ([paired[p]["prefix 0.3"][s][0] for s in order] for p in need[:2])
    trl = paired["transfer-tandem"]
    within = [s for s in order if all(trl[m][s][2] and abs(trl[m][s][0]) <= 0.03 for m in _prefix_fractions(trl))]
    n = len(order)
    return (f"Counted per seed ({', '.join(order)}): GRPO + score (answer) − GRPO at f = 0.3: {slash(score, signed=True)}, "
            f"at least +0.1 on {sum(d >= 0.1 for d in score)} of {n}; GRPO + the project's variant − GRPO at f = 0.3: "
            f"{slash(transfer, signed=True)}, at least +0.05 {on_seeds([s for s, d in zip(order, transfer) if d >= 0.05])}; "
            f"TRL + the project's variant − TRL within 0.03 at every prefix fraction on {len(within)} of {n}.")


# --- Maj@k (issue 48's rest of the comparison, regenerated for issue 63) ---------------------------

@renderer("majority", "table")
def majority_table(record: dict, path: str) -> str:
    """Per senior: pass@1 and Maj@k per seed, Maj@k minus pass@1 per seed, and Maj@k minus GRPO's over seeds."""
    k, seeds = record["numbers"]["k"], record["numbers"]["seeds"]
    order = seed_list(record)
    maj = f"maj@{k}"
    arms = [a for a in seeds[order[0]] if all(a in seeds[s] for s in order)]
    lines = [f"{k} solo samples per test problem; Maj@{k}: the share of the 200 problems whose majority answer is "
             f"right. Each cell: seed {' / '.join(order)}. {provenance(record, path)}", "",
             f"| senior | pass@1 | Maj@{k} | Maj@{k} minus pass@1 | Maj@{k} minus GRPO's, over seeds |",
             "|---|---|---|---|---|"]
    for a in arms:
        gap = [seeds[s][a][maj] - seeds[s]["grpo"][maj] for s in order]
        lines.append(f"| {PARTNER_LABELS[a]} | {slash([seeds[s][a]['pass@1'] for s in order])} | "
                     f"{slash([seeds[s][a][maj] for s in order])} | "
                     f"{slash([seeds[s][a][maj] - seeds[s][a]['pass@1'] for s in order], signed=True)} | "
                     f"{t_text(gap) if a != 'grpo' else ''} |")
    return "\n".join(lines) + "\n"


@renderer("majority", "checks")
def majority_checks(record: dict, path: str) -> str:
    """What predictions 18, 27 and 33 of RESULTS name, counted per seed (27's and 33's where their arms ran)."""
    k, seeds = record["numbers"]["k"], record["numbers"]["seeds"]
    order, maj = seed_list(record), f"maj@{k}"
    gain = {s: {a: r[maj] - r["pass@1"] for a, r in seeds[s].items()} for s in order}
    base_most = sum(all(gain[s]["base"] > g for a, g in gain[s].items() if a != "base") for s in order)
    trl_above = sum(seeds[s]["tandem"][maj] > seeds[s]["grpo"][maj] for s in order)
    at_least = [f"{PARTNER_LABELS[a]}'s Maj@{k} at least GRPO's on {sum(seeds[s][a][maj] >= seeds[s]['grpo'][maj] for s in order)} "
                f"of {len(order)}" for a in ("grpo_answer_score", "grpo_transfer", "grpo_score") if all(a in seeds[s] for s in order)]
    if all("score" in seeds[s] for s in order):
        at_least.append(f"{PARTNER_LABELS['score']}'s Maj@{k} within 0.03 of its pass@1 on "
                        f"{sum(abs(gain[s]['score']) <= 0.03 for s in order)} of {len(order)}")
    return (f"Counted per seed ({', '.join(order)}): the base's Maj@{k} minus pass@1 above every trained senior's on "
            f"{base_most} of {len(order)}; TRL's Maj@{k} above GRPO's on {trl_above} of {len(order)}"
            + "".join(f"; {a}" for a in at_least) + ".")


# --- distillation (issues 38 and 44, regenerated for issue 63) -------------------------------------

@renderer("distill", "table")
def distill_table(record: dict, path: str) -> str:
    """Per teacher, per seed: its traces, the student before and after, the gain; then the students' pairs."""
    seeds, pairs = record["numbers"]["seeds"], record["numbers"]["pairs"]
    order = seed_list(record)
    teachers = [t for t in seeds[order[0]] if all(t in seeds[s] for s in order)]
    cell = lambda t, f, d=3: slash([seeds[s][t][f] for s in order], d)  # noqa: E731
    lines = [f"Each cell: seed {' / '.join(order)}. {provenance(record, path)}", "",
             "| teacher | traces | traces correct | traces terse | student before | student after | gain ± SE over "
             "problems | student terse |", "|---|---|---|---|---|---|---|---|"]
    for t in teachers:
        gains = ", ".join(f"{seeds[s][t]['gain']:+.3f} ± {seeds[s][t]['gain_se']:.3f}" for s in order)
        lines.append(f"| {PARTNER_LABELS[t]} | {' / '.join(str(seeds[s][t]['n_traces']) for s in order)} | "
                     f"{cell(t, 'traces_correct_fraction')} | {cell(t, 'teacher_terse', 2)} | {cell(t, 'accuracy_before')} | "
                     f"{cell(t, 'accuracy_after')} | {gains} | {cell(t, 'student_terse', 2)} |")
    lines += ["", "| students' difference, paired over problems | per seed | over seeds |", "|---|---|---|"]
    for name, per in pairs.items():
        first, second = name.split(" - ")
        have = [s for s in order if s in per]
        lines.append(f"| {PARTNER_LABELS[first]} − {PARTNER_LABELS[second]} | "
                     + ", ".join(f"{per[s][0]:+.3f} ± {per[s][1]:.3f}" for s in have)
                     + f" | {t_text([per[s][0] for s in have])} |")
    return "\n".join(lines) + "\n"


@renderer("distill", "checks")
def distill_checks(record: dict, path: str) -> str:
    """What predictions 19, 24, 29, 30, 35 and 37 of RESULTS name, counted per seed (each where its teachers ran)."""
    seeds, pairs = record["numbers"]["seeds"], record["numbers"]["pairs"]
    order = seed_list(record)
    rows = [seeds[s][t] for s in order for t in seeds[s]]
    above = sum(r["gain"] >= 6 * r["gain_se"] for r in rows)
    follows = sum(abs(r["student_terse"] - r["teacher_terse"]) <= 0.15 for r in rows)
    trl = pairs.get("tandem - grpo", {})
    above_grpo = f"TRL's student above GRPO's on {sum(trl[s][0] > 0 for s in trl)} of {len(trl)}; " if trl else ""
    return (f"Counted per seed ({', '.join(order)}): {above_grpo}students at least 6 paired SE above the base: "
            f"{above} of {len(rows)}; students whose terse "
            f"share is within 0.15 of their teacher's traces: {follows} of {len(rows)}." + _student_pairs(pairs)
            + _rlt_student(seeds, order) + _rlt_copies(seeds, order))


def _rlt_student(seeds: dict, order: list[str]) -> str:
    """Prediction 30's count, where RLT's writer was a teacher: its student's gain over its own base."""
    have = [s for s in order if "rlt" in seeds[s]]
    if not have:
        return ""
    gains = [seeds[s]["rlt"]["gain"] for s in have]
    return (f" RLT's student at least 0.2 below its base: {sum(g <= -0.2 for g in gains)} of {len(have)}; its gain over "
            f"seeds {t_text(gains)}.")


def _rlt_copies(seeds: dict, order: list[str]) -> str:
    """Prediction 37's counts, where RLT's writer's traces were read: its copies, and the warm-up writer's beside it."""
    have = [s for s in order if "copies" in seeds[s].get("rlt", {})]
    if not have:
        return ""
    copies = {s: seeds[s]["rlt"]["copies"] for s in have}
    text = (f" RLT's writer's traces carrying every number of the solution on at least 0.9: "
            f"{sum(c['carries_numbers'] >= 0.9 for c in copies.values())} of {len(have)}; its exact copies below 0.5: "
            f"{sum(c['exact'] < 0.5 for c in copies.values())} of {len(have)}.")
    both = [s for s in have if "copies" in seeds[s].get("rlt_warmup", {})]
    if both:
        warm = {s: seeds[s]["rlt_warmup"]["copies"] for s in both}
        near = sum(all(abs(copies[s][f] - warm[s][f]) <= 0.05 for f in ("carries_numbers", "exact")) for s in both)
        text += f" The warm-up writer's two shares both within 0.05 of the RL writer's: {near} of {len(both)}."
    return text


@renderer("distill", "copies")
def distill_copies(record: dict, path: str) -> str:
    """RLT's teachers per seed: their traces' copy shares (`tandem_app.experiments.trace_copies`) and their students."""
    seeds = record["numbers"]["seeds"]
    rows = [(s, t) for s in seed_list(record) for t in seeds[s] if "copies" in seeds[s][t]]
    if not rows:
        raise TandemError(f"{path}: no teacher's traces were read for copies; record an RLT teacher's distillation "
                          f"made by this checkout's distill_demo")
    lines = [f"Each RLT teacher's distillation traces: the share whose explanation states every number of the solution "
             f"it saw (each as often), and the share that is the solution's exact text; then its student. "
             f"{provenance(record, path)}", "",
             "| seed | teacher | traces | graded right | carry the numbers | exact copies | student before -> after "
             "| gain ± SE |", "|---|---|---|---|---|---|---|---|"]
    for s, t in rows:
        r = seeds[s][t]
        lines.append(f"| {s} | {PARTNER_LABELS[t]} | {r['n_traces']} | {r['traces_correct_fraction']:.3f} | "
                     f"{r['copies']['carries_numbers']:.3f} | {r['copies']['exact']:.3f} | "
                     f"{r['accuracy_before']:.3f} -> {r['accuracy_after']:.3f} | {r['gain']:+.3f} ± {r['gain_se']:.3f} |")
    return "\n".join(lines) + "\n"


# Predictions 24, 29 and 35 on the students' pairs: (pair, what is counted, the test on its per-seed difference)
STUDENT_PAIR_CHECKS = (
    ("score - tandem", "TRL + score's student within 0.05 of TRL's", lambda d: abs(d) <= 0.05),
    ("grpo_answer_score - grpo", "GRPO + score (answer)'s student above GRPO's", lambda d: d > 0),
    ("transfer - tandem", "TRL + the project's variant's student within 0.03 of TRL's", lambda d: abs(d) <= 0.03),
    ("rlt - rlt_warmup", "RLT's writer's student within 0.05 of its warm-up's", lambda d: abs(d) <= 0.05),
)


def _student_pairs(pairs: dict) -> str:
    """Each check of STUDENT_PAIR_CHECKS whose pair ran: on how many seeds it holds, and the differences."""
    return "".join(f" {what}: {sum(test(v[0]) for v in d.values())} of {len(d)} "
                   f"({slash([d[s][0] for s in sorted(d, key=int)], signed=True)})."
                   for pair, what, test in STUDENT_PAIR_CHECKS if (d := pairs.get(pair)))


# --- training curves (RLT's setting and issue 48's arms, regenerated for issue 63) -----------------

CLOSED = f"{PARTNER_SCORE}/closed"  # the share of RLT explanations closed with the tag


def _first_last(blocks: dict, key: str, digits: int = 3) -> str:
    """A metric's mean over the first block of steps, then over the last."""
    if key not in blocks:
        return "—"
    return f"{blocks[key][0]:.{digits}f} -> {blocks[key][-1]:.{digits}f}"


def _unfinished(record: dict) -> str:
    """The runs the record names as stopped before their end (not recorded), as a sentence; none: nothing."""
    stopped = record["numbers"].get("unfinished") or {}
    if not stopped:
        return ""
    return (" Stopped before their end, so not recorded: " + "; ".join(
        f"seed {s}: {', '.join(PARTNER_LABELS.get(a, a) for a in stopped[s])}" for s in sorted(stopped, key=int)) + ".")


def _block_span(record: dict, arm: dict) -> str:
    n = record["numbers"]["block"]
    return f"steps 1-{n} -> {arm['steps'] - n + 1}-{arm['steps']}"


def _validation_steps(arms: dict) -> str:
    """`, at steps 0, 20, ...` when every shown run validated at the same steps; else `, at the steps it ran`."""
    steps = {tuple(sorted((a.get("validation") or {}), key=int)) for a in arms.values()}
    return f", at steps {', '.join(next(iter(steps)))}" if len(steps) == 1 and next(iter(steps)) else ", at the steps it ran"


def _rlt_arms(record: dict, path: str) -> dict:
    """{seed: RLT's writer's curves} over the seeds that ran it; none: one error naming the fix."""
    seeds = record["numbers"]["seeds"]
    arms = {s: seeds[s]["rlt"] for s in seed_list(record) if "rlt" in seeds[s]}
    if not arms:
        raise TandemError(f"{path}: no seed holds RLT's writer (`partner-rlt`); record the `--partner rlt` seeds")
    return arms


@renderer("curves", "rlt")
def curves_rlt(record: dict, path: str) -> str:
    """RLT's writer per seed: its reward's, length's and format's block means, first and last block and spread;
    then what prediction 31 of RESULTS names, counted per seed."""
    arms = _rlt_arms(record, path)
    order = list(arms)
    lines = [f"RLT's writer, means over blocks of {record['numbers']['block']} steps ({_block_span(record, arms[order[0]])}). "
             f"`closed`: the share of explanations closed with the tag; graded right: the share of explanations the "
             f"grader scores right (not in the reward); the worst log-prob and the largest KL term: the score's "
             f"per-response extremes, block means; greedy validation: the trainer's{_validation_steps(arms)}."
             f"{_unfinished(record)} {provenance(record, path)}", "",
             "| seed | partner score | its block means' span | response tokens | closed, lowest to highest block "
             "| zero-variance groups, lowest to highest block | graded right | the student's worst log-prob | the "
             "largest KL term | greedy validation, plain prompts |", "|---|---|---|---|---|---|---|---|---|---|"]
    for s in order:
        b = arms[s]["blocks"]
        val = arms[s].get("validation") or {}
        greedy = " / ".join(f"{val[k]:.3f}" for k in sorted(val, key=int)) if val else "—"
        lines.append(f"| {s} | {_first_last(b, PARTNER_SCORE)} | {max(b[PARTNER_SCORE]) - min(b[PARTNER_SCORE]):.3f} | "
                     f"{_first_last(b, RESPONSE_LENGTH, 1)} ({b[RESPONSE_LENGTH][-1] / b[RESPONSE_LENGTH][0] - 1:+.0%}) | "
                     f"{min(b[CLOSED]):.3f} to {max(b[CLOSED]):.3f} | "
                     f"{min(b[ZERO_VARIANCE_GROUPS]):.2f} to {max(b[ZERO_VARIANCE_GROUPS]):.2f} | {_first_last(b, ACCURACY)} | "
                     f"{_first_last(b, f'{PARTNER_SCORE}/logprob_min', 2)} | {_first_last(b, f'{PARTNER_SCORE}/kl_max', 2)} | "
                     f"{greedy} |")
    closed = sum(min(arms[s]["blocks"][CLOSED][0], arms[s]["blocks"][CLOSED][-1]) >= 0.9
                 for s in order)
    length = sum(abs(arms[s]["blocks"][RESPONSE_LENGTH][-1] / arms[s]["blocks"][RESPONSE_LENGTH][0] - 1) <= 0.10 for s in order)
    lines += ["", f"Counted per seed ({', '.join(order)}): `closed` at least 0.9 in the first and the last block on "
              f"{closed} of {len(order)}; the last block's mean length within 10% of the first's on {length} of {len(order)}."]
    return "\n".join(lines) + "\n"


RLT_BLOCK_COLUMNS = (("partner score", PARTNER_SCORE, 3), ("log-prob mean", f"{PARTNER_SCORE}/logprob_mean", 3),
                     ("worst log-prob", f"{PARTNER_SCORE}/logprob_min", 2), ("KL mean", f"{PARTNER_SCORE}/kl_mean", 3),
                     ("largest KL term", f"{PARTNER_SCORE}/kl_max", 2), ("closed", CLOSED, 3),
                     ("response tokens", RESPONSE_LENGTH, 1), ("zero-variance groups", ZERO_VARIANCE_GROUPS, 2),
                     ("graded right", ACCURACY, 3), ("step seconds", TIME_STEP, 1))


@renderer("curves", "rlt_blocks")
def curves_rlt_blocks(record: dict, path: str) -> str:
    """RLT's writer, every block of every seed: the notebook's per-block table, with the step time."""
    arms = _rlt_arms(record, path)
    n = record["numbers"]["block"]
    lines = [f"RLT's writer, means over each block of {n} steps; the score's terms as its step logs them (the worst "
             f"log-prob and the largest KL term: per-response extremes, averaged); graded right: the share of "
             f"explanations the grader scores right (not in the reward); step seconds under the recording run's load."
             f" {provenance(record, path)}", "",
             "| seed | steps | " + " | ".join(c for c, _, _ in RLT_BLOCK_COLUMNS) + " |",
             "|---|---|" + "---|" * len(RLT_BLOCK_COLUMNS)]
    for s, arm in arms.items():
        for i in range(arm["steps"] // n):
            cells = (format(arm["blocks"][k][i], f".{d}f") if k in arm["blocks"] else "—" for _, k, d in RLT_BLOCK_COLUMNS)
            lines.append(f"| {s} | {i * n + 1}-{(i + 1) * n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _or_dash(value: float | None, spec: str) -> str:
    """`value` formatted, or `—` where it was not measured."""
    return "—" if value is None else format(value, spec)


@renderer("curves", "rlt_warmup")
def curves_rlt_warmup(record: dict, path: str) -> str:
    """RLT's writer's warm-up per seed (its SFT loss, first and last logged step) and the wall seconds of the warm-up
    and of RL."""
    warmups = record["numbers"].get("warmups") or {}
    arms = _rlt_arms(record, path)
    if not warmups:
        raise TandemError(f"{path}: no seed holds RLT's writer's warm-up (`rlt-warmup`); record it with the recorder "
                          f"of this checkout")
    lines = [f"RLT's writer's SFT warm-up: its loss per response token at the first and the last logged step; wall "
             f"seconds of the warm-up and of RL under the recording run's load. {provenance(record, path)}", "",
             "| seed | warm-up loss | warm-up seconds | RL seconds (steps) |", "|---|---|---|---|"]
    for s in sorted(warmups, key=int):
        loss = warmups[s]["loss"]
        first, last = min(loss, key=int), max(loss, key=int)
        rl = f"{_or_dash(arms[s].get('wall_seconds'), '.0f')} ({arms[s]['steps']})" if s in arms else "—"
        lines.append(f"| {s} | {loss[first]:.3f} (step {first}) -> {loss[last]:.4f} (step {last}) | "
                     f"{_or_dash(warmups[s]['wall_seconds'], '.0f')} | {rl} |")
    return "\n".join(lines) + "\n"


CURVE_ARMS = ("grpo", "tandem", "transfer", "grpo_transfer", "grpo_answer_score")


@renderer("curves", "transfer")
def curves_transfer(record: dict, path: str) -> str:
    """Issue 48's arms per seed: training accuracy, terse share, the transfer reward and the score's terms, each the
    first block's mean, then the last block's."""
    seeds = record["numbers"]["seeds"]
    order = seed_list(record)
    shown = [seeds[s][a] for s in order for a in CURVE_ARMS if a in seeds[s]]
    span = f" ({_block_span(record, shown[0])})" if len({arm["steps"] for arm in shown}) == 1 else ""
    lines = [f"Means over blocks of {record['numbers']['block']} steps, the first block, then the last{span}. Terse: the "
             f"share of training responses' steps in the terse notation; R_transfer: the transfer reward (0 where the gold cannot be located); the score's terms: its mean "
             f"log-prob of the target and its mean KL term.{_unfinished(record)} {provenance(record, path)}", "",
             "| senior | seed | training accuracy | terse | R_transfer | gold not located | score's log-prob | score's KL |",
             "|---|---|---|---|---|---|---|---|"]
    for a in CURVE_ARMS:
        for s in order:
            if a in seeds[s]:
                b = seeds[s][a]["blocks"]
                lines.append(f"| {PARTNER_LABELS[a]} | {s} | {_first_last(b, ACCURACY)} | {_first_last(b, TERSE_FRACTION, 2)} | "
                             f"{_first_last(b, TRANSFER_REWARD_MEAN)} | {_first_last(b, TRANSFER_UNDETERMINED_FRACTION, 2)} | "
                             f"{_first_last(b, f'{PARTNER_SCORE}/logprob_mean')} | {_first_last(b, f'{PARTNER_SCORE}/kl_mean')} |")
    return "\n".join(lines) + "\n"


@renderer("curves", "cost")
def curves_cost(record: dict, path: str) -> str:
    """Each partner-rewarded run's step time over its step time less the partner pass, over all its steps: the
    pass's cost inside one run (runs beside each other on a shared machine are not compared with each other)."""
    seeds = record["numbers"]["seeds"]
    order = seed_list(record)
    arms = [a for a in dict.fromkeys(a for s in order for a in seeds[s])
            if all(TIME_PARTNER in seeds[s].get(a, {}).get("blocks", {}) for s in order)]
    if not arms:
        raise TandemError(f"{path}: no run logged {TIME_PARTNER} on every seed; record partner-rewarded runs")
    lines = [f"Mean step time over the mean step time less the partner pass (the score or the receiver's "
             f"continuations), over all steps of each run; seconds under the recording run's load, so only this ratio "
             f"is read.{_unfinished(record)} {provenance(record, path)}", "",
             f"| senior | step time / (step time − partner pass), seed {' / '.join(order)} | mean step time (s) |",
             "|---|---|---|"]
    for a in arms:
        step = [statistics.fmean(seeds[s][a]["blocks"][TIME_STEP]) for s in order]
        partner = [statistics.fmean(seeds[s][a]["blocks"][TIME_PARTNER]) for s in order]
        lines.append(f"| {PARTNER_LABELS.get(a, a)} | {slash([t / (t - p) for t, p in zip(step, partner)], 2)} | "
                     f"{slash(step, 1)} |")
    return "\n".join(lines) + "\n"


CONTROL_KINDS = ("own", "shuffled", "empty", "sampled", "shuffled_gold_total", "own_wrong_total", "other_notation")


@renderer("partner-score-controls", "table")
def controls_table(record: dict, path: str) -> str:
    bases = record["numbers"]["bases"]
    lines = [f"The base's mean log-prob per target token after each explanation (target `answer`). "
             f"{provenance(record, path)}", "",
             "| base (problems; bench's commit) | " + " | ".join(f"`{k}`" for k in CONTROL_KINDS) + " |",
             "|" + "---|" * (len(CONTROL_KINDS) + 1)]
    for name, b in bases.items():
        lines.append(f"| {name} ({b['n']}; {b['bench_commit']}) | " + " | ".join(
            format(b["mean_score"][k], ".3f") if k in b["mean_score"] else "n/a" for k in CONTROL_KINDS) + " |")
    return "\n".join(lines) + "\n"


@renderer("partner-score-controls", "pairs")
def controls_pairs(record: dict, path: str) -> str:
    """Each pair: the share of problems where the first explanation scores higher, and what a win means."""
    out = []
    for name, b in record["numbers"]["bases"].items():
        pairs = "; ".join(f"`{v['a']}` over `{v['b']}` on {v['a_beats_b_fraction']:.3f} of problems (mean gap "
                          f"{v['mean_a_minus_b']:+.3f}; a win would mean {v['a_wins_means']})" for v in b["pairwise"].values())
        verdict = {True: "yes", False: "no", None: "tied"}[b["reads_last_number"]]
        out.append(f"On the {name} base ({b['n']} problems): {pairs}. Reads the last stated number: {verdict}.")
    return " ".join(out)


VALIDITY_KINDS = ("own", "shuffled", "empty", "sampled")  # the notebook's validity table


def _best(base: dict) -> str:
    """The explanation of VALIDITY_KINDS after which the base scores the target highest."""
    return max(VALIDITY_KINDS, key=lambda k: base["mean_score"][k])


def _swap_wins(base: dict) -> float:
    """The share of problems where another problem's solution with the gold as its last total scores above the own
    solution with a wrong last total (a tie is no win)."""
    pair = base["pairwise"]["own_wrong_total_vs_shuffled_gold_total"]
    return 1 - pair["a_beats_b_fraction"] - pair["ties"] / base["n"]


@renderer("partner-score-controls", "validity")
def controls_validity(record: dict, path: str) -> str:
    """The notebook's validity table per base and target, then what prediction 36 of RESULTS counts per target."""
    bases = record["numbers"]["bases"]
    temperatures = sorted({b["temperature"] for b in bases.values() if "temperature" in b})
    at = f", at temperature {' / '.join(format(t, 'g') for t in temperatures)}" if temperatures else ""
    lines = [f"The base's mean log-prob per target token after each explanation{at}; own beats shuffled: "
             f"the share of problems where the own solution scores above another problem's; best: the explanation with "
             f"the highest mean; swap: the share of problems where another problem's solution with only its last total "
             f"changed to the gold scores above the own solution with only its last total wrong. "
             f"{provenance(record, path)}",
             "", "| base (its demo; problems) | target | " + " | ".join(f"`{k}`" for k in VALIDITY_KINDS)
             + " | own beats shuffled | best | swap |", "|---|---|" + "---|" * (len(VALIDITY_KINDS) + 3)]
    for name, b in bases.items():
        demo = b.get("demo")
        made_by = f"{'quick demo' if demo['quick'] else 'demo'} seed {demo['seed']}; " if demo else ""
        base = f"{name} ({made_by}{b['n']})"
        lines.append(f"| {base} | `{b['target']}` | " + " | ".join(
            format(b["mean_score"][k], ".4f") for k in VALIDITY_KINDS)  # 4 places: `own` is near 0 with `answer`
            + f" | {b['own_beats_shuffled_fraction']:.3f} | `{_best(b)}` | {_swap_wins(b):.3f} |")
    solution = [b for b in bases.values() if b["target"] == "solution"]
    answer = [b for b in bases.values() if b["target"] == "answer"]
    counts = []
    if solution:
        invalid = sum(b["own_beats_shuffled_fraction"] < 0.9 and _best(b) == "empty" for b in solution)
        counts.append(f"target `solution`: own beats shuffled below 0.9 and `empty` best on {invalid} of "
                      f"{len(solution)} bases")
    if answer:
        passes = sum(b["own_beats_shuffled_fraction"] >= 0.9 for b in answer)
        swaps = sum(_swap_wins(b) >= 0.5 for b in answer)
        counts.append(f"target `answer`: own beats shuffled on at least 0.9 of problems on {passes} of {len(answer)} "
                      f"bases, and the swap at least 0.5 on {swaps} of {len(answer)}")
    return "\n".join(lines) + "\n\nCounted: " + "; ".join(counts) + ".\n"


def _gold_gap(arm: dict) -> float | None:
    """Solo accuracy on the golds the transfer variant skips minus on the rest; None where either group is empty."""
    one, more = arm["skipped"]["accuracy"], arm["paid"]["accuracy"]
    return None if one is None or more is None else one - more


@renderer("solo-by-gold", "table")
def solo_by_gold_table(record: dict, path: str) -> str:
    """Per seed and senior: solo accuracy on the golds the transfer variant skips, on the rest, the gap; then
    prediction 38's count."""
    seeds = record["numbers"]["seeds"]
    order = seed_list(record)
    lines = [f"Solo accuracy in the demo's evaluation (its test problems, sampled as it samples), split by the gold: "
             f"those the project's transfer variant skips with no transfer reward (too short to locate in a response, "
             f"`tandem.rewards.answer_text.gold_key`: one digit on this task), and the rest, where it pays; gap: the "
             f"first minus the second. {provenance(record, path)}", "",
             "| seed | senior | one-digit golds, skipped (problems) | longer golds, paid (problems) | gap | gap minus "
             "the base's |", "|---|---|---|---|---|---|"]
    for s in order:
        base_gap = _gold_gap(seeds[s]["base"])
        for arm, r in seeds[s].items():
            gap = _gold_gap(r)
            extra = "" if arm == "base" or gap is None or base_gap is None else format(gap - base_gap, "+.3f")
            lines.append(f"| {s} | {PARTNER_LABELS.get(arm, arm)} | {_or_dash(r['skipped']['accuracy'], '.3f')} "
                         f"({r['skipped']['problems']}) | {_or_dash(r['paid']['accuracy'], '.3f')} "
                         f"({r['paid']['problems']}) | {_or_dash(gap, '+.3f')} | {extra} |")
    gaps = {s: (_gold_gap(seeds[s]["transfer"]), _gold_gap(seeds[s]["base"])) for s in order if "transfer" in seeds[s]}
    have = [s for s, (gap, _) in gaps.items() if gap is not None]
    held = [s for s in have if gaps[s][0] >= 0.15 and gaps[s][1] is not None and gaps[s][0] - gaps[s][1] >= 0.1]
    if have:
        lines += ["", f"TRL + transfer's gap at least 0.15 and at least 0.1 above the base's: {on_seeds(held)} of "
                      f"{', '.join(have)}."]
    return "\n".join(lines) + "\n"


def _share(groups: list[dict], n: int) -> float | None:
    """Solo accuracy pooled over groups of problems ({problems, correct}, n samples a problem); None if there are none."""
    problems = sum(g["problems"] for g in groups)
    return sum(g["correct"] for g in groups) / (n * problems) if problems else None


def _difficulty_gaps(arm: dict) -> tuple[float | None, float | None, int, int]:
    """A senior's raw gold gap, its difficulty-adjusted gap (in each base-count group holding both kinds of gold, the
    skipped golds' accuracy minus the paid ones', weighted by the group's paid golds), and how many paid golds of how
    many those groups hold."""
    n, strata = arm["n"], list(arm["by_base_count"].values())
    one, more = (_share([g[kind] for g in strata if kind in g], n) for kind in ("skipped", "paid"))
    raw = None if one is None or more is None else one - more
    both = [g for g in strata if "skipped" in g and "paid" in g]
    weight = sum(g["paid"]["problems"] for g in both)
    adjusted = (sum(g["paid"]["problems"] * (_share([g["skipped"]], n) - _share([g["paid"]], n)) for g in both)
                / weight if weight else None)
    return raw, adjusted, weight, sum(g["paid"]["problems"] for g in strata if "paid" in g)


def _prediction_39(seeds: dict, order: list[str]) -> list[str]:
    """Prediction 39's four clauses, each with the adjusted gaps it reads; a clause whose seniors are missing is
    said to be unread."""
    adj = {s: {arm: _difficulty_gaps(r)[1] for arm, r in seeds[s].items()} for s in order}

    def gap(s: str, arm: str) -> float | None:
        return adj.get(s, {}).get(arm)

    t1, g1, r1 = gap("1", "transfer"), gap("1", "grpo"), gap("1", "tandem")
    lines = []
    if t1 is None or g1 is None or r1 is None:
        return ["Prediction 39: seed 1's TRL + transfer, GRPO and TRL are not all in this record; not read."]
    lines.append(f"(a) seed 1's TRL + transfer adjusted gap {t1:+.3f}, at least 0.25: {'held' if t1 >= 0.25 else 'failed'}.")
    lines.append(f"(b) seed 1's GRPO adjusted gap {g1:+.3f}, at most half of TRL + transfer's ({t1 / 2:+.3f}): "
                 f"{'held' if g1 <= t1 / 2 else 'failed'}.")
    lines.append(f"(c) seed 1's TRL adjusted gap {r1:+.3f}, within 0.05 of 0: {'held' if abs(r1) <= 0.05 else 'failed'}.")
    others = [s for s in order if s != "1" and gap(s, "transfer") is not None and gap(s, "tandem") is not None]
    close = [s for s in others if abs(gap(s, "transfer") - gap(s, "tandem")) <= 0.05]
    pairs = "; ".join(f"seed {s} {gap(s, 'transfer'):+.3f} against {gap(s, 'tandem'):+.3f}" for s in others)
    lines.append(f"(d) TRL + transfer's adjusted gap within 0.05 of TRL's on the other seeds: {on_seeds(close)} of "
                 f"{', '.join(others) or 'none'} ({pairs or 'no seed'}).")
    return lines


@renderer("solo-by-difficulty", "table")
def solo_by_difficulty_table(record: dict, path: str) -> str:
    """Per seed and senior: the raw gold gap and the gap within groups of problems the base solves equally often;
    then prediction 39's clauses."""
    seeds, order = record["numbers"]["seeds"], seed_list(record)
    lines = [f"Solo accuracy on the golds the project's transfer variant skips minus on those it pays on (the gap of "
             f"the split above), raw and adjusted for difficulty: the problems grouped by how many of its "
             f"{seeds[order[0]]['base']['n']} solo samples the base solves, the gap taken within each group holding "
             f"both kinds of gold and averaged with weights the group's paid golds (the base's adjusted gap is 0 by "
             f"construction). {provenance(record, path)}", "",
             "| seed | senior | raw gap | adjusted gap | paid golds in the compared groups |", "|---|---|---|---|---|"]
    for s in order:
        for arm, r in seeds[s].items():
            raw, adjusted, covered, paid = _difficulty_gaps(r)
            lines.append(f"| {s} | {PARTNER_LABELS.get(arm, arm)} | {_or_dash(raw, '+.3f')} | "
                         f"{_or_dash(adjusted, '+.3f')} | {covered} of {paid} |")
    return "\n".join([*lines, "", *_prediction_39(seeds, order)]) + "\n"


# --- a lent GPU machine -------------------------------------------------------------------------

def gpu_provenance(record: dict, path: str) -> str:
    """Where a GPU record's digits come from: the GPU, driver, torch, the machine's CPU and the commits."""
    m, c = record["machine"], record["commit"]
    made = record.get("made_at")
    at = (f"made at {', '.join(made)}, recorded at {c['short']}" if made else f"at commit {c['short']}") + (
        " plus uncommitted changes" if c.get("dirty") else "")
    cpu = f", CPU {m['cpu_model']}" if m.get("cpu_model") else ""
    return (f"Run on a lent {m['platform']}, torch {m['packages']['torch']}{cpu}, "
            f"{record['numbers']['smoke']['started_utc'][:10]}, {at}. Record: `{path}`.")


@renderer("gpu-smoke", "table")
def gpu_smoke_table(record: dict, path: str) -> str:
    smoke = record["numbers"]["smoke"]
    steps = smoke["steps"]
    passed = sum(s["status"] == "passed" for s in steps.values())
    lines = [f"`bash scripts/gpu_smoke.sh`: {passed} of {len(steps)} steps passed in {smoke['wall_seconds']:.0f} s "
             f"(budget {smoke['budget_seconds']:.0f} s). {gpu_provenance(record, path)}", "",
             "| step | status | s | what it showed |", "|---|---|---|---|"]
    lines += [f"| {name} | {s['status']} | {s['seconds']:.1f} | {s['reason']} |" for name, s in steps.items()]
    return "\n".join(lines) + "\n"


def _solved(arm: dict, model: str) -> str:
    got, n = arm["solved"][model], arm["samples"]
    return f"{got['solo']}/{n}, {got['handoff']}/{n}"


@renderer("gpu-smoke", "arms")
def gpu_arms_table(record: dict, path: str) -> str:
    arms = record["numbers"]["arms"]
    lines = ["`python scripts/gpu_demo_arms.py --device D --seeds S`: the quick demo (`tandem-rlvr demo --quick "
             "--seed S`) with its SFT and RL on D, evaluated on the CPU; test problems solved alone, then in "
             f"handoff to the base. {gpu_provenance(record, path)}", "",
             "| D | seed | base | GRPO senior | TRL senior | max weight gap GRPO/TRL | TRL's senior token share |",
             "|---|---|---|---|---|---|---|"]
    for device, seeds in arms.items():
        for seed in sorted(seeds, key=int):
            a = seeds[seed]
            share = a["tandem_train_senior_share"]
            lines.append(f"| {device} | {seed} | {_solved(a, 'base')} | {_solved(a, 'grpo')} | {_solved(a, 'tandem')} "
                         f"| {a['weight_gap_grpo_tandem']:.4f} | {share['mean']:.3f} over {share['steps']} steps |")
    return "\n".join(lines) + "\n"


@renderer("gpu-smoke", "findings")
def gpu_arms_findings(record: dict, path: str) -> str:
    """What the arms table shows, each sentence computed from the record (and the CPU's quick-demo record)."""
    arms, smoke = record["numbers"]["arms"], record["numbers"]["smoke"]
    cuda, cpu = arms.get("cuda", {}), arms.get("cpu", {})
    out = []
    if "0" in cuda and smoke.get("demo_quick_accuracy"):
        n = cuda["0"]["samples"]
        again = all(round(smoke["demo_quick_accuracy"][m][f"{k}_acc"] * n) == cuda["0"]["solved"][m][k]
                    for m in ("base", "grpo", "tandem") for k in ("solo", "handoff"))
        out.append(f"The smoke's own quick demo (seed 0 on CUDA) and the table's seed 0 on CUDA, two runs on one "
                   f"machine, solved {'the same' if again else 'different'} counts.")
    ties = [s for s, a in cuda.items() if a["solved"]["grpo"] == a["solved"]["tandem"]]
    if ties:
        gaps = ", ".join(f"{cuda[s]['weight_gap_grpo_tandem']:.4f}" for s in ties)
        junior = ", ".join(f"{1 - cuda[s]['tandem_train_senior_share']['mean']:.2f}" for s in ties)
        others = len(cuda) - len(ties)
        out.append(f"On CUDA seed{'s' * (len(ties) > 1)} {', '.join(ties)} the GRPO and TRL seniors solved equal "
                   f"counts, yet they are two runs: their weights differ by up to {gaps} and the junior wrote "
                   f"{junior} of TRL's training tokens" + (f"; on the other {others} seed{'s' * (others > 1)} "
                                                          "their counts differ." if others else "."))
    local = read_record(REPO / RESULTS / "quick_demo.json")
    for seed, a in cpu.items():
        mine = local["numbers"]["seeds"].get(seed)
        if mine is None:
            continue
        labels = {"base": "base", "grpo": "GRPO", "tandem": "TRL"}
        same = all(round(mine["numbers"][f"{labels[m]} {k} acc"] * a["samples"]) == a["solved"][m][k]
                   for m in labels for k in ("solo", "handoff"))
        out.append(f"On that machine's CPU, seed {seed} solved {'the same counts as' if same else 'other counts than'} "
                   f"on {local['machine']['cpu_model']} ({local['machine']['cores']} cores) in "
                   f"`{RESULTS}/quick_demo.json`.")
        if seed in cuda:
            moved = cuda[seed]["solved"]["base"]["solo"] != a["solved"]["base"]["solo"]
            base = (f"the base solved {cuda[seed]['solved']['base']['solo']} on CUDA against "
                    f"{a['solved']['base']['solo']} of {a['samples']} on the CPU")
            out.append(f"Seed {seed}: {base}, so the quick demo's digits depend on the device from the SFT on."
                       if moved else f"Seed {seed}: {base}.")
    return " ".join(out)


# --- blocks -------------------------------------------------------------------------------------

def render_block(spec: str, root: Path) -> str:
    """The whole block `spec` (NAME or NAME:VIEW) as it renders from root/model_spec/results/NAME.json."""
    name, _, view = spec.partition(":")
    path = f"{RESULTS}/{name}.json"
    record = read_record(root / path)
    fn = RENDERERS.get((record["kind"], view or DEFAULT_VIEW))
    if fn is None:
        known = ", ".join(f"{k}:{v}" for k, v in sorted(RENDERERS))
        raise TandemError(f"{path}: no renderer for kind {record['kind']!r}, view {view or DEFAULT_VIEW!r}; "
                          f"known: {known}")
    body = fn(record, path)
    return f"<!-- results:{spec} -->\n{body}\n<!-- /results:{spec} -->"


def render_document(text: str, root: Path, doc: str = "") -> tuple[str, list[str]]:
    """(the text with every block rendered, one line per problem: a block that differed, has no record,
    or is not closed). A block that cannot render is left as it is."""
    problems, out, pos = [], [], 0
    for m in BLOCK.finditer(text):
        out.append(text[pos:m.start()])
        pos = m.end()
        spec = m.group("spec")
        try:
            rendered = render_block(spec, root)
        except TandemError as e:
            problems.append(f"{doc}: results:{spec}: {e}")
            out.append(m.group(0))
            continue
        if rendered != m.group(0):
            diff = difflib.unified_diff(m.group(0).splitlines(), rendered.splitlines(), "document", "render",
                                        lineterm="", n=0)
            shown = [line for line in diff if not line.startswith(("---", "+++", "@@"))][:6]
            problems.append(f"{doc}: results:{spec} differs from its render "
                            f"({RESULTS}/{spec.partition(':')[0]}.json):\n    " + "\n    ".join(shown))
        out.append(rendered)
    out.append(text[pos:])
    closed = {m.start() for m in BLOCK.finditer(text)}
    problems += [f"{doc}: results:{m.group(1)} is not closed (no <!-- /results:{m.group(1)} --> after it)"
                 for m in OPEN.finditer(text) if m.start() not in closed and not _inside(m.start(), text)]
    return "".join(out), problems


def _inside(offset: int, text: str) -> bool:
    """True when `offset` lies in a block's body (an open tag quoted inside another block)."""
    return any(m.start() < offset < m.end() for m in BLOCK.finditer(text))


def blocks(text: str) -> list[str]:
    """The specs of the blocks of a document, in order."""
    return [m.group("spec") for m in BLOCK.finditer(text)]


def run(root: Path, docs: list[str], write: bool) -> list[str]:
    """Check (or, with `write`, rewrite) `docs` under `root`; the problems found (before any rewrite)."""
    problems = []
    for doc in docs:
        path = root / doc
        if not path.is_file():
            continue  # a document that does not exist yet holds no block
        text = path.read_text(encoding="utf-8")
        new, found = render_document(text, root, doc)
        problems += found
        if write and new != text:
            path.write_text(new, encoding="utf-8")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="exit 1 naming each block that differs from its render")
    mode.add_argument("--write", action="store_true", help="rewrite each block as it renders")
    p.add_argument("--root", type=Path, default=REPO, help="the repository root (default: this checkout)")
    p.add_argument("--docs", nargs="+", default=list(DOCS), help=f"documents under the root (default: {' '.join(DOCS)})")
    args = p.parse_args(argv)
    problems = run(args.root, args.docs, write=args.write)
    if args.write:
        for line in problems:
            if " differs from its render " in line:
                print(f"rewrote {line.split(' differs from its render ')[0]}")
        problems = run(args.root, args.docs, write=False)  # what the rewrite could not fix: no record, no close
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
