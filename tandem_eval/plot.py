"""`python -m tandem_eval.plot`: the command's entry; its code is `tandem_eval.paper.plot`."""

import sys

from tandem_eval.paper.plot import main

if __name__ == "__main__":
    sys.exit(main())
