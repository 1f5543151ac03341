#!/usr/bin/env bash
# Distillation SFT: fine-tune a student HF model on a teacher's traces with verl 0.9.1's own SFT trainer.
#
#   bash verl/run_distill_sft.sh --traces FILE.jsonl --student MODEL_DIR --out DIR --steps N \
#       [--max-length L] [--lr X] [--batch-size B] [--long drop|cut] [--device cpu|cuda] [key=value ...]
#
# FILE.jsonl: one trace a line, {"prompt": <the question as the eval shows it>, "response": <the trace>}.
# Prints the HF model dir it wrote last (DIR/global_step_N/huggingface); a rerun on DIR resumes.
# Traces longer than --max-length are counted and dropped (or cut with --long cut), in one line.
# On a machine without a GPU it runs on verl's CPU platform (tandem_verl.cpu_platform) in float32.
# The work is tandem_verl/distill_sft.py; PYTHON picks the interpreter (default: python).
set -euo pipefail
PYTHONUNBUFFERED=1 exec "${PYTHON:-python}" -m tandem_verl.distill_sft "$@"
