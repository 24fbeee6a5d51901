"""Doctest collection of the package: the optional numba kernels are imported only when numba is installed
(the `fast` extra); without it their module is skipped, as ``import activerank`` never imports it."""

import importlib.util

collect_ignore = [] if importlib.util.find_spec("numba") else ["activerank/metrics/_numba.py"]
