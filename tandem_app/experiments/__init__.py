"""The experiments on the embedded trainer: the demo, its report and findings, and the studies built on it.

Modules, one idea each:
- `demo`: the paper's three findings in miniature, end to end (`tandem-rlvr demo`); `method_runs`:
  its TRL and GRPO runs side by side, one process each.
- `report`, `findings`: the demo's `report.md` and the verdict on each target; `seeds`: the table over seeds.
- `partner_demo`: the partner experiment (`tandem-rlvr demo --partner`); `writer_warmup`: the
  writer's SFT warm-up on RLT's format.
- `leak_demo`: TRL against GRPO under leak control; `distill_demo`: which teacher distils best.

The statistics they share with `tandem-rlvr distill` are `tandem_app.stats`.
"""
