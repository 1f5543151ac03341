"""`python -m tandem_eval.training_curves`: the command's entry; its code is `tandem_eval.analysis.training_curves`."""

import sys

from tandem_eval.analysis.training_curves import main

if __name__ == "__main__":
    sys.exit(main())
