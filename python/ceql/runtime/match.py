"""The complex events a query outputs."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from .times import from_micros

__all__ = ["Match"]

# What a match shares with every other match completed by the same event:
# (end_position, end_time, partition, time_form) — ``time_form`` is ``None`` when times are
# kept as given, else ``(tz, as_date)`` to turn microseconds since the epoch into a
# ``datetime``/``date`` like the input's.
Ending = tuple[int, Any, tuple[Any, ...], "tuple[_dt.tzinfo | None, bool] | None"]


class Match:
    """One complex event.

    ``positions`` are the ascending original (0-based) indices of its events after the SELECT
    projection; ``start_position``/``end_position`` bound its interval; times are the time
    attribute's values at those positions (the positions themselves without a time attribute);
    ``partition`` holds the PARTITION BY key values (``()`` without PARTITION BY).
    """

    # The evaluator creates millions of these: it fills the four slots directly (no
    # ``__init__``), sharing ``_start`` (a tECS bottom node ``(_, _, start_position, _,
    # start_key)``), ``_end`` (an ``Ending``) and ``_labels`` between matches.
    __slots__ = ("_end", "_labels", "_start", "positions")
    _start: tuple[Any, ...]
    _end: Ending
    positions: tuple[int, ...]
    _labels: tuple[frozenset[str], ...]

    def __init__(self, start_position: int, end_position: int, start_time: Any, end_time: Any,
                 positions: tuple[int, ...], partition: tuple[Any, ...],
                 labels: tuple[frozenset[str], ...]) -> None:
        self._start = (start_position, start_position, start_position, None, start_time)
        self._end = (end_position, end_time, partition, None)
        self.positions = positions
        self._labels = labels

    @property
    def start_position(self) -> int:
        return self._start[2]  # type: ignore[no-any-return]

    @property
    def end_position(self) -> int:
        return self._end[0]

    @property
    def start_time(self) -> Any:
        form = self._end[3]
        t = self._start[4]
        return t if form is None else from_micros(t, form[0], form[1])

    @property
    def end_time(self) -> Any:
        return self._end[1]

    @property
    def partition(self) -> tuple[Any, ...]:
        return self._end[2]

    @property
    def variables(self) -> dict[str, tuple[int, ...]]:
        """Variable → positions it binds in this match (selected variables only).

        When alternatives in the query give one event several roles that lead to this same
        complex event, the event is listed under each of them.
        """
        out: dict[str, list[int]] = {}
        for p, vs in zip(self.positions, self._labels, strict=True):
            for v in sorted(vs):
                out.setdefault(v, []).append(p)
        return {v: tuple(ps) for v, ps in out.items()}

    def key(self) -> tuple[int, int, tuple[int, ...], tuple[Any, ...]]:
        """``(end, start, positions, partition)``: a sortable identity of the complex event."""
        return (self._end[0], self._start[2], self.positions, self._end[2])

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (times as given)."""
        d: dict[str, Any] = {
            "start": self.start_position,
            "end": self.end_position,
            "positions": list(self.positions),
        }
        if self.partition:
            d["partition"] = list(self.partition)
        return d

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Match) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def __repr__(self) -> str:
        part = f", partition={self.partition!r}" if self.partition else ""
        return (f"Match([{self.start_position}, {self.end_position}], "
                f"positions={list(self.positions)}{part})")
