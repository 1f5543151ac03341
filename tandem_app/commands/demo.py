"""`tandem-rlvr demo`: the paper's three findings in miniature, end to end on a CPU."""

from __future__ import annotations

import argparse

HELP = (
    "build a tiny model, SFT it into the pre-RL base, train TRL and GRPO with the same seed and budget, "
    "evaluate solo / handoff accuracy and drift, and write report.md with figures"
)


def register(subparsers) -> None:
    p = subparsers.add_parser("demo", help=HELP, description=HELP + ". Finished phases are reused when rerun.")
    p.add_argument(
        "--quick", action="store_true", help="smoke-test budget (about 30 s on 2 CPU cores; numbers are not meaningful)"
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
        help="the partner experiment (tandem_app/train/partner_demo.py): after each seed's demo, train these TRL/GRPO "
        "variants (weaker, sync, ema, score, grpo_score), evaluate every senior with the base and a weaker junior, "
        "and write OUT/partner.md",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars or per-step console lines")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tandem_app.train.demo import demo_config, run_demo, run_seeds

    if args.partner:
        from tandem_app.train.partner_demo import run_partner_experiment

        out = args.out or ("runs/demo-partner-quick" if args.quick else "runs/demo-partner")
        table = run_partner_experiment(args.seeds or [args.seed], out, args.partner, quick=args.quick,
                                       progress=not args.no_progress)
        print(f"partner table written to {table}")
        return 0
    if args.seeds:
        out = args.out or ("runs/demo-seeds-quick" if args.quick else "runs/demo-seeds")
        table = run_seeds(args.seeds, out, quick=args.quick, progress=not args.no_progress)
        print(f"seed table written to {table}")
        return 0
    out = args.out or ("runs/demo-quick" if args.quick else "runs/demo")
    report = run_demo(demo_config(quick=args.quick, seed=args.seed), out, progress=not args.no_progress)
    print(f"report written to {report}")
    return 0
