"""The evaluation loop: events in time order → instants → GPM mappings → runs → matches.

Events are checked (:mod:`.events`), those of other streams dropped, and held until an event
of a later time (or :meth:`Evaluator.close`) shows that their instant is complete. Complete
instants are evaluated in batches (:data:`BATCH_EVENTS` events, or what one ``feed`` call
completes): each stream's GPMs run once over the batch's events
(:meth:`ceql.rdf.GpmEvaluator.evaluate_many`, mappings as N-Triples texts so that joins are
``sameTerm``; GPMs equal up to the names of their variables run once, their mappings renamed),
then the runs advance instant by instant (:mod:`.runs`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast, overload

from ..errors import CeqlInputError
from ..rdf import GpmEvaluator, GpmResults, StaticDataset
from ..rdf.sparql import canonical_form
from .conditions import FilterChecker
from .engine import EngineRuns
from .events import Event, StreamNames, TimeKey, check_event
from .lowering import lower_plan
from .match import Match
from .plan import Plan
from .runs import Choice, Runs, renamed

__all__ = ["BATCH_EVENTS", "Evaluator"]

BATCH_EVENTS = 512
"""Events whose GPMs are evaluated together (one query per GPM per batch)."""


class _Names(Sequence[str]):
    """The names of a batch's events for error messages (``event <position>``), made only
    when one is read."""

    def __init__(self, positions: list[int]) -> None:
        self._positions = positions

    def __len__(self) -> int:
        return len(self._positions)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [f"event {p}" for p in self._positions[i]]
        return f"event {self._positions[i]}"


class Evaluator:
    """One evaluation of a query over events fed in time order (see
    :meth:`ceql.spaseq.Query.evaluator`). Not thread-safe: one per thread or task."""

    def __init__(self, plan: Plan, streams: StreamNames, dataset: StaticDataset | None,
                 batch: int = BATCH_EVENTS, engine: bool = True) -> None:
        self._plan = plan
        self._streams = streams
        self._batch = batch
        # GPMs equal up to the names of their variables run once: GPM → (the one that runs,
        # its variable → this GPM's variable)
        by_stream: dict[str, dict[str, str]] = {iri: {} for iri in streams.order}
        seen: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {}
        self._same: dict[str, list[tuple[str, dict[str, str]]]] = {}
        for g, iri in plan.streams.items():
            text, names = canonical_form(plan.sparql[g])
            first = seen.setdefault((iri, text), (g, names))
            if first[0] == g:
                by_stream[iri][g] = plan.sparql[g]
            self._same.setdefault(first[0], []).append(
                (g, dict(zip(first[1], names, strict=True))))
        self._gpms = {iri: GpmEvaluator(q, dataset, terms=True,
                                        patterns={g: plan.patterns[g] for g in q
                                                  if g in plan.patterns})
                      for iri, q in by_stream.items()}
        lowered = lower_plan(plan)
        self._runs: Runs | EngineRuns
        if engine and lowered.query is not None:
            self._runs = EngineRuns(plan, lowered, self._complete)
            self.path_reason: str | None = None
        else:
            self._runs = Runs(plan, FilterChecker())
            self.path_reason = lowered.reason if engine else "engine=False"
        """Why the sequence runs on the run loop of :mod:`.runs` rather than on ceql's
        engine (``None``: on the engine; see :attr:`engine`)."""
        # per GPM that runs, the others equal to it up to variable names that get choices:
        # on the engine only those its records read (:attr:`EngineRuns.reads`; the rest are
        # added if it hands over, :meth:`_complete`)
        reads = self._runs.reads if isinstance(self._runs, EngineRuns) else None
        self._extra = {rep: [(g, r) for g, r in group
                             if g != rep and (reads is None or g in reads)]
                       for rep, group in self._same.items()}
        self._held: list[Event] = []
        self._ready: list[list[Event]] = []  # complete instants, not evaluated yet
        self._waiting = 0  # events in them
        self._kind: tuple[str, int] | None = None
        self._count = 0
        self.gpm_seconds = 0.0
        """Seconds spent evaluating GPMs on event graphs so far (the rest of the time goes to
        the sequence: runs, cross-GPM FILTERs, event checks)."""

    @property
    def engine(self) -> bool:
        """Whether the sequence is (still) evaluated on ceql's engine."""
        return isinstance(self._runs, EngineRuns) and self._runs.handed_over is None

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
        try:
            for i, raw in enumerate(events):
                position = self._count if positions is None else positions[i]
                self._count += 1
                event = check_event(raw, position, self._streams)
                if event is None:
                    continue
                self._check(event, position)
                if self._held and event.key > self._held[-1].key:
                    self._ready.append(self._held)
                    self._waiting += len(self._held)
                    self._held = []
                    if self._waiting >= self._batch:
                        out.extend(self._flush())
                self._held.append(event)
        except CeqlInputError:
            self._flush()  # a bad graph before this event is reported first
            raise
        out.extend(self._flush())
        return out

    def _check(self, event: Event, position: int) -> None:
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
            if event.key == last.key:
                for e in self._held:
                    if e.stream == event.stream:
                        raise CeqlInputError(
                            f"events {e.position} and {position} are both on stream "
                            f"{self._streams.name[e.stream]} <{e.stream}> at time "
                            f"{event.time!r}: a stream has at most one event per time "
                            "(merge their graphs into one event)")

    def close(self) -> list[Match]:
        """The input is complete: evaluate the last instant and return its matches."""
        if self._held:
            self._ready.append(self._held)
            self._held = []
        return self._flush()

    def _complete(self, choices: Mapping[str, Sequence[Choice]]
                  ) -> dict[str, Sequence[Choice]]:
        """An instant's choices with every GPM's (those :meth:`_flush` left out renamed from
        the GPM that ran)."""
        out = dict(choices)
        for rep, group in self._same.items():
            for g, rename in group:
                if g not in out and rep in choices:
                    out[g] = renamed(g, rename, choices[rep])
        return out

    def _flush(self) -> list[Match]:
        """Evaluate the complete instants held: every stream's GPMs once over all their
        events (:meth:`ceql.rdf.GpmEvaluator.evaluate_many`), then the runs instant by
        instant."""
        ready, self._ready, self._waiting = self._ready, [], 0
        if not ready:
            return []
        start = time.perf_counter()
        if len(self._gpms) == 1:  # one stream: one event an instant
            flat = [held[0] for held in ready]
            per_stream = {flat[0].stream: list(range(len(flat)))}
        else:
            order = self._streams.order
            flat = []
            per_stream = {}
            for held in ready:
                if len(held) > 1:
                    held.sort(key=lambda e: order[e.stream])
                for e in held:
                    per_stream.setdefault(e.stream, []).append(len(flat))
                    flat.append(e)
        results: list[GpmResults] = [{}] * len(flat)
        for iri, at in per_stream.items():
            evs = [flat[i] for i in at]
            found = self._gpms[iri].evaluate_many([e.graph for e in evs],
                                                  names=_Names([e.position for e in evs]))
            for i, r in zip(at, found, strict=True):
                results[i] = r
        self.gpm_seconds += time.perf_counter() - start
        extra = self._extra
        batch: list[tuple[Any, TimeKey, dict[str, list[Choice]]]] = []
        i = 0
        for held in ready:
            choices: dict[str, list[Choice]] = {}
            for e in held:
                pos = e.position
                for rep, mappings in results[i].items():
                    # terms=True: every value is an N-Triples text
                    texts = cast(list[dict[str, str]], mappings)
                    mine: list[Choice] = [(rep, pos, m) for m in texts]
                    choices[rep] = mine
                    for g, rename in extra[rep]:
                        choices[g] = renamed(g, rename, mine)
                i += 1
            batch.append((held[0].time, held[0].key, choices))
        if isinstance(self._runs, EngineRuns):
            return self._runs.instants(batch)
        out: list[Match] = []
        for t, key, choices in batch:
            out.extend(self._runs.instant(t, key, choices))
        return out
