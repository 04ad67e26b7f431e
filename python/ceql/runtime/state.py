"""What one evaluation shares across its engine stack: the query's settings, the clock,
partitions, counters and notices, and the base engine's parts (:class:`Core`).

:class:`Evaluation` is plain state (the engines of :mod:`ceql.runtime.stack` drive it through
the loops of :mod:`ceql.runtime.feeds`, the :class:`~ceql.Evaluator` owns it,
:mod:`ceql.runtime.snapshot` saves and restores it with each layer's own part).

It also decides when partitions are swept (:meth:`Evaluation.sweep_due`): after as many rows
as partitions were kept by the last sweep (at least :data:`SWEEP_MIN`), so sweeping costs O(1)
per row and at most about twice the live partitions are kept; and, for a window in time or an
attribute, once the window key has moved a whole window on, so partitions go soon after their
runs expire even when no row creates one.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Protocol

from ..automata import CEA, DFA
from ..automata.registers import RegisterPlan
from ..constants import (
    TIME_UNIT_PER_SECOND,
    TIME_UNITS,
    WITHIN_ATTR,
    WITHIN_EVENTS,
    WITHIN_TIME,
)
from ..errors import CeqlTypeError, CeqlValidationError
from ..ir import formula_nodes
from ..ir import nodes as N
from ..predicates import AtomTable
from ..predicates.atoms import TypeIs
from .algorithm import Runs
from .correlated import RegisterInertness, RegisterRuns
from .edge_last import LastRuns
from .edges import EdgeEnumerator
from .enumeration import Enumerator
from .notices import Attributes, BetweenValues, Names, ValueTypes, query_attributes
from .partitions import Partitions
from .skipping import Inertness
from .times import Clock, exact

__all__ = ["SWEEP_MIN", "Compiled", "Core", "Evaluation"]

SWEEP_MIN = 4096  #: rows between two sweeps of expired partitions, at least (read at each sweep)


class Compiled(Protocol):
    """What the runtime reads of a compiled query (:class:`ceql.Query` is one)."""

    @property
    def ast(self) -> N.Query: ...

    @property
    def plan(self) -> N.Query: ...

    def determinized(self, type_key: str, stream_key: str) -> tuple[AtomTable, DFA]: ...

    def register_plan(self, type_key: str, stream_key: str, full_d: bool,
                      fated: bool = False) -> RegisterPlan: ...

    def automaton(self, type_key: str, stream_key: str) -> tuple[AtomTable, CEA]: ...


class Core:
    """The parts of a base engine the loops drive: its runs (Algorithm 1's ``step``), its
    enumerator (``emit``), its inertness, and the register plan (register runtime only)."""

    __slots__ = ("enum", "inert", "plan", "runs")

    def __init__(self, runs: Runs | RegisterRuns, enum: Enumerator | EdgeEnumerator,
                 inert: Inertness | RegisterInertness, plan: RegisterPlan | None) -> None:
        self.runs = runs
        self.enum = enum
        self.inert = inert
        #: the register plan (None: CORE's Algorithm 1); the register runtime reads each
        #: row's values, so the row loop hands the row to its ``step``
        self.plan = plan


class Evaluation:
    """The settings and shared state of one evaluation of one query (its engine stack is
    built around it by :func:`ceql.runtime.stack.start`)."""

    __slots__ = ("atoms", "attrs", "between", "clock", "closed", "consume", "core", "dfa",
                 "initial_eps", "keep_events", "mixed", "names", "offset", "parts", "pkeys",
                 "query", "query_streams", "query_types", "since_sweep", "stream_key", "streams",
                 "sweep_floor", "sweep_key", "sweep_rows", "time", "time_format", "time_unit",
                 "type_key", "wamount", "wkind")

    def __init__(self, query: Compiled, time: str | None, type_key: str, stream_key: str,
                 time_unit: str, time_format: str | None = None,
                 keep_events: bool = False, lazy: bool | None = None) -> None:
        _check_options(time, type_key, stream_key, time_unit, time_format, keep_events)
        if lazy is not None and not isinstance(lazy, bool):
            raise CeqlTypeError(f"lazy must be True, False or None, not {type(lazy).__name__}.")
        self.query = query
        self.time = time
        self.type_key = type_key
        self.stream_key = stream_key
        self.time_unit = time_unit
        self.time_format = time_format
        #: matches carry their events (the caller asked)
        self.keep_events = keep_events
        ast = query.plan  # with an implied partition key
        w = ast.within
        if w is not None and w.kind == WITHIN_TIME and time is None:
            raise _time_needed(query, w)
        self.atoms, self.dfa = query.determinized(type_key, stream_key)
        self.streams = frozenset(ast.streams)
        self.pkeys = ast.partition_by
        self.wkind: str | None = w.kind if w is not None else None
        self.wamount: Fraction | None = w.amount if w is not None else None
        eps: Any = None
        if w is not None and w.kind in (WITHIN_EVENTS, WITHIN_ATTR):
            eps = exact(w.amount)
        #: the window bound the engine starts with (a time window's is set at the first time)
        self.initial_eps = eps
        self.clock = Clock(time, w.attr if w is not None and w.kind == WITHIN_ATTR else None,
                           time_format)
        _, cea = query.automaton(type_key, stream_key)
        # (SELECT LAST, or keyed NEXT, with an edge NOT: runs hold no unions, so no FIFO cuts
        # them)
        keyed = cea.edge_last or cea.edge_next
        # an implied key's NaN fails the equality it stands for: no partition
        self.parts = Partitions(self.dfa.g0, eps is not None and not keyed,
                                tuple(a not in query.ast.partition_by for a in self.pkeys))
        #: the base engine's runs, enumerator and inertness (set by the stack that is built
        #: around this evaluation)
        self.core: Core
        self.consume = ast.consume
        self.offset = 0  # rows fed so far: the position of the next one
        self.closed = False  # the input ended (Evaluator.close)
        self.since_sweep = 0  # rows since partitions were last swept
        #: sweep once ``since_sweep`` reaches this
        self.sweep_rows = SWEEP_MIN
        #: or once the window key reaches this (None: not a window in time or an attribute;
        #: -inf: at the first row, which sets it)
        self.sweep_key: Any = float("-inf") if w is not None and w.kind != WITHIN_EVENTS else None
        #: ... and at least this many rows came since the last sweep (what it could not drop)
        self.sweep_floor = 0
        self.query_types = frozenset(n.name for n in formula_nodes(ast.where)
                                     if isinstance(n, N.EventType))
        self.query_streams = frozenset(ast.streams)
        #: the query's names no event carried yet, and the values seen
        self.names = Names(self.query_types, self.query_streams, {
            a.name: 1 << (2 * k) for k, a in enumerate(self.atoms.atoms) if isinstance(a, TypeIs)})
        #: strings compared with numbers: the first such event is warned of
        self.mixed = ValueTypes(self.atoms, ast.where, getattr(query, "text", None), type_key)
        #: the query's attributes no event carried yet (of the query as written: an implied
        #: partition key reads what the FILTER does)
        self.attrs = Attributes(query_attributes(query.ast))
        #: conditions between events: values that never compare, numbers held as text
        self.between = BetweenValues(getattr(query, "text", None))

    def new_class(self, c: int) -> None:
        """Events of class ``c`` are read: note the query's types it says they carry."""
        names = self.names
        if c & names.missing_mask and not names.note_class(c):
            self.core.inert.on_new = None

    def sample_types(self, rows: Any) -> None:
        """The batch ``rows`` (fed without error) leaves a type of the query unseen: collect
        type values from its first events read, for messages (at most ``names.sampling``)."""
        names = self.names
        if not (names.missing_mask and names.sampling and isinstance(rows, list | tuple)):
            return
        seen, tk, sk, streams, pkeys = (names.seen_types, self.type_key, self.stream_key,
                                        self.streams, self.pkeys)
        left = names.sampling
        for e in rows:
            if not left:
                break
            try:
                st = e.get(sk)
                if (st is not None and st not in streams) or any(
                        e.get(a) is None for a in pkeys):
                    continue
                t = e.get(tk)
                if t not in seen:
                    names.note_type(t)
            except (TypeError, AttributeError):
                continue
            left -= 1
        names.sampling = left

    @property
    def eps(self) -> Any:
        """The window bound in window-key units (None: no WITHIN)."""
        return self.core.runs.eps

    @property
    def prune_eps(self) -> Any:
        """The window bound runs expire by (None: they do not; NEXT, LAST and MAX over
        conditions between events rank every start before WITHIN cuts, and so does SELECT
        LAST with a leading or trailing NOT, whose old starts compete)."""
        runs = self.core.runs
        if isinstance(runs, LastRuns) or (isinstance(runs, RegisterRuns) and runs.ranked):
            return None
        return runs.eps

    def set_eps(self, eps: Any) -> None:
        """Set the window bound everywhere it is read."""
        core = self.core
        core.runs.eps = eps
        core.enum.eps = eps
        # partitions made from now on keep a FIFO (not needed where runs hold no unions)
        self.parts.windowed = eps is not None and not isinstance(core.runs, LastRuns)

    def times_decided(self) -> None:
        """The first timed event said whether times are timestamps: fix a time window's unit."""
        if self.wkind == WITHIN_TIME and self.time is not None:
            assert self.wamount is not None
            per_s = 1_000_000 if self.clock.is_ts else TIME_UNIT_PER_SECOND[self.time_unit]
            self.set_eps(exact(self.wamount * per_s))

    def dfa_full(self) -> None:
        """Between two events, the shared automaton is over its budget: let the owner reset it."""
        on_full = self.core.runs.on_full
        if on_full is not None:
            on_full()

    def sweep_due(self, now_key: Any) -> bool:
        """Whether to sweep before a row whose window key is ``now_key``, ``since_sweep``
        rows after the last sweep (the loops inline this test)."""
        k = self.sweep_key
        return self.since_sweep >= self.sweep_rows or (
            k is not None and now_key >= k and self.since_sweep >= self.sweep_floor)

    def sweep(self, now_key: Any) -> None:
        """Drop partitions that can never output again (see :meth:`Partitions.sweep`).

        ``now_key`` is the window key of the next event or of the last one read (ignored for
        a window in events, where each partition counts its own).
        """
        eps = self.prune_eps
        timewise = eps is not None and self.wkind != WITHIN_EVENTS
        held = self.parts.sweep(now_key, eps, timewise)
        self.since_sweep = 0
        self.sweep_rows = max(SWEEP_MIN, len(self.parts))
        self.sweep_floor = held
        if timewise:
            self.sweep_key = now_key + eps


def _check_options(time: object, type_key: object, stream_key: object, time_unit: object,
                   time_format: object, keep_events: object) -> None:
    for name, value, optional in (("time", time, True), ("type_key", type_key, False),
                                  ("stream_key", stream_key, False),
                                  ("time_format", time_format, True)):
        if not isinstance(value, str) and not (optional and value is None):
            what = "an attribute name" if name != "time_format" else "a strptime format"
            none = " or None" if optional else ""
            raise CeqlTypeError(f"{name} must be a string ({what}){none}, not "
                                f"{type(value).__name__}.")
    if not isinstance(time_unit, str):
        raise CeqlTypeError(f"time_unit must be a string, one of {', '.join(TIME_UNITS)}; "
                            f"not {type(time_unit).__name__}.")
    if time_unit not in TIME_UNIT_PER_SECOND:
        raise CeqlValidationError(
            f"Unknown time_unit {time_unit!r}: use one of {', '.join(TIME_UNITS)}.")
    if not isinstance(keep_events, bool):
        raise CeqlTypeError(f"keep_events must be True or False, not {type(keep_events).__name__}.")


def _time_needed(query: Compiled, w: N.Within) -> CeqlValidationError:
    """The error for a window in time without a time attribute."""
    text = getattr(query, "text", None)
    written = (text[w.span.start:w.span.end] if isinstance(text, str) and w.span.end > w.span.start
               else f"WITHIN {w.amount} SECONDS")
    return CeqlValidationError(
        f"{written} needs event times: pass time='<attribute>' (the attribute holding each "
        "event's time). Without it, positions would count as seconds (the event at position "
        "10 would come 10 seconds after the first), which is never what a time window means; "
        "for a window in events, write WITHIN n EVENTS.")
