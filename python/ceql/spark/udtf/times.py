"""Times written as text: MATCH_CEQL's ``time_format`` (a Spark datetime pattern, as
``to_timestamp`` takes) turned into a ``strptime`` format, and a column of such text read.

Spark orders the rows by ``try_to_timestamp(col, pattern)``; each task reads the same text
with the pattern's ``strptime`` equivalent, so that a value Spark cannot read (NULL there,
first in the order) is reported by ceql with the row it is in. ``strptime`` is laxer than
Spark (``%d`` takes ``1`` where ``dd`` wants ``01``), so a value must also have the shape the
pattern gives it (:func:`spark_shape`): what Spark refuses, the task refuses too.
"""

from __future__ import annotations

import datetime as dt
import re
import reprlib

import pyarrow as pa
import pyarrow.compute as pc

from ceql.spark.errors import MatchCeqlError

__all__ = ["ParsedTimes", "has_zone", "read_times", "spark_shape", "to_strptime"]

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

_TWO = r"\d{2}"
_ONE_OR_TWO = r"\d{1,2}"
_WORD = "[A-Za-z]+"
_OFFSET = r"(?:Z|[+-]\d{2}(?::?\d{2})?)"
# Spark pattern letters (runs of one letter) → the text Spark's parser accepts for them
_SHAPES: dict[str, dict[int, str]] = {
    "y": {1: r"\d{1,4}", 2: _TWO, 4: r"\d{4}"},
    "M": {1: _ONE_OR_TWO, 2: _TWO, 3: "[A-Za-z]{3}", 4: _WORD},
    "d": {1: _ONE_OR_TWO, 2: _TWO},
    "D": {1: r"\d{1,3}", 2: r"\d{2,3}", 3: r"\d{3}"},
    "H": {1: _ONE_OR_TWO, 2: _TWO},
    "m": {1: _ONE_OR_TWO, 2: _TWO},
    "s": {1: _ONE_OR_TWO, 2: _TWO},
    "S": {n: rf"\d{{1,{n}}}" for n in range(1, 7)},
    "a": {1: "[AaPp][Mm]"},
    "E": {1: "[A-Za-z]{3}", 2: "[A-Za-z]{3}", 3: "[A-Za-z]{3}", 4: _WORD},
    "X": {1: _OFFSET, 2: _OFFSET, 3: _OFFSET},
}
_SHAPES["u"], _SHAPES["L"], _SHAPES["h"] = _SHAPES["y"], _SHAPES["M"], _SHAPES["H"]
_SHAPES["x"] = _SHAPES["Z"] = _SHAPES["X"]


def to_strptime(pattern: str) -> str:
    """The ``strptime`` format reading what Spark's datetime ``pattern`` reads."""
    return _convert(pattern)[0]


def spark_shape(pattern: str) -> str:
    """A regular expression (whole value) of the text Spark's datetime ``pattern`` reads:
    the digits each field must have (``dd``: two, ``d``: one or two, ``SSS``: one to three)."""
    return _convert(pattern)[1]


def _convert(pattern: str) -> tuple[str, str]:
    out: list[str] = []
    shape: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("''", i):  # a quote
            out.append("'")
            shape.append("'")
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
            shape.append(re.escape("".join(text)))
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
            shape.append(_SHAPES[c][j - i])
            i = j
        else:
            out.append("%%" if c == "%" else c)
            shape.append(re.escape(c))
            i += 1
    return "".join(out), "^" + "".join(shape) + "$"


def has_zone(fmt: str) -> bool:
    """Whether a ``strptime`` format reads a zone offset (times are then instants)."""
    return "%z" in fmt.replace("%%", "")


class ParsedTimes:
    """What :func:`read_times` gives: the times, or the row of the first unreadable text."""

    def __init__(self, times: pa.Array | None, bad_row: int | None) -> None:
        self.times = times
        self.bad_row = bad_row


def read_times(text: pa.Array, fmt: str, shape: str | None = None) -> ParsedTimes:
    """Read a column of text with ``strptime`` format ``fmt`` (NULL stays NULL): microsecond
    timestamps, naive, or in UTC when the format reads a zone. With ``shape`` (a regular
    expression, :func:`spark_shape`), a value not of that shape is unreadable too."""
    if pa.types.is_dictionary(text.type):
        text = text.dictionary_decode()
    if shape is not None and len(text):
        fits = pc.match_substring_regex(text, shape).fill_null(True)
        if not pc.all(fits).as_py():
            return ParsedTimes(None, int(pc.index(fits, False).as_py()))
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
