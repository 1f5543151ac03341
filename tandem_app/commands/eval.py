"""`tandem-rlvr eval-solo | eval-handoff | eval-legibility | eval-plot | eval-table | eval-figures`: the eval suite.

Thin wrappers: each subcommand takes exactly the flags of its `tandem_eval` script.
"""

from __future__ import annotations


import importlib

TOOLS = {  # each subcommand's `tandem_eval` module, imported only when that subcommand is used
    "eval-solo": "tandem_eval.MATH.eval_solo",
    "eval-handoff": "tandem_eval.MATH.eval_step_handoff",
    "eval-legibility": "tandem_eval.analysis.legibility",
    "eval-plot": "tandem_eval.paper.plot",
    "eval-table": "tandem_eval.paper.paper_table",
    "eval-figures": "tandem_eval.paper.paper_figures",
}


def register_command(sub, name: str, help_text: str) -> None:
    """One subcommand with its tool's flags (`tandem-rlvr eval-solo --help` imports eval_solo only)."""
    module = importlib.import_module(TOOLS[name])
    p = sub.add_parser(name, help=help_text, description=module.DESCRIPTION)
    module.add_arguments(p)
    p.set_defaults(func=module.run)
