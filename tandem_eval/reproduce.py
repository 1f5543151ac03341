"""`python -m tandem_eval.reproduce`: the command's entry; its code is `tandem_eval.paper.reproduce`."""

import sys

from tandem_eval.paper.reproduce import main

if __name__ == "__main__":
    sys.exit(main())
