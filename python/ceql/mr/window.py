"""A partition's rows as a sliding window: read by their index in the partition (0, 1, … as
they came), only the rows from a low-water mark on kept (:mod:`ceql.mr.evaluator` drops the
rest as no match can read them any more)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import overload

__all__ = ["RowWindow"]

Row = Mapping[str, object]

_COMPACT = 256  # dropped rows tolerated at the head of the list before it is compacted


class RowWindow(Sequence[Row]):
    """Rows ``first … len(self) - 1`` of a partition; ``len`` counts every row received, so
    navigation past the last row received reads nothing (the end, at ``close``)."""

    __slots__ = ("_head", "_offset", "_rows")

    def __init__(self, first: int = 0, rows: Sequence[Row] = ()) -> None:
        self._rows: list[Row] = list(rows)
        self._offset = first  # the partition index of _rows[0]
        self._head = 0  # _rows[:_head] are dropped

    @property
    def first(self) -> int:
        """The partition index of the first row kept."""
        return self._offset + self._head

    def held(self) -> int:
        """How many rows are kept."""
        return len(self._rows) - self._head

    def kept(self) -> list[Row]:
        """The rows kept, in order."""
        return self._rows[self._head:]

    def append(self, row: Row) -> None:
        """The partition's next row."""
        self._rows.append(row)

    def drop_before(self, index: int) -> None:
        """Forget the rows before partition index ``index`` (amortized O(1) per row)."""
        j = index - self._offset
        if j <= self._head:
            return
        self._head = min(j, len(self._rows))
        if self._head >= _COMPACT and 2 * self._head >= len(self._rows):
            del self._rows[:self._head]
            self._offset += self._head
            self._head = 0

    def __len__(self) -> int:
        return self._offset + len(self._rows)

    @overload
    def __getitem__(self, i: int) -> Row: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Row]: ...

    def __getitem__(self, i: int | slice) -> Row | Sequence[Row]:
        if isinstance(i, slice):
            raise TypeError("a RowWindow is read row by row")
        j = i - self._offset
        if j < self._head:
            # a read below the low-water mark: the bound on what matches read is wrong
            raise AssertionError(f"row {i} of the partition was dropped (rows from "
                                 f"{self.first} are kept)")
        return self._rows[j]
