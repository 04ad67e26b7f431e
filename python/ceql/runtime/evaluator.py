"""The stateful evaluator: a thin loop that hands each batch to the row or Arrow feed.

State carries over between batches and can be saved (:meth:`Evaluator.snapshot`) and restored
(:meth:`ceql.Query.restore`), so an evaluation may continue in another process.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import gc
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import pyarrow as pa

from ..automata import DFA
from ..constants import (
    DEFAULT_STREAM_COLUMN,
    DEFAULT_TIME_UNIT,
    DEFAULT_TYPE_COLUMN,
    WITHIN_ATTR,
    WITHIN_EVENTS,
    WITHIN_TIME,
)
from ..errors import CeqlInputError, CeqlTypeError, CeqlValidationError
from . import snapshot as _snapshot
from .engine import Engine
from .feeds import not_events, row_error
from .lazy import LazyReport
from .match import Match
from .notices import NameSet
from .stack import start
from .state import Compiled, Evaluation

__all__ = ["ARROW_SLICE", "Caches", "Evaluator", "Live", "no_gc"]

ARROW_SLICE = 262_144  # rows of an Arrow batch evaluated at a time


class Live(NamedTuple):
    """Counts of what an evaluator keeps: partitions, active automaton states (over all
    partitions), nodes in their union-lists, and union nodes awaiting expiry."""

    partitions: int
    states: int
    runs: int
    expiring: int


class Caches(NamedTuple):
    """Entries of the caches an evaluator uses: the shared automaton's cached transitions
    (budget ``DFA.max_transitions``) and this evaluation's inertness answers (same budget)."""

    automaton: int
    inertness: int


class Evaluator:
    """Stateful evaluation of one query over a stream delivered in pieces.

    ``feed`` takes a list of mappings or a ``pyarrow.RecordBatch``/``Table`` and returns the
    matches completed by those events, in stream order; state carries over between calls.
    Options as :meth:`ceql.Query.evaluator` documents them (``time_format``: the
    ``strptime`` format of string times; ``keep_events``: matches carry their events;
    ``lazy``: lazy evaluation of Arrow batches, see :meth:`lazy_report`).
    """

    __slots__ = ("__weakref__", "_engine", "_ev", "_oldest")

    def __init__(self, query: Compiled, *, time: str | None = None,
                 type_key: str = DEFAULT_TYPE_COLUMN, stream_key: str = DEFAULT_STREAM_COLUMN,
                 time_unit: str = DEFAULT_TIME_UNIT, time_format: str | None = None,
                 keep_events: bool = False, lazy: bool | None = None,
                 chains: bool = True) -> None:
        #: the shared state, and the engine stack engine.choose picked for the query
        #: (``chains`` False: not the dense or join engine, for a snapshot taken without)
        self._ev: Evaluation
        self._engine: Engine
        self._ev, self._engine = start(query, time, type_key, stream_key, time_unit,
                                       time_format, keep_events, lazy, chains)
        self._oldest = (0, 0, 0)  # oldest_live_position: (answer, events_seen then, cost)
        self._ev.core.runs.on_full = self._collect
        self._ev.dfa.attach(self)

    # ------------------------------------------------------------------ facts
    @property
    def query(self) -> Compiled:
        """The query evaluated."""
        return self._ev.query

    @property
    def time(self) -> str | None:
        """The time attribute (None: positions are times)."""
        return self._ev.time

    @property
    def type_key(self) -> str:
        """The attribute holding an event's type."""
        return self._ev.type_key

    @property
    def stream_key(self) -> str:
        """The attribute holding an event's stream."""
        return self._ev.stream_key

    @property
    def time_unit(self) -> str:
        """What a numeric time counts (``s``, ``ms``, ``us``, ``ns``)."""
        return self._ev.time_unit

    @property
    def time_format(self) -> str | None:
        """The ``strptime`` format of string times (None: strings are not times)."""
        return self._ev.time_format

    @property
    def keep_events(self) -> bool:
        """Whether matches carry their events (:attr:`ceql.Match.events`)."""
        return self._ev.keep_events

    @property
    def events_seen(self) -> int:
        """How many events (rows) have been fed so far."""
        return self._ev.offset

    @property
    def automaton(self) -> DFA:
        """The lazily determinized automaton (shared by this thread's evaluators of the query)."""
        return self._ev.dfa

    def live(self) -> Live:
        """How much state the evaluator keeps now (counts, for monitoring and tests)."""
        parts = self._ev.parts
        states = lists = fifo = 0
        for P in parts:
            states += len(P.states)
            lists += sum(len(ul) for ul in P.states.values())
            fifo += len(P.fifo) if P.fifo is not None else 0
        return Live(len(parts), states, lists, fifo)

    def unseen(self) -> NameSet:
        """The query's event types, streams (FROM) and attributes that no event fed so far
        carried (attributes: looked for in row batches given as lists or tuples, and in Arrow
        batches' columns; a batch of another kind ends the search).

        A type counts when an event the query reads (of its FROM streams, with a PARTITION BY
        value) carries it; a stream when any event names it in its stream attribute, so
        without a stream column every stream is unseen here, though its events (belonging to
        all streams) were read. :func:`ceql.runtime.unseen_names_message` says what matters.
        """
        ev = self._ev
        return ev.names.unseen(ev.query_types, ev.query_streams)._replace(
            attributes=ev.attrs.unseen())

    def seen(self) -> NameSet:
        """Type and stream values the events carried, for messages: the types of the first
        :data:`~ceql.runtime.notices.SAMPLE` events read while a type of the query had not
        occurred (row batches given as lists, and Arrow batches), the streams until every
        stream of the query had occurred; at most :data:`~ceql.runtime.notices.NAMES_CAP`
        of each."""
        return self._ev.names.seen()._replace(attributes=self._ev.attrs.seen_names())

    def lazy_report(self) -> LazyReport | None:
        """What lazy evaluation did with the last Arrow batch: whether it chose rows, the
        mandatory elements in the order it checked them (rarest first) with their counts,
        and the rows looked at, fed and held (``.active``: the fraction fed). None when lazy
        evaluation is off for this evaluator (``explain`` says why) or no batch came yet."""
        return self._engine.lazy_report()

    def caches(self) -> Caches:
        """How many entries the caches it uses hold now (counts, for monitoring and tests)."""
        return Caches(self._ev.dfa.cached, self._ev.core.inert.size)

    def oldest_live_position(self) -> int:
        """The position of the earliest event a match reported from now on can include
        (:attr:`events_seen` when no run is live): a caller keeping the events for its
        matches may drop those before it. Call it between feeds.

        A lower bound that never decreases. It is exact when refreshed, but refreshing walks
        the live tECS, so it is refreshed only once as many events were fed since the last
        walk as that walk visited nodes (amortized O(1) per event).
        """
        ev = self._ev
        now = ev.offset
        last, then, cost = self._oldest
        if now - then < cost:
            return last  # runs only die or start later, so it is still a lower bound
        best, cost = ev.parts.oldest_start(last)
        # (the engine's wrappers lower it: matches waiting for a trailing NOT's window, rows
        # lazy evaluation holds)
        pos = self._engine.oldest_live(now if best is None else best)
        self._oldest = (pos, now, cost)
        return pos

    # ------------------------------------------------------------------ feeding
    def feed(self, batch: Any) -> list[Match]:
        """Evaluate the next events; return the matches they complete, in stream order."""
        # The tECS is acyclic, so reference counting frees it; the cyclic collector would
        # only rescan the many young nodes and matches over and over.
        enabled = gc.isenabled()
        gc.disable()
        try:
            out: list[Match] = []
            extend = out.extend
            for chunk in self._chunks(batch):
                extend(chunk)
            return out
        finally:
            if enabled:
                gc.enable()

    def iter_feed(self, batch: Any) -> Iterator[Match]:
        """Like :meth:`feed`, but yield each match as soon as it is enumerated.

        Evaluation pauses while the caller consumes (matches are enumerated ahead in chunks
        of about two thousand); finish (or drop) the iterator before feeding more events.
        """
        for chunk in self.feed_chunks(batch):
            yield from chunk

    def feed_chunks(self, batch: Any) -> Iterator[Sequence[Match]]:
        """Like :meth:`iter_feed`, a chunk of matches at a time: a consumer of many matches
        reads a chunk's arrays (:func:`ceql.runtime.match_arrays.arrays_of`) instead of its
        :class:`Match` objects, which some engines then never build."""
        chunks = self._chunks(batch)
        while True:
            # The collector is off while the engine works (as in feed), on while the caller
            # consumes: its own objects may be cyclic.
            enabled = gc.isenabled()
            gc.disable()
            try:
                chunk = next(chunks, None)
            finally:
                if enabled:
                    gc.enable()
            if chunk is None:
                return
            yield chunk

    def _chunks(self, batch: Any) -> Iterator[Sequence[Match]]:
        """The matches of ``batch`` in stream order, as consecutive non-empty lists (with their
        events when kept); then what no later match includes is forgotten."""
        ev = self._ev
        engine = self._engine
        self._check_open("feed")
        arrow = isinstance(batch, pa.Table | pa.RecordBatch)
        # conditions between events are heard while a feed reads its events
        if arrow:
            ev.between.feeding(True)
            try:
                # Zero-copy slices bound the per-batch working arrays: a few MB however big
                # the batch, instead of tens of MB that fragment the C heap over a long stream.
                for rb in (batch.to_batches() if isinstance(batch, pa.Table) else (batch,)):
                    if ev.attrs.missing:
                        ev.attrs.note_names(rb.schema.names)
                    if rb.num_rows <= ARROW_SLICE:
                        yield from engine.feed_arrow(ev, rb)
                        continue
                    for first in range(0, rb.num_rows, ARROW_SLICE):
                        yield from engine.feed_arrow(ev, rb.slice(first, ARROW_SLICE))
            finally:
                ev.between.feeding(False)
        else:
            wrong = not_events(batch)
            if wrong is not None:
                raise wrong
            yield from engine.flush(ev)  # rows held for the next Arrow batch come first
            base = ev.offset
            ev.between.feeding(True)
            try:
                yield from engine.feed_rows(ev, batch)
            except (AttributeError, TypeError, OverflowError) as exc:
                # not events (or times that do not subtract): say which and why
                err = row_error(ev, batch, base, exc)
                if err is None:
                    raise
                raise err from exc
            finally:
                ev.between.feeding(False)
        engine.forget(self.oldest_live_position)
        if not arrow and ev.names.missing_mask:
            ev.sample_types(batch)
        if not arrow and ev.attrs.missing:
            ev.attrs.note_rows(batch)

    # ------------------------------------------------------------------ progress
    def advance(self, time: Any) -> list[Match]:
        """Declare that no event still to come has a time before ``time``; return the
        matches that makes final (a trailing NOT waits for time to pass), in order.

        ``time`` is a value of the time attribute (a number or a datetime, like the events'),
        or of the attribute a ``WITHIN n [attr]`` window measures; an event fed afterwards
        with an earlier one is refused as out of order. A query without a trailing NOT has
        nothing waiting: the call then only records the promise. With ``WITHIN n EVENTS``
        only the partition's next events (or :meth:`close`) make a match final.
        """
        ev = self._ev
        self._check_open("advance")
        clock = ev.clock
        kind = ev.wkind
        if kind == WITHIN_EVENTS:
            raise CeqlValidationError(
                "advance() moves time on, but this query's window counts events "
                f"(WITHIN {ev.wamount} EVENTS): its waiting matches become final with the "
                "partition's next events, or at close().")
        if kind == WITHIN_ATTR:
            key = _number(time, f"advance() takes a value of {clock.wattr!r} (the attribute "
                                "WITHIN measures)")
            if clock.last_wattr is None or key > clock.last_wattr:
                clock.last_wattr = key
        else:
            if ev.time is None:
                raise CeqlValidationError(
                    "advance() needs event times: this evaluator has none (pass time='<"
                    "attribute>' when creating it); without times only close() ends the "
                    "input.")
            key = _time_key(ev, time)
            if clock.last_time is None or key > clock.last_time:
                clock.last_time = key
        return self._engine.advance(ev, key)

    @property
    def waiting(self) -> int:
        """How many complex events wait for a trailing NOT's window to pass (not yet
        returned); their events are kept however old (see :meth:`oldest_live_position`)."""
        return self._engine.waiting()

    def waiting_until(self) -> Any:
        """The time after which the first match waiting for a trailing NOT becomes final:
        :meth:`advance` to a later time releases it. A value of the time attribute (a
        datetime for timestamps); None when no match waits or the window does not measure
        time (``WITHIN n EVENTS``, ``WITHIN n [attr]``). For streams: when to wake up."""
        ev = self._ev
        if ev.wkind != WITHIN_TIME:
            return None
        key = self._engine.waiting_until()
        return None if key is None else ev.clock.value(key)

    def close(self) -> list[Match]:
        """The input ended: return the matches still waiting (a trailing NOT waits for time to
        pass; a finite input is complete), in order. Feeding afterwards is an error; closing
        again returns nothing."""
        ev = self._ev
        if ev.closed:
            return []
        ev.closed = True
        return self._engine.close(ev)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._ev.closed

    def _check_open(self, what: str) -> None:
        if self._ev.closed:
            raise CeqlInputError(
                f"{what}() after close(): the input ended; create a new evaluator "
                "(Query.evaluator) to evaluate more events.")

    # ------------------------------------------------------------------ saving
    def snapshot(self) -> bytes:
        """The evaluation's live state as bytes; :meth:`ceql.Query.restore` continues it.

        Holds what a later event can still use — partitions with runs in the window, their
        pruned tECS, automaton states by content — plus the format number and a fingerprint of
        the query. Take it between feeds (not while an ``iter_feed`` iterator is unfinished).
        """
        engine = self._engine
        for _ in engine.flush(self._ev):  # held rows end no match (see runtime/lazy.py)
            pass
        engine.forget(self.oldest_live_position)
        with no_gc():  # many young acyclic nodes: the cyclic collector only rescans them
            return _snapshot.dump(self._ev, engine)

    @classmethod
    def restore(cls, query: Compiled, data: bytes) -> Evaluator:
        """An evaluator that continues exactly where the one that made ``data`` stopped."""
        opts, payload = _snapshot.options(query, data)
        # a snapshot the tECS or register runs took (before a chain engine ran the query)
        # continues on them
        chains = "dense" in payload or "join" in payload or not payload.get("partitions")
        ev = cls(query, time=opts.time, type_key=opts.type_key, stream_key=opts.stream_key,
                 time_unit=opts.time_unit, time_format=opts.time_format,
                 keep_events=opts.keep_events, chains=chains)
        with no_gc():
            _snapshot.load(ev._ev, ev._engine, payload)
        return ev

    def _label_positions(self, label: Any) -> None:
        """Messages name event ``p`` as ``label(p)`` (the caller's numbering, e.g. before it
        sorted the events)."""
        self._ev.mixed.label = label

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (self._ev.query, self.snapshot()))

    # ------------------------------------------------------------------ the shared automaton
    def _collect(self) -> None:
        self._ev.dfa.collect(self)

    def dfa_in_use(self) -> tuple[Iterable[int], Iterable[int]]:
        """The automaton states and global states this evaluator holds (for cache resets)."""
        return self._ev.parts.states_in_use()

    def dfa_was_reset(self) -> None:
        """The shared automaton dropped its caches: drop what was derived from them."""
        self._ev.core.inert.clear()


def _number(value: Any, what: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise CeqlTypeError(f"{what}: a number, not {value!r}.")
    return value


def _time_key(ev: Evaluation, value: Any) -> Any:
    """``value`` as a time key of the evaluation's clock (a number or a datetime)."""
    clock = ev.clock
    key: Any
    if isinstance(value, _dt.date):
        key, decided = clock.row_timestamp(value, ev.offset)
    elif isinstance(value, int | float) and not isinstance(value, bool) and value == value:
        key, decided = value, clock.decide(False, ev.offset)
    else:
        raise CeqlTypeError(
            f"advance() takes a time like the events' {ev.time!r} (a number or a datetime), "
            f"not {value!r}.")
    if decided:
        ev.times_decided()
    return key


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """The cyclic garbage collector off while a block builds many young acyclic objects."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _restore(query: Compiled, data: bytes) -> Evaluator:
    return Evaluator.restore(query, data)
