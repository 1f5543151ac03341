"""`python -m tandem_eval.paper_table`: the command's entry; its code is `tandem_eval.paper.paper_table`."""

import sys

from tandem_eval.paper.paper_table import main

if __name__ == "__main__":
    sys.exit(main())
