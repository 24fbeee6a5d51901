"""``python -m activerank``: the command line, the same as the ``activerank`` script."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
