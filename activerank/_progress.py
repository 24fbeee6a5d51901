"""Progress bars for long jobs: tqdm on stderr, shown only on a terminal, after ~2 s, and never when the
caller passes ``progress=False``."""

from __future__ import annotations

import sys
from contextlib import contextmanager

__all__ = ["outside_bars", "progress_bar", "progress_iv", "progress_shown"]

#: seconds a job runs before its bar appears (short jobs print nothing)
DELAY = 2.0


def progress_iv(progress) -> bool | None:
    """``progress=`` of a public function: None (a bar on a terminal only), True or False."""
    if progress is None or isinstance(progress, bool):
        return progress
    raise TypeError(f"`progress` must be None, True or False; got {progress!r}.")


def progress_shown(progress) -> bool:
    """Whether ``progress=`` shows a bar: True, False, or None for "stderr is a terminal"."""
    return bool(progress) if progress is not None else sys.stderr.isatty()


@contextmanager
def progress_bar(*, total=None, desc: str = "", unit: str = "it", enabled: bool | None = None):
    """A bar with ``update(n)``; a silent stand-in when disabled or when stderr is not a terminal.

    Examples
    --------
    >>> with progress_bar(total=3, desc="demo", enabled=False) as bar:
    ...     for _ in range(3):
    ...         bar.update(1)
    """
    if not progress_shown(enabled):
        yield _Silent()
        return
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, delay=DELAY, leave=False, dynamic_ncols=True)
    try:
        yield bar
    finally:
        bar.close()


@contextmanager
def outside_bars():
    """Print lines inside this block without garbling a bar: shown bars are cleared, then redrawn."""
    if "tqdm" not in sys.modules:  # no bar was ever created
        yield
        return
    from tqdm import tqdm

    with tqdm.external_write_mode():
        yield


class _Silent:
    """What a disabled bar offers: the calls, doing nothing."""

    def update(self, n=1) -> None:
        pass

    def set_postfix_str(self, s="", refresh=True) -> None:
        pass
