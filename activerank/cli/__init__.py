"""Command line: ``activerank demo | estimate | compare | campaign ... | experiment ...``.

The top layer: it may import every other part of the package, and nothing
imports it.  :mod:`~activerank.cli.commands` holds ``estimate``, ``compare`` and
``demo``, :mod:`~activerank.cli.campaign` the ``campaign`` commands, and
:mod:`~activerank.cli._common` what they share.
"""

from .commands import build_parser, main

__all__ = ["build_parser", "main"]
