"""The engine interface: what every way of evaluating a compiled query offers, and the one
decision of which engine and which wrappers evaluate a query.

An engine is CORE's Algorithm 1 over the tECS, the register runtime (runs keyed by CEA state
and registers, for conditions between events), or the dense engine (a ``:`` chain of single
events on whole columns, :mod:`ceql.runtime.dense`); edges (a leading or trailing NOT), kept rows
(the events of matches) and lazy regions (rows of an Arrow batch left out) wrap an engine and
offer the same interface (:mod:`ceql.runtime.stack` implements them). :func:`choose` picks the
stack once, from the plan of the query, and names it for ``explain``.

An engine runs over an :class:`~ceql.runtime.state.Evaluation` (the clock, partitions,
counters and notices its layers share, and the base engine's parts, :class:`~.state.Core`),
passed to each call. A wrapper that takes part in the
loops row by row (the NOTs' events, the rows kept, the rows chosen) hands its part inward
explicitly, as :class:`Taps`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

import pyarrow as pa

from ..automata import CEA
from ..constants import CONSUME_NONE
from ..ir import nodes as N
from .dense_plan import dense_plan, join_plan
from .edges import Edges
from .kept import KeptEvents
from .lazy import Lazy, LazyPlan, LazyReport, plan_lazy
from .match import Match
from .state import Evaluation

__all__ = ["NO_TAPS", "Choice", "Engine", "HoldsNothingBack", "Taps", "choose"]


class Taps(NamedTuple):
    """What the wrappers around an engine take part in inside its loops (None: no such
    wrapper): the edge stage sees every row and batch, kept rows store the rows that move a
    run, lazy regions choose the rows of a batch to run."""

    edges: Edges | None = None
    kept: KeptEvents | None = None
    lazy: Lazy | None = None


NO_TAPS = Taps()


class Engine(Protocol):
    """An evaluation of a compiled query over the shared state ``ev``: matches come out in
    stream order, in chunks."""

    @property
    def name(self) -> str:
        """The engine and its wrappers, outermost first (what ``explain`` shows)."""
        ...

    def feed_rows(self, ev: Evaluation, rows: Iterable[Mapping[str, Any]],
                  taps: Taps = NO_TAPS) -> Iterator[Sequence[Match]]:
        """Evaluate mappings one by one."""
        ...

    def feed_arrow(self, ev: Evaluation, rb: pa.RecordBatch,
                   taps: Taps = NO_TAPS) -> Iterator[Sequence[Match]]:
        """Evaluate one Arrow record batch."""
        ...

    def flush(self, ev: Evaluation) -> Iterator[Sequence[Match]]:
        """Run what is held for later (before rows one by one, or a snapshot)."""
        ...

    def advance(self, ev: Evaluation, key: Any) -> list[Match]:
        """No event before window key ``key`` is still to come: the matches made final."""
        ...

    def close(self, ev: Evaluation) -> list[Match]:
        """The input ended: the matches still waiting."""
        ...

    def oldest_live(self, pos: int) -> int:
        """``pos`` (the oldest start of a live run) lowered to the oldest event a match
        reported later can include, as far as this layer holds events."""
        ...

    def waiting(self) -> int:
        """Complex events waiting for a window to pass."""
        ...

    def waiting_until(self) -> Any:
        """The window key after which the first waiting complex event is final (None: none)."""
        ...

    def forget(self, oldest: Callable[[], int]) -> None:
        """Drop the events no later match includes: those before ``oldest()`` (called only
        by a layer that holds events)."""
        ...

    def lazy_report(self) -> LazyReport | None:
        """What lazy regions did with the last Arrow batch (None: not used, or no batch)."""
        ...

    def check_saveable(self) -> None:
        """Raise :class:`~ceql.errors.CeqlInputError` naming what this layer holds that a
        snapshot cannot (called once saving failed)."""
        ...

    def save(self, parts: dict[str, Any]) -> None:
        """Put this layer's part of a snapshot into ``parts``."""
        ...

    def load(self, payload: dict[str, Any]) -> None:
        """Take this layer's part back from a snapshot's payload."""
        ...


class HoldsNothingBack:
    """The :class:`Engine` methods of a base engine that holds no complex event back and keeps
    no event of its own: nothing waits, nothing to forget, nothing a snapshot cannot hold."""

    __slots__ = ()

    def flush(self, ev: Evaluation) -> Iterator[Sequence[Match]]:
        """No rows held for the next batch."""
        return iter(())

    def advance(self, ev: Evaluation, key: Any) -> list[Match]:
        """No complex event waits for time to pass."""
        return []

    def close(self, ev: Evaluation) -> list[Match]:
        """Nothing waits for the end."""
        return []

    def waiting(self) -> int:
        """No complex event waits."""
        return 0

    def waiting_until(self) -> Any:
        """No window to wait for."""
        return None

    def forget(self, oldest: Callable[[], int]) -> None:
        """No events held."""

    def lazy_report(self) -> LazyReport | None:
        """No lazy regions."""
        return None

    def check_saveable(self) -> None:
        """Everything saves."""


class Choice(NamedTuple):
    """The engine stack of a query: the base engine and which wrappers surround it."""

    base: str  #: ``core``, ``last``, ``next`` (Algorithm 1 over the tECS), ``registers``,
    #: ``fated``, ``dense`` (a ``:`` chain on whole columns), ``join`` (a chain with ``;``
    #: on whole columns)
    edges: bool  #: a leading or trailing NOT
    kept: bool  #: rows kept for the matches' events (``keep_events``, or a NOT reading them)
    strip: bool  #: ... kept only for the NOT: matches are returned without them
    lazy: LazyPlan | None  #: lazy regions of Arrow batches (None: not used)
    forced: bool  #: lazy regions on every batch (``lazy=True``), not as the planner sees fit

    @property
    def base_name(self) -> str:
        """The base engine in words."""
        return _BASES[self.base]

    @property
    def name(self) -> str:
        """The stack in words, outermost first."""
        layers = []
        if self.kept:
            layers.append("kept rows")
        if self.edges:
            layers.append("edge NOTs")
        if self.lazy is not None:
            layers.append("lazy regions")
        return " → ".join([*layers, self.base_name])


_BASES = {
    "core": "CORE's Algorithm 1 over the tECS",
    "last": "Algorithm 1 over the tECS without unions, a LAST chain per (state, start)",
    "next": "Algorithm 1 over the tECS without unions, a NEXT chain per (state, start, "
            "events the NOT reads)",
    "registers": "register runs, Algorithm 1 over (state, registers)",
    "fated": "register runs kept apart by fate, Algorithm 1 over (state, registers)",
    "dense": "a ':' chain on whole columns (rows grouped by partition with one sort, "
             "elements and conditions as comparisons of shifted arrays)",
    "join": "a chain with ';' on whole columns (each batch's matches joined backwards from "
            "their last element: partition, equalities and window by sorted search, "
            "conditions on the candidate arrays)",
}


def choose(plan: N.Query, cea: CEA, keep_events: bool = False,
           lazy: bool | None = None, chains: bool = True) -> Choice:
    """The engine and wrappers that evaluate ``plan`` (the query with its implied partition
    key) over its automaton ``cea``: the one place this is decided. ``chains`` False: never
    the dense or join engine (a snapshot that the tECS or register runs took)."""
    edges = cea.leading is not None or cea.trailing is not None
    if chains and dense_plan(plan, cea) is not None:
        base = "dense"
    elif chains and join_plan(plan, cea) is not None and (
            cea.scopes or plan.consume != CONSUME_NONE or not plan_lazy(plan, cea).eligible):
        # A chain of bare types keeps the tECS where lazy evaluation may skip its rows
        # (rare types), unless its outputs consume: the join then decides each end by its
        # latest start (CORE's dense rows: 2-2.4x the tECS, bench/RESULTS.md section 25).
        # (Not by the ``lazy`` option: a snapshot restores into the engine that took it.)
        base = "join"
    elif cea.scopes or cea.edge_rank:  # (a NOT's conditions on the match are not scopes)
        base = "fated" if cea.edge_rank else "registers"
    elif cea.edge_next:
        base = "next"
    elif cea.edge_last:
        base = "last"
    else:
        base = "core"
    # a NOT's conditions on the match read its events: keep them (and do not report them
    # unless asked: ``strip``)
    reads = edges and bool(cea.leading_conds or cea.trailing_conds)
    lplan: LazyPlan | None = None
    if lazy is not False and base not in ("dense", "join"):  # (they read whole columns)
        lp = plan_lazy(plan, cea)
        if lp.eligible:
            lplan = lp
    return Choice(base, edges, keep_events or reads, reads and not keep_events, lplan,
                  lazy is True)
