"""`python -m tandem_eval.legibility`: the command's entry; its code is `tandem_eval.analysis.legibility`."""

import sys

from tandem_eval.analysis.legibility import main

if __name__ == "__main__":
    sys.exit(main())
