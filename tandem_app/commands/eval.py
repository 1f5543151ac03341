"""`tandem-rlvr eval-solo | eval-handoff | eval-legibility | eval-plot | eval-table | eval-figures`: the eval suite.

Thin wrappers: each subcommand takes exactly the flags of its `tandem_eval` script.
"""

from __future__ import annotations


def register(sub) -> None:
    from tandem_eval import legibility, paper_figures, paper_table, plot
    from tandem_eval.MATH import eval_solo, eval_step_handoff

    commands = [
        ("eval-solo", "solo pass@k of one model on math benchmarks", eval_solo),
        ("eval-handoff", "handoff pass@k: senior and junior alternate reasoning steps", eval_step_handoff),
        ("eval-legibility", "legibility (junior cross-entropy) and drift (JS divergence) of a senior", legibility),
        ("eval-plot", "pass@k curves per benchmark from eval summaries", plot),
        ("eval-table", "Table 2: macro solo and handoff pass@k per checkpoint with bootstrap SEs", paper_table),
        ("eval-figures", "pass@k grid per benchmark and macro with bootstrap SE bands", paper_figures),
    ]
    for name, help_text, module in commands:
        p = sub.add_parser(name, help=help_text, description=module.DESCRIPTION)
        module.add_arguments(p)
        p.set_defaults(func=module.run)
