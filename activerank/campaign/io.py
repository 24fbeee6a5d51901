"""Judgment files in, task files out: parsing and atomic writing, no database access.

Judgment files
    ``jsonl``: one JSON object per line with fields ``query_id``, ``doc_id``,
    ``grade`` and optionally ``annotator`` and ``judged_at`` (ISO 8601); other
    fields are ignored, so an annotator can return the exported task rows
    with ``grade`` filled in.
    ``csv``: a header line naming at least the columns ``query_id``,
    ``doc_id``, ``grade`` (optionally ``annotator``, ``judged_at``).
    ``qrels``: TREC qrels lines ``qid iter docid grade``.

Grades
    In JSONL (a typed format) a grade is a JSON number: an integer, or an
    integral float such as ``2.0``; ``null`` or ``""`` mean "not answered".  A
    JSON *string* such as ``"1"`` is rejected, as are ``true``/``false``: a
    value of the wrong type is a sign of a broken export, not a grade.  In
    CSV and qrels (untyped text) the grade is the decimal integer text
    (``1``, ``+1``); ``1.0`` or ``high`` are rejected.  The same rule holds
    for labelers in the Python API: they answer numbers, never strings.

A UTF-8 byte-order mark at the start of a file and CRLF line ends are
accepted (and noted in the import report).  Problems confined to one line
produce a :class:`RawRow` with an ``error``; problems with the file as a whole
raise ``ValueError`` naming the file and line before anything is read line by
line or stored: UTF-16 encoding, binary data (NUL bytes, an SQLite database
such as the campaign store itself, a compressed file), a CSV header without
the required columns, a JSONL/qrels file none of whose first
:data:`SNIFF_LINES` data lines is a valid row, no rows at all.
Nothing is ever evaluated or unpickled: JSON is read with :func:`json.loads`.

Outputs (task files, qrels, traces, backups) are written atomically and never
destroy data (:func:`check_output_path`): an output path that is the campaign
store (or its ``-wal``/``-shm``/``-journal`` file) or a file the campaign read
(its input files, imported judgment files), by name, symlink or hard link, is
always refused, and an existing file is replaced only if it is a previous
output of the same kind -- an *unanswered* task file, a qrels file, a trace
CSV with the same columns -- or empty; anything else needs ``force``
(``--force``).  A task file in which annotators have filled in grades is not
"our" output any more: replacing it needs ``force`` too.

CSV cells and spreadsheets
    A spreadsheet opening a CSV file runs a cell that starts with ``=``, ``+``,
    ``-`` or ``@`` (or a tab or carriage return before one) as a formula: a
    document id ``=HYPERLINK(...)`` in a task file would be a link, or worse
    (CSV injection).  Every CSV the campaign writes (task files, traces) therefore
    writes such a text cell with a leading ``'`` (:func:`escape_cell`, as OWASP
    recommends); a number such as ``-1.5`` stays as it is.  A text that starts
    with ``'`` itself gets one more, so the escape can be undone exactly:
    importing a CSV removes one leading ``'`` from a cell whose rest would have
    been escaped (:func:`unescape_cell`), and an id round-trips unchanged.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import tempfile
from dataclasses import dataclass
from datetime import datetime

__all__ = ["FORMATS", "TASK_FORMATS", "OUTPUT_KINDS", "RawRow", "check_output_path", "detect_format",
           "escape_cell", "parse_judgment_file", "parse_grade", "unescape_cell", "write_atomic", "write_trace"]

FORMATS = ("jsonl", "csv", "qrels")
TASK_FORMATS = ("jsonl", "csv")
COMBINE_RULES = ("mean_gain", "majority")  # how several annotators' grades of one pair are combined
REQUIRED = ("query_id", "doc_id", "grade")
OPTIONAL = ("annotator", "judged_at")
_EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv", ".qrels": "qrels"}
_INT_RE = re.compile(r"[+-]?\d+")
_BOM = b"\xef\xbb\xbf"
EMPTY_GRADE = "grade is empty"
SNIFF_LINES = 20
_MAGIC = {b"SQLite format 3\x00": "an SQLite database (a campaign store?)", b"\x1f\x8b": "gzip-compressed",
          b"PK\x03\x04": "a zip archive", b"\xfd7zXZ\x00": "xz-compressed", b"BZh": "bzip2-compressed"}


@dataclass(frozen=True)
class RawRow:
    """One data line of a judgment file: its fields (strings/JSON values) or an error.

    ``typed`` is True for JSONL rows, whose values carry JSON types (a grade
    must be a number there), False for CSV/qrels text fields.
    """

    line: int
    fields: dict | None = None
    error: str | None = None
    typed: bool = False


def _short(value, limit: int = 60) -> str:
    """JSON text of a value for a message, cut to ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        if isinstance(value, int):  # too many digits to print
            return f"<an integer of about {int(value.bit_length() * 0.30103) + 1} digits>"
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def detect_format(path, format=None, *, allowed=FORMATS) -> str:
    """The file format: ``format`` if given, else from the file extension."""
    if format is not None:
        if format not in allowed:
            raise ValueError(f"`format` must be one of {list(allowed)}; got {format!r}.")
        return format
    ext = os.path.splitext(os.fspath(path))[1].lower()
    fmt = _EXTENSIONS.get(ext)
    if fmt is None or fmt not in allowed:
        raise ValueError(
            f"{os.fspath(path)}: cannot tell the format from the extension {ext!r}; "
            f"pass format= one of {list(allowed)}."
        )
    return fmt


def _prepare(raw: bytes, path: str) -> tuple[bytes, list[str]]:
    notes = []
    if raw.startswith(b"\xff\xfe") or raw.startswith(b"\xfe\xff"):
        raise ValueError(f"{path}: line 1: file is UTF-16 encoded; save it as UTF-8.")
    if raw.startswith(_BOM):
        raw = raw[len(_BOM):]
        notes.append("file starts with a UTF-8 byte-order mark (BOM); it was ignored")
    if b"\r\n" in raw:
        notes.append("file uses CRLF (Windows) line ends; they were accepted")
    return raw, notes


def parse_judgment_file(raw: bytes, format: str, path: str) -> tuple[list[RawRow], list[str]]:
    """Split a judgment file into rows.

    Parameters
    ----------
    raw : bytes
        The file's content.
    format : {"jsonl", "csv", "qrels"}
    path : str
        Used in error messages only.

    Returns
    -------
    rows : list of RawRow
        One per non-blank data line, in file order, with 1-based line numbers.
    notes : list of str
        Remarks about the file (BOM, CRLF).

    Raises
    ------
    ValueError
        For file-level problems (see the module docstring).
    """
    if format not in FORMATS:
        raise ValueError(f"`format` must be one of {list(FORMATS)}; got {format!r}.")
    _refuse_binary(raw, path)
    raw, notes = _prepare(raw, path)
    if format == "csv":
        rows = _csv_rows(raw, path)
    else:
        split = _jsonl_rows if format == "jsonl" else _qrels_rows
        _sniff_rows(split(raw, limit=SNIFF_LINES), format, path)
        rows = split(raw)
    if not rows:
        raise ValueError(f"{path}: file has no judgment rows.")
    return rows, notes


def _refuse_binary(raw: bytes, path: str) -> None:
    """A database, an archive or any file with NUL bytes is no judgment file (UTF-16 aside)."""
    for magic, what in _MAGIC.items():
        if raw.startswith(magic):
            raise ValueError(f"{path}: line 1: this is {what}, not a judgment file (JSONL, CSV or qrels text).")
    if raw.startswith(b"\xff\xfe") or raw.startswith(b"\xfe\xff"):
        return  # UTF-16: _prepare names the encoding
    nul = raw.find(b"\x00")
    if nul >= 0:
        line = raw.count(b"\n", 0, nul) + 1
        raise ValueError(f"{path}: line {line}: binary data (a NUL byte); this is not a judgment file "
                         "(JSONL, CSV or qrels text).")


def _sniff_rows(head: list, format: str, path: str) -> None:
    """Refuse a file none of whose first data lines is a valid row of ``format``."""
    if head and all(r.error is not None for r in head):
        raise ValueError(
            f"{path}: not a {format} judgment file: none of its first {len(head)} data lines is a valid row "
            f"(line {head[0].line}: {head[0].error}); check --format / the file."
        )


def _decode_line(line: bytes):
    try:
        return line.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, f"not valid UTF-8 ({exc.reason} at byte {exc.start})"


def _lines(raw: bytes, limit):
    """``(line number, bytes)`` of the file's lines; only the first ``limit`` non-blank ones if given."""
    if limit is None:
        yield from enumerate(raw.split(b"\n"), start=1)
        return
    n, start = 0, 0
    for i in range(1, len(raw) + 2):
        end = raw.find(b"\n", start)
        line = raw[start:] if end < 0 else raw[start:end]
        yield i, line
        n += bool(line.strip())
        if end < 0 or n >= limit:
            return
        start = end + 1


def _jsonl_rows(raw: bytes, limit=None) -> list[RawRow]:
    rows = []
    for i, line in _lines(raw, limit):
        text, err = _decode_line(line)
        if err:
            rows.append(RawRow(i, error=err))
            continue
        text = text.strip()
        if not text:
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            rows.append(RawRow(i, error=f"malformed JSON ({exc.msg}, column {exc.colno}); "
                                        "truncated or broken line"))
            continue
        except RecursionError:
            rows.append(RawRow(i, error="JSON nested too deeply (not a judgment row)"))
            continue
        except ValueError as exc:  # e.g. an integer with more digits than Python converts
            rows.append(RawRow(i, error=f"JSON value not readable ({exc})"))
            continue
        if not isinstance(obj, dict):
            rows.append(RawRow(i, error=f"expected a JSON object, got {type(obj).__name__}"))
            continue
        missing = [k for k in REQUIRED if k not in obj]
        if missing:
            rows.append(RawRow(i, error=(
                f"missing field{'s' if len(missing) > 1 else ''} {', '.join(repr(k) for k in missing)} "
                f"(required {list(REQUIRED)}; found {list(obj)})")))
            continue
        rows.append(RawRow(i, fields=obj, typed=True))
    return rows


def _csv_rows(raw: bytes, path: str) -> list[RawRow]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ValueError(f"{path}: line {line}: not valid UTF-8 ({exc.reason}); save the file as UTF-8.") from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows = []
    header = None
    last = 0
    while True:
        start = last + 1
        try:
            rec = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            last = reader.line_num
            if header is None:
                raise ValueError(f"{path}: line {start}: malformed CSV header ({exc}).") from None
            rows.append(RawRow(start, error=f"malformed CSV ({exc})"))
            continue
        last = reader.line_num
        if not rec or all(not c.strip() for c in rec):
            continue
        if header is None:
            header = [c.strip().lower() for c in rec]
            missing = [k for k in REQUIRED if k not in header]
            if missing:
                raise ValueError(
                    f"{path}: line {start}: wrong column names: the CSV header must contain "
                    f"{', '.join(repr(k) for k in REQUIRED)}; missing {', '.join(repr(k) for k in missing)} "
                    f"(found {', '.join(repr(c) for c in header)})."
                )
            dup = sorted({c for c in header if header.count(c) > 1 and c in REQUIRED + OPTIONAL})
            if dup:
                raise ValueError(f"{path}: line {start}: column {dup[0]!r} appears twice in the CSV header.")
            continue
        if len(rec) != len(header):
            rows.append(RawRow(start, error=f"expected {len(header)} fields as in the header, got {len(rec)}"))
            continue
        rows.append(RawRow(start, fields=dict(zip(header, (unescape_cell(c) for c in rec)))))
    if header is None:
        raise ValueError(f"{path}: file is empty (no CSV header).")
    return rows


def _qrels_rows(raw: bytes, limit=None) -> list[RawRow]:
    rows = []
    for i, line in _lines(raw, limit):
        text, err = _decode_line(line)
        if err:
            rows.append(RawRow(i, error=err))
            continue
        parts = text.split()
        if not parts:
            continue
        if len(parts) != 4:
            rows.append(RawRow(i, error=f"a qrels line must have 4 fields 'qid iter docid grade'; got {len(parts)}"))
            continue
        rows.append(RawRow(i, fields={"query_id": parts[0], "doc_id": parts[2], "grade": parts[3]}))
    return rows


def parse_grade(value, n_grades: int, *, typed: bool = False) -> tuple[int | None, str | None]:
    """``(grade, None)`` for a valid grade on ``0..n_grades-1``, else ``(None, reason)``.

    Parameters
    ----------
    value : JSON value or str
    n_grades : int
    typed : bool, default False
        ``True`` for values of a typed format (JSONL): a grade must be a
        number there, a string such as ``"2"`` is rejected.  ``False`` for
        text fields (CSV, qrels): decimal integer text such as ``"2"``.

    Accepts integers and integral floats (``2.0``); for text fields, strings of
    decimal digits; rejects e.g. ``"3.5"``, ``"high"``, ``true``.

    Examples
    --------
    >>> parse_grade("2", 3), parse_grade("3.5", 3)[1], parse_grade(-1, 3)[1]
    ((2, None), "grade '3.5' is not an integer", 'grade -1 is outside the scale 0..2')
    >>> parse_grade("2", 3, typed=True)[1]
    'grade "2" is a JSON string; write the number 2 (grades are numbers in JSONL)'
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, EMPTY_GRADE
    if isinstance(value, bool):
        return None, f"grade {json.dumps(value)} is not an integer"
    if typed and isinstance(value, str):
        text = value.strip()
        hint = f"write the number {int(text)}" if _INT_RE.fullmatch(text) and len(text) < 20 else "write a number"
        return None, f"grade {_short(value)} is a JSON string; {hint} (grades are numbers in JSONL)"
    if isinstance(value, int):
        g = value
    elif isinstance(value, float):
        if not value.is_integer():
            return None, f"grade {value!r} is not an integer"
        g = int(value)
    elif isinstance(value, str):
        text = value.strip()
        if not _INT_RE.fullmatch(text):
            r = repr(value)
            return None, f"grade {r if len(r) <= 60 else r[:57] + '...'} is not an integer"
        if len(text.lstrip("+-").lstrip("0")) > 18:  # beyond any scale (and int() of huge text is slow)
            return None, f"grade {_short(text)} is outside the scale 0..{n_grades - 1}"
        g = int(text)
    else:
        return None, f"grade {_short(value)} is not an integer"
    if not 0 <= g < n_grades:
        return None, f"grade {_short(g)} is outside the scale 0..{n_grades - 1}"
    return g, None


def parse_id(value, name: str) -> tuple[str | None, str | None]:
    """String form of a query/document id from a row (str or int), or an error."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None, f"{name} must be a string or an integer, got {_short(value)}"
    text = str(value).strip()
    if not text:
        return None, f"{name} is empty"
    return text, None


def parse_optional_text(value, name: str) -> tuple[str | None, str | None]:
    if value is None or value == "":
        return None, None
    if not isinstance(value, str):
        return None, f"{name} must be a string, got {_short(value)}"
    return value.strip() or None, None


def parse_time(value) -> tuple[str | None, str | None]:
    text, err = parse_optional_text(value, "judged_at")
    if err or text is None:
        return text, err
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return None, f"judged_at {text!r} is not an ISO 8601 time"
    return text, None


def write_atomic(path, write) -> None:
    """Write a file atomically: ``write(textfile)`` into a temp file, fsync, rename.

    A reader (or a crash) never sees a partial file at ``path``: it sees the
    old file, no file, or the complete new one.  A crash may leave a hidden
    ``.<name>.*.tmp`` file next to ``path``.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(dfd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(dfd)


# --------------------------------------------------------------------------- output safety

OUTPUT_KINDS = ("tasks", "qrels", "trace", "backup")
TASK_COLUMNS = ("query_id", "query_text", "doc_id", "draw", "grade", "annotator")
_STORE_SUFFIXES = ("", "-wal", "-shm", "-journal")
_SNIFF_BYTES = 1 << 20


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_output_path(path, *, kind: str, protected=(), force: bool = False, header=None,
                      protected_name: str = "the campaign store", inputs=()) -> str:
    """Refuse an output path whose writing would destroy data; return it as ``str``.

    Parameters
    ----------
    path : str or os.PathLike
        Where the output is about to be written.
    kind : {"tasks", "qrels", "trace", "backup"}
        What is written.  An existing file may be replaced if it is a previous
        output of this kind (see the module docstring) or empty (a backup: if
        empty only).
    protected : sequence of str or os.PathLike
        Files that must never be replaced, not even with ``force`` (the
        campaign store: its ``-wal``, ``-shm`` and ``-journal`` files are
        protected with it).  Compared by resolved path and by file identity
        (symlinks, hard links).
    force : bool, default False
        Replace an existing file of another kind.
    header : sequence of str, optional
        For ``kind="trace"``: the columns about to be written; an existing
        CSV with this header line is a previous trace.
    protected_name : str, default "the campaign store"
        How error messages call the protected files.
    inputs : sequence of str or os.PathLike
        Files the campaign read (its input files, imported judgment files):
        never replaced either, not even with ``force``.

    Raises
    ------
    ValueError
        ``path`` is (or resolves to) a protected file, or is a directory.
    FileExistsError
        ``path`` exists and is not a previous output of the same kind, and
        ``force`` is False.

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     store = os.path.join(tmp, "c.db")
    ...     _ = open(store, "wb").write(b"SQLite format 3")
    ...     try:
    ...         check_output_path(store, kind="qrels", protected=[store], force=True)
    ...     except ValueError as exc:
    ...         print(str(exc).split(";")[0].replace(tmp, "TMP"))
    output TMP/c.db is the campaign store TMP/c.db
    """
    if kind not in OUTPUT_KINDS:
        raise ValueError(f"`kind` must be one of {list(OUTPUT_KINDS)}; got {kind!r}.")
    out = os.fspath(path)
    real = os.path.realpath(out)
    groups = [(protected, _STORE_SUFFIXES, protected_name), (inputs, ("",), "a file this campaign read")]
    for files, suffixes, name in groups:
        for store in files:
            store = os.fspath(store)
            for suffix in suffixes:
                other = store + suffix
                if real == os.path.realpath(other) or _same_file(out, other):
                    what = name if not suffix else f"the {suffix[1:].upper()} file of {name}"
                    raise ValueError(
                        f"output {out} is {what} {other}; writing it would destroy {store}. "
                        "Choose another output path."
                    )
    if os.path.isdir(out):
        raise ValueError(f"output {out} is a directory; give a file path.")
    if force or not os.path.lexists(out):
        return out
    problem = _not_own_output(out, kind, header)
    if problem is not None:
        raise FileExistsError(
            f"output {out} already exists and {problem}; refusing to replace it "
            "(pass --force / overwrite=True to replace it anyway)."
        )
    return out


def _not_own_output(path: str, kind: str, header) -> str | None:
    """``None`` if ``path`` is empty or a previous output of ``kind``, else why not."""
    if not os.path.isfile(path):
        return "is not a regular file"
    try:
        with open(path, "rb") as f:
            head = f.read(_SNIFF_BYTES + 1)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if not head.strip():
        return None
    if b"\x00" in head:
        return "holds binary data (it is not a previous output)"
    if kind == "tasks":
        return _not_task_file(path)
    if kind == "backup":
        return "is not empty (a backup replaces a file only with --force / overwrite=True)"
    text = head[:_SNIFF_BYTES].decode("utf-8", "replace")
    lines = text.splitlines()
    if len(head) > _SNIFF_BYTES and lines:
        lines = lines[:-1]  # possibly cut in the middle
    lines = [ln for ln in lines if ln.strip()]
    if kind == "qrels":
        for i, ln in enumerate(lines, start=1):
            parts = ln.split()
            if len(parts) != 4 or not _INT_RE.fullmatch(parts[3]):
                return f"is not a qrels file (line {i} is not 'qid iter docid grade')"
        return None
    first = lines[0].lstrip("\ufeff").strip() if lines else ""
    if header is not None and first == ",".join(header):
        return None
    return "is not a previous trace CSV (its header differs)"


def _not_task_file(path: str) -> str | None:
    """Task files may be replaced only while no row has a grade filled in."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return "is not a task file"
    answered = 0
    stripped = text.lstrip()
    if stripped.startswith("{"):
        for i, ln in enumerate(text.splitlines(), start=1):
            if not ln.strip():
                continue
            try:
                obj = json.loads(ln)
            except (ValueError, RecursionError):
                return f"is not a task file (line {i} is not a JSON task row)"
            if not isinstance(obj, dict) or not {"query_id", "doc_id"} <= set(obj) or not set(obj) <= set(TASK_COLUMNS):
                return f"is not a task file (line {i} is not a task row)"
            answered += obj.get("grade") not in (None, "")
    else:
        reader = csv.reader(io.StringIO(text, newline=""))
        try:
            head = next(reader, None)
            if head is None or tuple(c.strip() for c in head) != TASK_COLUMNS:
                return "is not a task file (line 1 is neither a JSON task row nor the task CSV header)"
            g = TASK_COLUMNS.index("grade")
            for rec in reader:
                answered += len(rec) > g and bool(rec[g].strip())
        except csv.Error:
            return "is not a task file (malformed CSV)"
    if answered:
        return (f"is a task file with {answered} answered rows (grades filled in: import it first, "
                "or export to another file)")
    return None


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER_RE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _needs_escape(text: str) -> bool:
    if text.startswith("'"):
        return True  # so that the escape can be undone exactly
    return text.startswith(_FORMULA_START) and not _NUMBER_RE.fullmatch(text)


def escape_cell(value):
    """A CSV cell that no spreadsheet runs as a formula: text starting with ``= + - @``, a tab or a
    carriage return (or with ``'``) gets a leading ``'``; numbers and other text are returned unchanged.

    Examples
    --------
    >>> escape_cell("=SUM(A1:A9)"), escape_cell("-1.5"), escape_cell("doc-7"), escape_cell(3)
    ("'=SUM(A1:A9)", '-1.5', 'doc-7', 3)
    >>> unescape_cell(escape_cell("'=x")) == "'=x"
    True
    """
    return "'" + value if isinstance(value, str) and _needs_escape(value) else value


def unescape_cell(text: str) -> str:
    """Undo :func:`escape_cell` on a CSV cell read back (other text is returned unchanged)."""
    if text.startswith("'") and _needs_escape(text[1:]):
        return text[1:]
    return text


class _LineFeedWriter:
    """``csv.writer`` with LF line ends that still quotes a cell holding a carriage return (with
    ``lineterminator="\\n"`` the csv module leaves it bare, and the row then falls apart on reading)."""

    def __init__(self, f):
        self._f, self._buf = f, io.StringIO()
        self._w = csv.writer(self._buf, lineterminator="\r\n")

    def writerow(self, row) -> None:
        self._w.writerow(row)
        self._f.write(self._buf.getvalue()[:-2] + "\n")
        self._buf.seek(0)
        self._buf.truncate()


def write_trace(path, trace) -> None:
    """Write a trace (a DataFrame) as CSV, atomically, its text cells escaped (:func:`escape_cell`)."""
    out = trace.copy()
    for col in out.columns:
        if out[col].dtype.kind not in "biufcmM":  # text (object or string dtype)
            out[col] = out[col].map(escape_cell)
    text = out.to_csv(index=False, lineterminator="\r\n")  # pandas formats the cells; LF line ends below

    def write(f):
        w = _LineFeedWriter(f)
        for rec in csv.reader(io.StringIO(text, newline="")):
            w.writerow(rec)

    write_atomic(path, write)


def write_tasks(path, rows: list[dict], format: str, columns: list[str]) -> None:
    """Write task rows as JSONL or CSV (atomically; CSV cells escaped, :func:`escape_cell`)."""
    if format == "jsonl":
        def write(f):
            for r in rows:
                f.write(json.dumps({c: r[c] for c in columns}, ensure_ascii=False) + "\n")
    elif format == "csv":
        def write(f):
            w = _LineFeedWriter(f)
            w.writerow(columns)
            for r in rows:
                w.writerow(["" if r[c] is None else escape_cell(r[c]) for c in columns])
    else:
        raise ValueError(f"`format` must be one of {list(TASK_FORMATS)}; got {format!r}.")
    write_atomic(path, write)
