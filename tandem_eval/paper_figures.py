"""`python -m tandem_eval.paper_figures`: the command's entry; its code is `tandem_eval.paper.paper_figures`."""

import sys

from tandem_eval.paper.paper_figures import main

if __name__ == "__main__":
    sys.exit(main())
