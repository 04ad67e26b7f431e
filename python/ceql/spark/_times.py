"""Times written as text: MATCH_CEQL's ``time_format`` (a Spark datetime pattern, as
``to_timestamp`` takes) turned into a ``strptime`` format, and a column of such text read.

Spark orders the rows by ``try_to_timestamp(col, pattern)``; each task reads the same text
with the pattern's ``strptime`` equivalent, so that a value Spark cannot read (NULL there,
first in the order) is reported by ceql with the row it is in.
"""

from __future__ import annotations

import datetime as dt
import reprlib

import pyarrow as pa
import pyarrow.compute as pc

from ._errors import MatchCeqlError

__all__ = ["ParsedTimes", "has_zone", "read_times", "to_strptime"]

# Spark pattern letters (runs of one letter) → strptime directives
_LETTERS: dict[str, dict[int, str]] = {
    "y": {1: "%Y", 2: "%y", 4: "%Y"},
    "u": {1: "%Y", 2: "%y", 4: "%Y"},
    "M": {1: "%m", 2: "%m", 3: "%b", 4: "%B"},
    "L": {1: "%m", 2: "%m", 3: "%b", 4: "%B"},
    "d": {1: "%d", 2: "%d"},
    "D": {1: "%j", 2: "%j", 3: "%j"},
    "H": {1: "%H", 2: "%H"},
    "h": {1: "%I", 2: "%I"},
    "m": {1: "%M", 2: "%M"},
    "s": {1: "%S", 2: "%S"},
    "S": {n: "%f" for n in range(1, 7)},
    "a": {1: "%p"},
    "E": {1: "%a", 2: "%a", 3: "%a", 4: "%A"},
    "X": {1: "%z", 2: "%z", 3: "%z"},
    "x": {1: "%z", 2: "%z", 3: "%z"},
    "Z": {1: "%z", 2: "%z", 3: "%z"},
}
_SUPPORTED = "y M d D H h m s S (up to 6) a E X x Z, text in 'quotes'"


def to_strptime(pattern: str) -> str:
    """The ``strptime`` format reading what Spark's datetime ``pattern`` reads."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("''", i):  # a quote
            out.append("'")
            i += 2
        elif c == "'":  # quoted text, '' inside it a quote
            j, text = i + 1, []
            while True:
                if j >= n:
                    raise MatchCeqlError(f"MATCH_CEQL: time_format {pattern!r} has a quote (') "
                                         f"that is not closed (at position {i}).")
                if pattern.startswith("''", j):
                    text.append("'")
                    j += 2
                elif pattern[j] == "'":
                    break
                else:
                    text.append(pattern[j])
                    j += 1
            out.append("".join(text).replace("%", "%%"))
            i = j + 1
        elif c in "[]{}#":
            raise MatchCeqlError(
                f"MATCH_CEQL: time_format {pattern!r} has {c!r} (optional sections and "
                "reserved characters), which MATCH_CEQL cannot read: give one pattern that "
                "every value follows.")
        elif c.isascii() and c.isalpha():
            j = i
            while j < n and pattern[j] == c:
                j += 1
            directive = _LETTERS.get(c, {}).get(j - i)
            if directive is None:
                raise MatchCeqlError(
                    f"MATCH_CEQL: time_format {pattern!r} has {pattern[i:j]!r}, which "
                    f"MATCH_CEQL cannot read; it reads the pattern letters {_SUPPORTED} (or "
                    "convert the column first: to_timestamp(col, 'pattern') in a subquery).")
            out.append(directive)
            i = j
        else:
            out.append("%%" if c == "%" else c)
            i += 1
    return "".join(out)


def has_zone(fmt: str) -> bool:
    """Whether a ``strptime`` format reads a zone offset (times are then instants)."""
    return "%z" in fmt.replace("%%", "")


class ParsedTimes:
    """What :func:`read_times` gives: the times, or the row of the first unreadable text."""

    def __init__(self, times: pa.Array | None, bad_row: int | None) -> None:
        self.times = times
        self.bad_row = bad_row


def read_times(text: pa.Array, fmt: str) -> ParsedTimes:
    """Read a column of text with ``strptime`` format ``fmt`` (NULL stays NULL): microsecond
    timestamps, naive, or in UTC when the format reads a zone."""
    if pa.types.is_dictionary(text.type):
        text = text.dictionary_decode()
    values = pc.unique(text.drop_null()).to_pylist() if len(text) else []
    zone = has_zone(fmt)
    parsed: list[dt.datetime] = []
    for v in values:
        try:
            t = dt.datetime.strptime(v, fmt)
        except ValueError:
            bad = pc.index(text, pa.scalar(v, text.type)).as_py()
            return ParsedTimes(None, int(bad))
        parsed.append(t.astimezone(dt.UTC) if zone and t.tzinfo is not None else t)
    unit = pa.timestamp("us", tz="UTC") if zone else pa.timestamp("us")
    if zone and any(t.tzinfo is None for t in parsed):
        parsed = [t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC) for t in parsed]
    table = pa.array(parsed, unit)
    index = pc.index_in(text, value_set=pa.array(values, text.type))
    return ParsedTimes(table.take(index), None)


def shown_row(rb: pa.RecordBatch, i: int) -> str:
    """Row ``i`` of a batch, short, for a message."""
    short = reprlib.Repr()
    short.maxstring = 40
    short.maxother = 40
    try:
        row = rb.slice(i, 1).to_pylist()[0]
    except (pa.ArrowException, ValueError, OverflowError):
        return f"row {i}"
    return "{" + ", ".join(f"{k!r}: {short.repr(v)}" for k, v in list(row.items())[:8]) + "}"
