"""The complex events a query outputs."""

from __future__ import annotations

from typing import Any

__all__ = ["Match"]


class Match:
    """One complex event.

    ``positions`` are the ascending original (0-based) indices of its events after the SELECT
    projection; ``start_position``/``end_position`` bound its interval; times are the time
    attribute's values at those positions (the positions themselves without a time attribute);
    ``partition`` holds the PARTITION BY key values (``()`` without PARTITION BY).
    """

    __slots__ = ("_labels", "end_position", "end_time", "partition", "positions",
                 "start_position", "start_time")

    def __init__(self, start_position: int, end_position: int, start_time: Any, end_time: Any,
                 positions: tuple[int, ...], partition: tuple[Any, ...],
                 labels: tuple[frozenset[str], ...]) -> None:
        self.start_position = start_position
        self.end_position = end_position
        self.start_time = start_time
        self.end_time = end_time
        self.positions = positions
        self.partition = partition
        self._labels = labels

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
        return (self.end_position, self.start_position, self.positions, self.partition)

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
