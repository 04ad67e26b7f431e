"""Rows of one partition that nothing orders: equal times (and equal ``tie_break`` values).

Spark sorts a partition's rows by the time column, then by the tie-break columns; rows equal in
all of them come in whatever order the shuffle left them, which can differ from run to run, and
so can the matches (``A ; B`` over a BUY and a SELL of the same second). :class:`TieWatch`
finds the first two such rows that differ in some column (identical rows give the same matches
in either order), batch by batch; :func:`tie_message` says what to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ceql.constants import INTERNAL_PREFIX, OPTION_TIE_BREAK

__all__ = ["TieWatch", "tie_message"]

#: Ties of identical rows looked past in one batch, at most, before the watch gives up on it.
LOOKED_PAST = 64
#: Columns a message names as telling the two rows apart, at most.
NAMED = 4


class TieWatch:
    """The rows of one partition in the order Spark gave them: the first two that no sort key
    orders and that differ (:meth:`find`)."""

    def __init__(self, time: str, tie_columns: Sequence[str],
                 last: pa.RecordBatch | None = None) -> None:
        self._keys = (time, *tie_columns)
        self._last = last  # the previous batch's last row

    @property
    def last(self) -> pa.RecordBatch | None:
        """The last row of the batches watched so far (a stream's key state keeps it)."""
        return self._last

    def find(self, rb: pa.RecordBatch) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """Two rows of ``rb`` (the first may be the previous batch's last) that are equal in
        every sort key and differ in some column, or None.

        One comparison of the batch's times (no NULLs: the runner refused them) per batch;
        rows are read as Python values only where two times are equal.
        """
        n = rb.num_rows
        if n == 0:
            return None
        last, self._last = self._last, rb.slice(n - 1, 1)
        times = rb.column(self._keys[0])
        if last is not None and last.column(self._keys[0])[0].as_py() == times[0].as_py():
            pair = _differing(last.to_pylist()[0], rb.slice(0, 1).to_pylist()[0], self._keys)
            if pair is not None:
                return pair
        if n < 2:
            return None
        t = times.to_numpy(zero_copy_only=False)
        for i in np.flatnonzero(t[1:] == t[:-1])[:LOOKED_PAST]:
            a, b = rb.slice(int(i), 2).to_pylist()
            pair = _differing(a, b, self._keys)
            if pair is not None:
                return pair
        return None


def _differing(a: dict[str, Any], b: dict[str, Any],
               keys: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``(a, b)`` if they are equal in every key (NULL equal to NULL) but not identical."""
    return (a, b) if a != b and _tied(a, b, keys) else None


def _tied(a: dict[str, Any], b: dict[str, Any], keys: Sequence[str]) -> bool:
    return all(a.get(k) == b.get(k) for k in keys)


def tie_message(where: str, time: str, value: Any, tie_columns: Sequence[str],
                rows: tuple[dict[str, Any], dict[str, Any]], fixed: Sequence[str]) -> str:
    """What the warning says for two tied ``rows``: their time (column ``time``, ``value``),
    the columns that tell them apart (not ``fixed`` ones: the partition's), and the option
    to give."""
    a, b = rows
    tie_columns = [c for c in tie_columns if not c.startswith(INTERNAL_PREFIX)]
    apart = [c for c in a if not c.startswith(INTERNAL_PREFIX) and c not in fixed
             and c != time and a.get(c) != b.get(c)]
    shown = ", ".join(apart[:NAMED]) + (", …" if len(apart) > NAMED else "")
    ordered = (f"time and {', '.join(tie_columns)}" if tie_columns else "time")
    column = apart[0] if apart else "seq"
    option = (", ".join([*tie_columns, column]) if tie_columns else column)
    return (
        f"MATCH_CEQL{where}: rows have the same {ordered} ({time} = {value!r}) and nothing "
        "else orders them, so Spark reads them in an order that can change from run to run, "
        "and so can the matches; name a column that orders rows of equal time: "
        f"{OPTION_TIE_BREAK} => {option!r} (ceql.spark.match(..., {OPTION_TIE_BREAK}="
        f"{option!r})). The columns telling two such rows apart: {shown or '(none)'}.")
