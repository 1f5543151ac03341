"""The evaluation's run core: benchmarks, presets, prompts and sampling, the backends that generate
solo and handoff responses, the shared driver with its graded rows (each row's leaks and final
answer's author, `leak`) and resume, bootstrap errors, and the tools' flags.

Imports only the floors below `tandem_eval`; the analyses (`tandem_eval.analysis`) and the paper's
evaluation (`tandem_eval.paper`) are built on it.
"""
