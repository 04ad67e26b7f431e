"""Which engine matches a partition of a MATCH_RECOGNIZE query, chosen here and nowhere else
(docs/match_recognize.md, "Engines"): the fixed-length engine (:mod:`ceql.mr.fixed`) when the
pattern has one labelling, else the leftmost Pike machine (:mod:`ceql.mr.matching`). Both take
the same rows and give the same output rows; callers see only :class:`PartitionEngine`. (Over
Arrow input a query of one labelling in its subset may instead run on the columnar engine,
:mod:`ceql.mr.columnar`, which :meth:`ceql.mr.MatchRecognizeQuery.evaluator` chooses.)"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from .fixed import FixedRun
from .matching import PartitionRun
from .setup import Setup

__all__ = ["PartitionEngine", "partition_run"]


class PartitionEngine(Protocol):
    """One partition's matching, fed by appending to its rows (see
    :class:`~ceql.mr.matching.PartitionRun` for each method's meaning)."""

    values: tuple[object, ...]

    def advance(self, out: list[dict[str, object]]) -> None:
        """Match what the rows so far decide; append the output rows now final."""

    def finish(self, out: list[dict[str, object]]) -> None:
        """The partition ended: append every output row left."""

    def expire(self, time: object, out: list[dict[str, object]]) -> None:
        """No row still to come is before ``time``: append the output rows that makes final."""

    def waiting_until(self) -> object:
        """When :meth:`expire` would make something final (None: never by time alone)."""

    def threads(self) -> int:
        """How much matching state is alive (for monitoring)."""

    def low_water(self) -> int:
        """The first row still to be read."""

    def export(self) -> dict[str, Any]:
        """The state besides the rows, as plain data."""

    def load(self, state: Any) -> None:
        """Continue from :meth:`export`'s state."""


def partition_run(setup: Setup, rows: Sequence[Mapping[str, object]],
                  values: tuple[object, ...]) -> PartitionEngine:
    """The engine for one partition over ``rows`` (PARTITION BY values ``values``)."""
    if setup.fixed is not None:
        return FixedRun(setup, rows, values)
    return PartitionRun(setup, rows, values)
