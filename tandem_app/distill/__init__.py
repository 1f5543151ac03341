"""`tandem-rlvr distill`: a teacher's solo traces, a student fine-tuned on them, the student evaluated before and after.

The measure RLT (arXiv 2506.08388) judges a teacher by: a student fine-tuned on the
teacher's raw traces, then evaluated solo on held-out problems. One idea per module:
`config` (the typed settings), `problems` (the training and test splits), `preflight`
(bad input refused before any work), `traces` (the teacher's traces), `student_sft` (the
student's fine-tuning, embedded or on verl), `evaluation` (solo accuracy before and after),
`summary` (the paired gain and `summary.json`), `run` (the phases, resumable, under one lock).
"""
