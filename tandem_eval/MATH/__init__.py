"""Math evaluations: `eval_solo` (one model) and `eval_sentence_handoff` (senior and junior alternate steps)."""
