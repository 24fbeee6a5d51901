"""Doctest collection of the package: the optional numba kernels are imported only when numba is installed
(the `fast` extra); without it their module is skipped, as ``import activerank`` never imports it."""

import importlib.util

NUMBA_MODULES = ["activerank/metrics/_numba.py", "activerank/design/_prefix_numba.py"]
collect_ignore = [] if importlib.util.find_spec("numba") else NUMBA_MODULES
