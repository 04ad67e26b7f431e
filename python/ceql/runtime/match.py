"""The complex events a query outputs."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any, SupportsIndex, overload

from ..errors import CeqlValidationError
from .display import match_html, matches_html
from .times import from_micros, iso

__all__ = ["Match", "Matches", "match_restored", "match_state"]

# What a match shares with every other match completed by the same event:
# (end_position, end_time, partition, time_form, timed) — ``time_form`` is ``None`` when times
# are kept as given, else ``(tz, as_date)`` to turn microseconds since the epoch into a
# ``datetime``/``date`` like the input's; ``timed`` says whether times come from a time
# attribute (else they are positions).
Ending = tuple[int, Any, tuple[Any, ...], "tuple[_dt.tzinfo | None, bool] | None", bool]


class Match:
    """One complex event.

    ``positions`` are the ascending original (0-based) indices of its events after the SELECT
    projection; ``start_position``/``end_position`` bound its interval; times are the time
    attribute's values at those positions (the positions themselves without a time attribute);
    ``partition`` holds the PARTITION BY key values (``()`` without PARTITION BY);
    ``events`` the events at ``positions`` when the evaluation kept them.
    """

    # The evaluator creates millions of these: it fills the four slots directly (no
    # ``__init__``), sharing ``_start`` (a tECS bottom node ``(_, _, start_position, _,
    # start_key)``), ``_end`` (an ``Ending``) and ``_labels`` between matches; ``_events`` is
    # set only when events are kept.
    __slots__ = ("_end", "_events", "_labels", "_start", "positions")
    _start: tuple[Any, ...]
    _end: Ending
    positions: tuple[int, ...]
    _labels: tuple[frozenset[str], ...]
    _events: tuple[Mapping[str, Any], ...]

    def __init__(self, start_position: int, end_position: int, start_time: Any, end_time: Any,
                 positions: tuple[int, ...], partition: tuple[Any, ...],
                 labels: tuple[frozenset[str], ...], *, timed: bool = False,
                 events: tuple[Mapping[str, Any], ...] | None = None) -> None:
        self._start = (start_position, start_position, start_position, None, start_time)
        self._end = (end_position, end_time, partition, None, timed)
        self.positions = positions
        self._labels = labels
        if events is not None:
            self._events = events

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
    def timed(self) -> bool:
        """Whether the times are a time attribute's (else they are positions)."""
        return self._end[4]

    @property
    def events(self) -> tuple[Mapping[str, Any], ...] | None:
        """The events at :attr:`positions`, in that order, or None when the evaluation did not
        keep them (``Query.run`` keeps them; an evaluator with ``keep_events=True``)."""
        try:
            return self._events
        except AttributeError:
            return None

    @property
    def labels(self) -> tuple[frozenset[str], ...]:
        """The variables that bind each event, in :attr:`positions` order (selected
        variables only; empty for an event no selected variable binds)."""
        return self._labels

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

    def to_dict(self, fields: bool = False) -> dict[str, Any]:
        """A JSON-friendly dict: ``start``, ``end``, ``positions`` and ``partition`` (with
        PARTITION BY). With ``fields=True`` also ``start_time`` and ``end_time`` (with a time
        attribute; datetimes in ISO 8601) and ``events``, the events at ``positions`` (their
        datetimes in ISO 8601 too), which the evaluation must have kept."""
        d: dict[str, Any] = {
            "start": self.start_position,
            "end": self.end_position,
            "positions": list(self.positions),
        }
        if self.partition:
            d["partition"] = list(self.partition)
        if fields:
            if self.timed:
                d["start_time"] = _plain(self.start_time)
                d["end_time"] = _plain(self.end_time)
            events = self.events
            if events is None:
                raise CeqlValidationError(
                    "to_dict(fields=True) needs the events of the match, which this evaluation "
                    "did not keep: Query.run keeps them; an evaluator keeps them with "
                    "Query.evaluator(keep_events=True).")
            d["events"] = [{k: _plain(v) for k, v in e.items()} for e in events]
        return d

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Match) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def __repr__(self) -> str:
        part = f", partition={self.partition!r}" if self.partition else ""
        times = (f", time=[{iso(self.start_time)}, {iso(self.end_time)}]" if self.timed
                 else "")
        return (f"Match([{self.start_position}, {self.end_position}], "
                f"positions={list(self.positions)}{part}{times})")

    def _repr_html_(self) -> str:
        """The match in a notebook: interval, times, variables or the events' fields."""
        return match_html(self)


def _plain(v: Any) -> Any:
    """A value for JSON: datetimes, dates and times in ISO 8601, others as they are."""
    return v.isoformat() if isinstance(v, (_dt.date, _dt.time)) else v


class Matches(list[Match]):
    """A list of matches that a notebook shows as a table: ``ceql.Matches(q.run(events))``."""

    __slots__ = ()

    @overload
    def __getitem__(self, i: SupportsIndex) -> Match: ...
    @overload
    def __getitem__(self, i: slice) -> Matches: ...

    def __getitem__(self, i: SupportsIndex | slice) -> Match | Matches:
        if isinstance(i, slice):
            return Matches(super().__getitem__(i))
        return super().__getitem__(i)

    def _repr_html_(self) -> str:
        """One row per match, one column per variable (the first ``display.MAX_ROWS``)."""
        return matches_html(self)


def match_state(m: Match) -> tuple[Any, ...]:
    """``m`` as plain data, for snapshots (:func:`match_restored` takes it back)."""
    return (m._start, m._end, m.positions, m._labels, m.events)


def match_restored(data: tuple[Any, ...]) -> Match:
    """The match :func:`match_state` gave (its fields checked for shape only)."""
    start, end, positions, labels, events = data
    if not (isinstance(start, tuple) and len(start) == 5 and isinstance(end, tuple)
            and len(end) == 5 and isinstance(positions, tuple)
            and isinstance(labels, tuple) and len(labels) == len(positions)
            and all(isinstance(x, frozenset) for x in labels)):
        raise ValueError("not a saved match")
    m = Match.__new__(Match)
    m._start = start
    m._end = end
    m.positions = positions
    m._labels = labels
    if events is not None:
        m._events = tuple(events)
    return m
