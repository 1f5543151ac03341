"""`tandem-rlvr demo`: the paper's three findings in miniature, end to end on a CPU."""

from __future__ import annotations

import argparse
import shlex

from tandem_app.experiments.partner_variants import VARIANTS, check_variants

HELP = (
    "build a tiny model, SFT it into the pre-RL base, train TRL and GRPO with the same seed and budget, "
    "evaluate solo / handoff accuracy and drift, and write report.md with figures"
)


def register(subparsers) -> None:
    p = subparsers.add_parser("demo", help=HELP, description=HELP + ". Finished phases are reused when rerun.")
    p.add_argument(
        "--quick", action="store_true",
        help="a first result in 80.5-91.8 s on 2 CPU cores beside two busy jobs (model_spec/PERFORMANCE.md): "
             "a 2-layer model on two-step problems, 800 SFT steps, 12 RL steps per method; one seed of a small "
             "run whose accuracies vary by seed and CPU (README's quick-demo table: 3 seeds); the paper's findings need "
             "the full demo"
    )
    p.add_argument(
        "--out", help="output directory (default runs/demo, runs/demo-quick with --quick, runs/demo-seeds with --seeds)"
    )
    seeds = p.add_mutually_exclusive_group()
    seeds.add_argument("--seed", type=int, default=0, help="seed of the whole pipeline (default 0)")
    seeds.add_argument(
        "--seeds", type=int, nargs="+", metavar="S",
        help="run the demo once per seed into OUT/seed-S and write OUT/seeds.md: each number's mean and spread",
    )
    p.add_argument(
        "--partner", nargs="+", metavar="NAME",
        help="the partner experiment (tandem_app/experiments/partner_demo.py): after each seed's demo, train these "
        f"TRL/GRPO variants ({', '.join(VARIANTS)}), "
        "evaluate every senior "
        "with the base and a weaker junior, and write OUT/partner.md",
    )
    p.add_argument("--threads", type=int, default=0, metavar="N",
                   help="torch CPU threads for every phase; 0 = auto: 1 for the demo's tiny models, whose matrix "
                        "products are too small to split (default: %(default)s)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars or per-step console lines")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """The demo; Ctrl-C says what was kept and the command that continues (finished phases are reused)."""
    from tandem.errors import RunInterrupted

    try:
        return _run(args)
    except KeyboardInterrupt as e:
        kept = str(e) or "every finished phase kept"
        raise RunInterrupted(f"{kept}; continue with: {_command(args)}") from None


def _command(args: argparse.Namespace) -> str:
    """The command line that reruns this demo in its folder."""
    words = ["tandem-rlvr", "demo", *(["--quick"] if args.quick else []), "--out", _out(args)]
    if args.seeds:
        words += ["--seeds", *map(str, args.seeds)]
    elif args.seed:
        words += ["--seed", str(args.seed)]
    if args.partner:
        words += ["--partner", *args.partner]
    return shlex.join(words)


def _out(args: argparse.Namespace) -> str:
    if args.out:
        return args.out
    kind = "demo-partner" if args.partner else "demo-seeds" if args.seeds else "demo"
    return f"runs/{kind}-quick" if args.quick else f"runs/{kind}"


def check_repeats(args: argparse.Namespace) -> None:
    """Each seed and each partner variant once: a repeat would enter one run twice into the tables' means
    and spreads (or train it twice), so it is refused before any folder."""
    from tandem.errors import TandemError

    for flag, given in (("--seeds", args.seeds), ("--partner", args.partner)):
        repeated = sorted({str(v) for v in given or [] if given.count(v) > 1})
        if repeated:
            raise TandemError(f"{flag} names {', '.join(repeated)} more than once; give each once")


def _run(args: argparse.Namespace) -> int:
    from tandem.models.threads import check_threads
    from tandem_app.experiments.demo_folder import DEMO_RECORD, SEED_FOLDERS, check_own_out

    check_repeats(args)
    check_variants(args.partner or [])
    check_threads(args.threads)
    # Another run's folder is refused now, before the pipeline's imports (torch), as `train` refuses a taken --out.
    check_own_out(_out(args), SEED_FOLDERS if args.seeds or args.partner else DEMO_RECORD)
    from tandem_app.experiments.demo import demo_config, run_demo, run_seeds

    if args.partner:
        from tandem_app.experiments.partner_demo import run_partner_experiment

        out = _out(args)
        table = run_partner_experiment(args.seeds or [args.seed], out, args.partner, quick=args.quick,
                                       progress=not args.no_progress, threads=args.threads)
        print(f"partner table written to {table}")
        return 0
    if args.seeds:
        out = _out(args)
        table = run_seeds(args.seeds, out, quick=args.quick, progress=not args.no_progress, threads=args.threads)
        print(f"seed table written to {table}")
        return 0
    out = _out(args)
    report = run_demo(demo_config(quick=args.quick, seed=args.seed, threads=args.threads), out,
                      progress=not args.no_progress)
    from tandem_app.experiments.report import console_summary

    print(console_summary(report.parent))
    return 0
