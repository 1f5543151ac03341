"""Math evaluations: `eval_solo` (one model) and `eval_step_handoff` (senior and junior alternate steps; the release names it `eval_sentence_handoff`)."""
