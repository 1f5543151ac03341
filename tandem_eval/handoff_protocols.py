"""`python -m tandem_eval.handoff_protocols`: the command's entry; its code is `tandem_eval.analysis.handoff_protocols`."""

import sys

from tandem_eval.analysis.handoff_protocols import main

if __name__ == "__main__":
    sys.exit(main())
