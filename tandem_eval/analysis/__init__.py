"""The analyses over models and evaluation outputs: prefix transfer, legibility and drift, training
curves, the handoff protocols compared, and the grader's test corpora. Built on the run core
(`tandem_eval.core`); the paper's evaluation (`tandem_eval.paper`) uses them.
"""
