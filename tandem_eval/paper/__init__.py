"""The paper's evaluation: its checkpoints, the whole evaluation in one command (`reproduce`), and
its figures and Table 2 from the outputs (with the paper's own numbers, `paper_reference.json`).
Built on the run core and the analyses.
"""
