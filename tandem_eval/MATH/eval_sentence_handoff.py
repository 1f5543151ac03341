"""The release's name for the step handoff evaluation: `tandem_eval.MATH.eval_step_handoff`, under its path.

The release calls its handoff evaluation `eval_sentence_handoff`, but the handoff changes
author at every reasoning step (the `step` strategy), not at the `sentence` strategy's
boundaries. Its flags, outputs and behaviour are `eval_step_handoff`'s:

    python -m tandem_eval.MATH.eval_sentence_handoff --senior PATH --junior BASE --out-dir ...
    python tandem_eval/MATH/eval_sentence_handoff.py --senior PATH --junior BASE --out-dir ...
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tandem_eval.MATH.eval_step_handoff import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
