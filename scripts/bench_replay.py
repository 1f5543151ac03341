"""Time the authorship-mask replay of one finished response, stepped vs vectorised, side by side.

verl's agent loop replays each response's mask from its tokens (`tandem.process.authorship
.response_authorship_mask`). This times the per-token stepping of `advance` (the
engine's own order of work, `stepped_mask`) against the vectorised `replay_mask`, on
responses of a Qwen3-sized vocabulary with a third of the ids word boundaries, one
response at a time as the agent loop calls it.

    python scripts/bench_replay.py --out bench_replay.json [--tokens 3000] [--responses 16]

Output JSON: per method the median seconds per response, and `speedup` (stepped / vectorised).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import torch

from tandem.process.config import TandemConfig
from tandem.process.authorship import replay_mask, stepped_mask

VOCAB = 151_936  # Qwen3's


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="JSON file to write")
    p.add_argument("--tokens", type=int, default=3000, help="response length (default 3000: the paper's budget)")
    p.add_argument("--responses", type=int, default=16, help="responses timed per method (default 16)")
    p.add_argument("--strategy", default="word")
    p.add_argument("--threads", type=int, default=1)
    return p.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    is_boundary = torch.rand(VOCAB, generator=g) < 1 / 3
    cfg = TandemConfig(selection_strategy=args.strategy)
    times = {"stepped": [], "vectorised": []}
    for i in range(args.responses + 1):  # the first round warms up
        tokens = torch.randint(0, VOCAB, (1, args.tokens), generator=g)
        for name, fn in (("stepped", stepped_mask), ("vectorised", replay_mask)):
            start = time.perf_counter()
            mask = fn(cfg, is_boundary, tokens, [i])
            if i:
                times[name].append(time.perf_counter() - start)
        assert torch.equal(mask, stepped_mask(cfg, is_boundary, tokens, [i]))
    result = {
        "tokens": args.tokens, "responses": args.responses, "strategy": args.strategy,
        "threads": args.threads, "torch": torch.__version__, "machine": platform.processor() or platform.machine(),
        **{f"{k}_median_s": statistics.median(v) for k, v in times.items()},
    }
    result["speedup"] = result["stepped_median_s"] / result["vectorised_median_s"]
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
    print(f"replay of a {args.tokens}-token response: stepped {result['stepped_median_s'] * 1e3:.1f} ms, "
          f"vectorised {result['vectorised_median_s'] * 1e3:.2f} ms ({result['speedup']:.0f}x)")


if __name__ == "__main__":
    main()
