"""The events a later match can still include, kept for :attr:`ceql.Match.events`.

Rows (mappings) are kept by reference, and only those that moved a run (no other event can be
in a match); Arrow batches are kept whole (by reference: they are the caller's) and their rows
become dicts only when a match includes them. Whatever lies before the oldest live run
(:meth:`ceql.Evaluator.oldest_live_position`) is dropped between feeds, so memory follows the
live state.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from ..errors import CeqlInputError
from .codec import Unencodable, encode
from .match import Match

__all__ = ["KeptEvents"]

_REBUILD_MIN = 1024  # kept rows below which dropping old ones never rebuilds the table


class KeptEvents:
    """Position → event, for the positions a later match can include."""

    __slots__ = ("batches", "columns", "low", "rows", "size_after_rebuild")

    def __init__(self) -> None:
        #: rows fed as mappings, and Arrow rows already turned into dicts
        self.rows: dict[int, Mapping[str, Any]] = {}
        #: Arrow batches, by the position of their first row
        self.batches: deque[tuple[int, pa.RecordBatch]] = deque()
        self.low = 0  # no later match includes an event before this position
        self.size_after_rebuild = 0
        #: columns of kept Arrow batches read as lists (by batch position, then attribute)
        self.columns: dict[int, dict[str, list[Any]]] = {}

    def add_batch(self, base: int, rb: pa.RecordBatch) -> None:
        """Keep an Arrow batch whose first row is at position ``base``."""
        if rb.num_rows:
            self.batches.append((base, rb))

    def attach(self, chunk: Sequence[Match]) -> None:
        """Give each match of ``chunk`` its events."""
        rows = self.rows
        if self.batches:
            missing = {p for m in chunk for p in m.positions if p not in rows}
            if missing:
                self._convert(sorted(missing))
        for m in chunk:
            m._events = tuple([rows[p] for p in m.positions])

    def _convert(self, positions: list[int]) -> None:
        """Turn the Arrow rows at ``positions`` (ascending) into dicts, a batch at a time."""
        bases = [b for b, _ in self.batches]
        i = 0
        while i < len(positions):
            k = bisect_right(bases, positions[i]) - 1
            base, rb = self.batches[k]
            end = base + rb.num_rows
            j = i
            while j < len(positions) and positions[j] < end:
                j += 1
            local = [p - base for p in positions[i:j]]
            for p, row in zip(positions[i:j], rb.take(pa.array(local)).to_pylist(), strict=True):
                self.rows[p] = row
            i = j

    def value(self, pos: int, attr: str) -> Any:
        """The attribute ``attr`` of the event at ``pos`` (None if it has none), without
        making the row a dict (a column of an Arrow batch is read once, as a list)."""
        row = self.rows.get(pos)
        if row is not None:
            return row.get(attr)
        k = bisect_right([b for b, _ in self.batches], pos) - 1
        base, rb = self.batches[k]
        cols = self.columns.setdefault(base, {})
        col = cols.get(attr)
        if col is None:
            i = rb.schema.get_field_index(attr)
            col = cols[attr] = rb.column(i).to_pylist() if i >= 0 else [None] * rb.num_rows
        return col[pos - base]

    def forget(self, low: int) -> None:
        """No later match includes an event before position ``low``: drop those."""
        if low <= self.low:
            return
        self.low = low
        batches = self.batches
        while batches and batches[0][0] + batches[0][1].num_rows <= low:
            self.columns.pop(batches.popleft()[0], None)
        rows = self.rows
        # Rebuilding costs the rows kept: do it once they doubled, so it is O(1) per row.
        if len(rows) >= max(_REBUILD_MIN, 2 * self.size_after_rebuild):
            self.rows = {p: e for p, e in rows.items() if p >= low}
            self.size_after_rebuild = len(self.rows)

    def state(self) -> tuple[Any, ...]:
        """What a snapshot keeps: the rows and batches from ``low`` on."""
        low = self.low
        rows = [(p, e) for p, e in self.rows.items() if p >= low]
        batches = []
        for base, rb in self.batches:
            cut = max(0, low - base)
            batches.append((base + cut, rb.slice(cut)))
        return (low, rows, batches)

    def load(self, state: tuple[Any, ...]) -> None:
        """Take back what :meth:`state` gave."""
        low, rows, batches = state
        self.low = low
        self.rows = dict(rows)
        self.size_after_rebuild = len(self.rows)
        self.batches = deque(batches)

    def check_saveable(self) -> None:
        """Refuse to save events a snapshot cannot hold, naming the first."""
        for p, e in self.rows.items():
            if p < self.low:
                continue
            try:
                encode(e)
            except Unencodable as exc:
                raise CeqlInputError(
                    f"Cannot save event {p} with the snapshot (it holds {exc}): an evaluator "
                    "with keep_events=True saves the events a later match can include, so "
                    "they must be plain values (numbers, text, bytes, decimals, dates and "
                    "times, lists and dicts of those), or use keep_events=False.") from None
