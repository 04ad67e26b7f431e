"""The evaluation loop: events in time order → instants → GPM mappings → runs → matches.

Events are checked (:mod:`.events`), those of other streams dropped, and held until an event
of a later time (or :meth:`Evaluator.close`) shows that their instant is complete; then each
stream's GPMs run over the instant's events (:class:`ceql.rdf.GpmEvaluator`, mappings as
N-Triples texts so that joins are ``sameTerm``) and the runs advance (:mod:`.runs`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import CeqlInputError
from ..rdf import GpmEvaluator, StaticDataset
from .conditions import FilterChecker
from .events import Event, StreamNames, check_event
from .match import Match
from .plan import Plan
from .runs import Choice, Runs

__all__ = ["Evaluator"]


class Evaluator:
    """One evaluation of a query over events fed in time order (see
    :meth:`ceql.spaseq.Query.evaluator`). Not thread-safe: one per thread or task."""

    def __init__(self, plan: Plan, streams: StreamNames, dataset: StaticDataset | None
                 ) -> None:
        self._plan = plan
        self._streams = streams
        by_stream: dict[str, dict[str, str]] = {iri: {} for iri in streams.order}
        for g, iri in plan.streams.items():
            by_stream[iri][g] = plan.sparql[g]
        self._gpms = {iri: GpmEvaluator(q, dataset, terms=True) for iri, q in by_stream.items()}
        self._runs = Runs(plan, FilterChecker())
        self._held: list[Event] = []
        self._kind: tuple[str, int] | None = None
        self._count = 0
        self.gpm_seconds = 0.0
        """Seconds spent evaluating GPMs on event graphs so far (the rest of the time goes to
        the sequence: runs, cross-GPM FILTERs, event checks)."""

    @property
    def events_read(self) -> int:
        """How many events were fed (all streams)."""
        return self._count

    def feed(self, events: Iterable[Mapping[str, Any]],
             positions: Sequence[int] | None = None) -> list[Match]:
        """Read ``events`` (in time order, after those fed before) and return the matches of
        every instant they complete. ``positions``: the events' indices as matches report
        them (default: counted from 0 over everything fed)."""
        out: list[Match] = []
        for i, raw in enumerate(events):
            position = self._count if positions is None else positions[i]
            self._count += 1
            event = check_event(raw, position, self._streams)
            if event is None:
                continue
            if self._kind is None:
                self._kind = (event.kind, position)
            elif event.kind != self._kind[0]:
                raise CeqlInputError(
                    f"event {position}: 'time' is a {event.kind} and event {self._kind[1]}'s is "
                    f"a {self._kind[0]}: all times must be of one kind")
            if self._held:
                last = self._held[-1]
                if event.key < last.key:
                    raise CeqlInputError(
                        f"event {position} at time {event.time!r} comes after event "
                        f"{last.position} at time {last.time!r}: feed events in time order "
                        "(Query.run sorts them)")
                if event.key > last.key:
                    out.extend(self._instant())
                else:
                    for e in self._held:
                        if e.stream == event.stream:
                            raise CeqlInputError(
                                f"events {e.position} and {position} are both on stream "
                                f"{self._streams.name[e.stream]} <{e.stream}> at time "
                                f"{event.time!r}: a stream has at most one event per time "
                                "(merge their graphs into one event)")
            self._held.append(event)
        return out

    def close(self) -> list[Match]:
        """The input is complete: evaluate the last instant and return its matches."""
        return self._instant() if self._held else []

    def _instant(self) -> list[Match]:
        held = sorted(self._held, key=lambda e: self._streams.order[e.stream])
        self._held = []
        choices: dict[str, list[Choice]] = {}
        start = time.perf_counter()
        for e in held:
            # terms=True: every value is an N-Triples text
            results = self._gpms[e.stream].evaluate(e.graph, name=f"event {e.position}")
            for g, mappings in results.items():
                choices[g] = [(g, e.position, m) for m in mappings]  # type: ignore[misc]
        self.gpm_seconds += time.perf_counter() - start
        return self._runs.instant(held[0].time, held[0].key, choices)
