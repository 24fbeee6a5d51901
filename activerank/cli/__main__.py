"""``python -m activerank.cli``: the ``activerank`` command."""

import sys

from .commands import main

sys.exit(main())
