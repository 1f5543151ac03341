#!/usr/bin/env bash
# The paper's evaluation end to end (solo, handoff, legibility; figures and Table 2).
#
#   bash scripts/reproduce_paper_eval.sh --out DIR [--checkpoint LABEL=PATH ...] [--skip-default LABEL] [--junior PATH]
#       [--backend vllm|engine] [--max-problems N] [--n N] [--max-new-tokens N]
#
# Writes DIR/report.md and DIR/table.json; run it again to resume. Every flag is explained by
# --help; the work is done by tandem_eval/paper/reproduce.py. $PYTHON picks the interpreter.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
exec "${PYTHON:-python}" -m tandem_eval.paper.reproduce "$@"
