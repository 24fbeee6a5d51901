"""Text helpers of the TREC readers and writers: non-blank lines (BOM, CRLF and UTF-8 checked), integer
fields, ids as string keys, and atomic writes."""

from __future__ import annotations

import os
import tempfile

import numpy as np


def _read_lines(path):
    """Yield ``(line_number, text)`` of non-blank lines; BOM and CRLF tolerated."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        raw = f.read()
    if raw.startswith(b"\xff\xfe") or raw.startswith(b"\xfe\xff"):
        raise ValueError(f"{path}: file is UTF-16 encoded; save it as UTF-8.")
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    for i, line in enumerate(raw.split(b"\n"), start=1):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: line {i}: not valid UTF-8 ({exc.reason} at byte {exc.start}).") from None
        text = text.strip()
        if text:
            yield i, text


def _int_field(text: str, path, line: int, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{path}: line {line}: {what} {text!r} is not an integer.") from None


def _as_key(value) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    return str(value)


def _atomic_write_text(path, text: str):
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
