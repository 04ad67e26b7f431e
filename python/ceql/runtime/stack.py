"""The engines and their wrappers (:class:`~ceql.runtime.engine.Engine`), and :func:`start`,
which builds the stack :func:`~ceql.runtime.engine.choose` picked for a query.

Base engines: :class:`CoreEngine` (CORE's Algorithm 1 over the tECS, with its LAST and NEXT
variants for an edge NOT), :class:`RegisterEngine` (runs over CEA state and registers) and
:class:`~ceql.runtime.dense.DenseEngine` (a ``:`` chain on whole columns).
Wrappers: :class:`EdgeCheck` (a leading or trailing NOT: complex events checked, trailing ones
waiting for their window), :class:`KeptRows` (the events of matches) and :class:`LazyRegions`
(only the rows of an Arrow batch that can be in a match are run).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import pyarrow as pa

from ..constants import CONSUME_NONE, WITHIN_EVENTS
from .algorithm import Runs
from .correlated import FatedRuns, RegisterEnumerator, RegisterInertness, RegisterRuns
from .dense import DenseEngine
from .dense_plan import ChainPlan, dense_plan, join_plan
from .edge_last import LastRuns, NextRuns
from .edges import EdgeEnumerator, Edges
from .engine import NO_TAPS, Choice, Engine, HoldsNothingBack, Taps, choose
from .enumeration import Enumerator
from .feeds import feed_arrow, feed_rows, run_rows, with_released
from .joins import JoinEngine
from .kept import KeptEvents
from .lazy import Lazy, LazyReport
from .match import Match
from .skipping import Inertness
from .state import Compiled, Core, Evaluation

__all__ = ["CoreEngine", "EdgeCheck", "KeptRows", "LazyRegions", "RegisterEngine", "start"]


class CoreEngine(HoldsNothingBack):
    """CORE's Algorithm 1 over the tECS (:mod:`.algorithm`, :mod:`.enumeration`)."""

    __slots__ = ("core", "name")

    def __init__(self, core: Core, name: str) -> None:
        self.core = core
        self.name = name

    def feed_rows(self, ev: Evaluation, rows: Iterable[Mapping[str, Any]],
                  taps: Taps = NO_TAPS) -> Iterator[Sequence[Match]]:
        return feed_rows(ev, self.core, rows, taps)

    def feed_arrow(self, ev: Evaluation, rb: pa.RecordBatch,
                   taps: Taps = NO_TAPS) -> Iterator[Sequence[Match]]:
        return feed_arrow(ev, self.core, rb, taps)

    def oldest_live(self, pos: int) -> int:
        return pos

    def save(self, parts: dict[str, Any]) -> None:
        parts["barriers"] = dict(getattr(self.core.enum, "barriers", {}))

    def load(self, payload: dict[str, Any]) -> None:
        barriers = payload.get("barriers")
        enum = self.core.enum
        if isinstance(barriers, dict) and hasattr(enum, "barriers"):
            enum.barriers = dict(barriers)


class RegisterEngine(CoreEngine):
    """The register runtime (:mod:`.correlated`): Algorithm 1 over (CEA state, registers)
    runs, for conditions between events, which read the events' values: the row loop hands
    each row to its ``step``, a batch's columns are loaded before its rows run."""

    __slots__ = ("runs",)

    def __init__(self, core: Core, name: str, runs: RegisterRuns) -> None:
        super().__init__(core, name)
        self.runs = runs

    def feed_rows(self, ev: Evaluation, rows: Iterable[Mapping[str, Any]],
                  taps: Taps = NO_TAPS) -> Iterator[Sequence[Match]]:
        return feed_rows(ev, self.core, rows, taps, reads=True)

    def feed_arrow(self, ev: Evaluation, rb: pa.RecordBatch,
                   taps: Taps = NO_TAPS) -> Iterator[Sequence[Match]]:
        self.runs.load_batch(rb, ev.offset)
        yield from feed_arrow(ev, self.core, rb, taps)


class EdgeCheck:
    """A leading or trailing NOT around an engine (:mod:`.edges`): the NOTs' events seen row
    by row and batch by batch, complex events checked, trailing ones released by time."""

    __slots__ = ("edges", "inner", "name")

    def __init__(self, inner: Engine, edges: Edges) -> None:
        self.inner = inner
        self.edges = edges
        self.name = f"edge NOTs → {inner.name}"

    def feed_rows(self, ev: Evaluation, rows: Iterable[Mapping[str, Any]],
                  taps: Taps = NO_TAPS) -> Iterator[Sequence[Match]]:
        return self.inner.feed_rows(ev, rows, taps._replace(edges=self.edges))

    def feed_arrow(self, ev: Evaluation, rb: pa.RecordBatch,
                   taps: Taps = NO_TAPS) -> Iterator[Sequence[Match]]:
        # complex events a trailing NOT released go before the matches of the event that
        # released them (the row path's order)
        out: list[Match] = []
        for chunk in self.inner.feed_arrow(ev, rb, taps._replace(edges=self.edges)):
            out += chunk
        released = self.edges.take_released()
        if released:
            out = with_released(out, released)
        if out:
            yield out

    def flush(self, ev: Evaluation) -> Iterator[Sequence[Match]]:
        return self.inner.flush(ev)

    def advance(self, ev: Evaluation, key: Any) -> list[Match]:
        return self.edges.advance(key)

    def close(self, ev: Evaluation) -> list[Match]:
        return self.edges.close()

    def oldest_live(self, pos: int) -> int:
        pos = self.inner.oldest_live(pos)
        waiting = self.edges.oldest_start()  # matches waiting for a trailing NOT's window
        return waiting if waiting is not None and waiting < pos else pos

    def waiting(self) -> int:
        edges = self.edges
        return len(edges.heap) + sum(len(p.pending) for p in edges.parts.values())

    def waiting_until(self) -> Any:
        heap = self.edges.heap
        return heap[0][0] if heap else None

    def forget(self, oldest: Callable[[], int]) -> None:
        self.inner.forget(oldest)

    def lazy_report(self) -> LazyReport | None:
        return self.inner.lazy_report()

    def check_saveable(self) -> None:
        self.inner.check_saveable()

    def save(self, parts: dict[str, Any]) -> None:
        self.inner.save(parts)
        parts["edges"] = self.edges.state()

    def load(self, payload: dict[str, Any]) -> None:
        self.inner.load(payload)
        edges = payload.get("edges")
        if edges is not None:
            self.edges.load(edges)


class KeptRows:
    """The events later matches can include, around an engine (:mod:`.kept`): rows stored as
    they move a run, Arrow batches kept whole, each match given its events; ``strip``: kept
    only for a NOT's conditions, so matches are returned without them."""

    __slots__ = ("inner", "kept", "name", "strip")

    def __init__(self, inner: Engine, kept: KeptEvents, strip: bool) -> None:
        self.inner = inner
        self.kept = kept
        self.strip = strip
        self.name = f"kept rows → {inner.name}"

    def feed_rows(self, ev: Evaluation, rows: Iterable[Mapping[str, Any]],
                  taps: Taps = NO_TAPS) -> Iterator[Sequence[Match]]:
        chunks = self.inner.feed_rows(ev, rows, taps._replace(kept=self.kept))
        return _stripped_all(chunks) if self.strip else chunks

    def feed_arrow(self, ev: Evaluation, rb: pa.RecordBatch,
                   taps: Taps = NO_TAPS) -> Iterator[Sequence[Match]]:
        chunks = self.inner.feed_arrow(ev, rb, taps._replace(kept=self.kept))
        return _stripped_all(chunks) if self.strip else chunks

    def flush(self, ev: Evaluation) -> Iterator[Sequence[Match]]:
        attach = self.kept.attach
        for chunk in self.inner.flush(ev):
            attach(chunk)
            yield stripped(chunk) if self.strip else chunk

    def advance(self, ev: Evaluation, key: Any) -> list[Match]:
        out = self.inner.advance(ev, key)
        return stripped(out) if self.strip else out

    def close(self, ev: Evaluation) -> list[Match]:
        out = self.inner.close(ev)
        return stripped(out) if self.strip else out

    def oldest_live(self, pos: int) -> int:
        return self.inner.oldest_live(pos)

    def waiting(self) -> int:
        return self.inner.waiting()

    def waiting_until(self) -> Any:
        return self.inner.waiting_until()

    def forget(self, oldest: Callable[[], int]) -> None:
        self.kept.forget(oldest())
        self.inner.forget(oldest)

    def lazy_report(self) -> LazyReport | None:
        return self.inner.lazy_report()

    def check_saveable(self) -> None:
        self.kept.check_saveable()  # names the event a snapshot cannot hold
        self.inner.check_saveable()

    def save(self, parts: dict[str, Any]) -> None:
        self.inner.save(parts)
        parts["kept"] = self.kept.state()

    def load(self, payload: dict[str, Any]) -> None:
        self.inner.load(payload)
        if "names" in payload and payload["kept"] is not None:  # format 2 on
            self.kept.load(payload["kept"])


class LazyRegions:
    """Lazy evaluation of Arrow batches around CORE's engine (:mod:`.lazy`): only the rows
    within the window of a row of every mandatory element are run; rows a batch's end leaves
    undecided are held for the next batch, or run by :meth:`flush`."""

    __slots__ = ("inner", "lazy", "name")

    def __init__(self, inner: CoreEngine, lazy: Lazy) -> None:
        self.inner = inner
        self.lazy = lazy
        self.name = f"lazy regions → {inner.name}"

    def feed_rows(self, ev: Evaluation, rows: Iterable[Mapping[str, Any]],
                  taps: Taps = NO_TAPS) -> Iterator[Sequence[Match]]:
        return self.inner.feed_rows(ev, rows, taps)

    def feed_arrow(self, ev: Evaluation, rb: pa.RecordBatch,
                   taps: Taps = NO_TAPS) -> Iterator[Sequence[Match]]:
        return self.inner.feed_arrow(ev, rb, taps._replace(lazy=self.lazy))

    def flush(self, ev: Evaluation) -> Iterator[Sequence[Match]]:
        rows = self.lazy.release()
        if rows is None:
            return iter(())
        return run_rows(ev, self.inner.core, rows)

    def advance(self, ev: Evaluation, key: Any) -> list[Match]:
        return self.inner.advance(ev, key)

    def close(self, ev: Evaluation) -> list[Match]:
        return self.inner.close(ev)

    def oldest_live(self, pos: int) -> int:
        pos = self.inner.oldest_live(pos)
        held = self.lazy.oldest_held()  # rows lazy evaluation holds are still to be fed
        return pos if held is None else min(pos, held)

    def waiting(self) -> int:
        return self.inner.waiting()

    def waiting_until(self) -> Any:
        return self.inner.waiting_until()

    def forget(self, oldest: Callable[[], int]) -> None:
        self.inner.forget(oldest)

    def lazy_report(self) -> LazyReport | None:
        return self.lazy.report

    def check_saveable(self) -> None:
        self.inner.check_saveable()

    def save(self, parts: dict[str, Any]) -> None:
        self.inner.save(parts)

    def load(self, payload: dict[str, Any]) -> None:
        self.inner.load(payload)


_C = TypeVar("_C", bound=Sequence[Match])
_Chosen = tuple[Choice, ChainPlan | None, ChainPlan | None]


def stripped(chunk: _C) -> _C:
    """``chunk`` without the events the evaluation kept only for itself."""
    for m in chunk:
        with contextlib.suppress(AttributeError):
            del m._events
    return chunk


def _stripped_all(chunks: Iterator[Sequence[Match]]) -> Iterator[Sequence[Match]]:
    for chunk in chunks:
        yield stripped(chunk)


def start(query: Compiled, time: str | None, type_key: str, stream_key: str, time_unit: str,
          time_format: str | None = None, keep_events: bool = False,
          lazy: bool | None = None, chains: bool = True) -> tuple[Evaluation, Engine]:
    """A new evaluation of ``query`` and the engine stack :func:`choose` picks for it."""
    ev = Evaluation(query, time, type_key, stream_key, time_unit, time_format, keep_events,
                    lazy)
    ast = query.plan  # with an implied partition key
    _, cea = query.automaton(type_key, stream_key)
    choice, dplan, jplan = _chosen(query, type_key, stream_key, keep_events, lazy, chains)
    eps = ev.initial_eps
    limit, consume = ast.limit, ast.consume
    edges: Edges | None = None
    if choice.edges:
        w = ast.within
        edges = Edges(cea.leading, cea.trailing, w is not None and w.kind == WITHIN_EVENTS,
                      limit, consume, cea.leading_conds, cea.trailing_conds, ast,
                      cea.edge_select, cea.edge_last, cea.edge_next,
                      ast.strategy if cea.edge_rank else None, ev.between)
        edges.eps = eps
        # LIMIT and CONSUME BY count only the complex events that pass the NOT's checks, so
        # the enumerator then does neither
        limit, consume = None, CONSUME_NONE
    core = _core(ev, query, choice, eps, limit, consume, type_key, stream_key, edges)
    ev.core = core
    if ast.partition_by != query.ast.partition_by:  # an implied key: not reported
        core.enum.key_len = len(query.ast.partition_by)
    core.inert.on_full = ev.dfa_full
    if ev.names.missing_mask:
        core.inert.on_new = ev.new_class
    runs = core.runs
    base: CoreEngine | DenseEngine | JoinEngine
    key_len = len(query.ast.partition_by) if ast.partition_by != query.ast.partition_by \
        else None
    if choice.base == "dense":
        assert dplan is not None
        base = DenseEngine(core, choice.base_name, dplan, key_len)
    elif choice.base == "join":
        assert jplan is not None
        base = JoinEngine(core, choice.base_name, jplan, key_len, ev.wkind == WITHIN_EVENTS,
                          ast.consume)
    elif isinstance(runs, RegisterRuns):
        base = RegisterEngine(core, choice.base_name, runs)
    else:
        base = CoreEngine(core, choice.base_name)
    engine: Engine = base
    if choice.lazy is not None:
        assert isinstance(base, CoreEngine)
        engine = LazyRegions(base, Lazy(choice.lazy, cea, choice.forced))
    if edges is not None:
        engine = EdgeCheck(engine, edges)
    if choice.kept:
        kept = KeptEvents()
        if edges is not None:
            edges.attach = kept.attach
            edges.value = kept.value
            edges.keeps = keep_events
        engine = KeptRows(engine, kept, choice.strip)
    return ev, engine


#: per query: what :func:`_chosen` decided for each set of options (an evaluator per
#: partition key would decide it again each time)
_CHOSEN: weakref.WeakKeyDictionary[Compiled, dict[tuple[Any, ...], _Chosen]] = (
    weakref.WeakKeyDictionary())


def _chosen(query: Compiled, type_key: str, stream_key: str, keep_events: bool,
            lazy: bool | None, chains: bool) -> _Chosen:
    """:func:`choose`'s engine stack for ``query`` and these options, with the chain plan of
    the dense or the join engine (computed once per query and options)."""
    memo = _CHOSEN.get(query)
    if memo is None:
        memo = _CHOSEN.setdefault(query, {})
    key = (type_key, stream_key, keep_events, lazy, chains)
    got = memo.get(key)
    if got is None:
        ast = query.plan
        _, cea = query.automaton(type_key, stream_key)
        choice = choose(ast, cea, keep_events, lazy, chains)
        got = memo[key] = (choice,
                           dense_plan(ast, cea) if choice.base == "dense" else None,
                           join_plan(ast, cea) if choice.base == "join" else None)
    return got


def _core(ev: Evaluation, query: Compiled, choice: Choice, eps: Any, limit: Any, consume: str,
          type_key: str, stream_key: str, edges: Edges | None) -> Core:
    """The base engine's parts for ``choice``."""
    ast = query.plan
    _, cea = query.automaton(type_key, stream_key)
    runs: Runs | RegisterRuns
    enum: Enumerator | EdgeEnumerator
    inert: Inertness | RegisterInertness
    plan = None
    if choice.base in ("registers", "fated"):
        # (edge_rank: the strategy is the edge stage's, among every unpruned run)
        full_d = ast.select is not None and ast.strategy in ("NEXT", "LAST", "MAX")
        plan = query.register_plan(type_key, stream_key, full_d, cea.edge_rank)
        ranked = ast.strategy in ("NEXT", "LAST", "MAX")
        runs = (FatedRuns(plan, ev.parts, eps, consume, ast.strategy, cea.edge_reads,
                          ev.between)
                if cea.edge_rank else
                RegisterRuns(plan, ev.parts, eps, consume, ranked, ast.strategy, ev.between))
        renum = RegisterEnumerator(ev.clock, eps, limit, ast.strategy, plan.full_d, ev.parts,
                                   consume, cea.edge_rank)
        renum.plan = plan
        enum = renum
        inert = RegisterInertness(plan, ev.dfa.g0)
    else:
        # SELECT LAST with an edge NOT: runs kept apart by start, none expires (the edge
        # stage chooses); SELECT NEXT: apart by start and the NOT's reads
        if choice.base == "next":
            runs = NextRuns(ev.dfa, ev.parts, eps, consume, cea.edge_reads)
        else:
            runs = (LastRuns if choice.base == "last" else Runs)(ev.dfa, ev.parts, eps,
                                                                  consume)
        enum = Enumerator(ev.clock, eps, limit)
        inert = Inertness(ev.dfa)
    if edges is not None:
        enum = EdgeEnumerator(enum, edges)
    return Core(runs, enum, inert, plan)

