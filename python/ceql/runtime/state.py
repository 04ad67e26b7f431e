"""What one evaluation holds: the query's settings and the parts of the runtime, wired together.

:class:`Evaluation` is plain state (the loops of :mod:`ceql.runtime.feeds` drive it, the
:class:`~ceql.Evaluator` owns it, :mod:`ceql.runtime.snapshot` saves and restores it).

It also decides when partitions are swept (:meth:`Evaluation.sweep_due`): after as many rows
as partitions were kept by the last sweep (at least :data:`SWEEP_MIN`), so sweeping costs O(1)
per row and at most about twice the live partitions are kept; and, for a window in time or an
attribute, once the window key has moved a whole window on, so partitions go soon after their
runs expire even when no row creates one.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Protocol

from ..automata import DFA
from ..constants import TIME_UNIT_PER_SECOND, TIME_UNITS, WITHIN_ATTR, WITHIN_EVENTS, WITHIN_TIME
from ..errors import CeqlTypeError, CeqlValidationError
from ..ir import nodes as N
from ..predicates import AtomTable
from .algorithm import Runs
from .enumeration import Enumerator
from .partitions import Partitions
from .skipping import Inertness
from .times import Clock, exact

__all__ = ["SWEEP_MIN", "Compiled", "Evaluation"]

SWEEP_MIN = 4096  #: rows between two sweeps of expired partitions, at least (read at each sweep)


class Compiled(Protocol):
    """What the runtime reads of a compiled query (:class:`ceql.Query` is one)."""

    @property
    def ast(self) -> N.Query: ...

    def determinized(self, type_key: str, stream_key: str) -> tuple[AtomTable, DFA]: ...


class Evaluation:
    """The settings and state of one evaluation of one query."""

    __slots__ = ("atoms", "clock", "dfa", "enum", "inert", "offset", "parts", "pkeys", "query",
                 "runs", "since_sweep", "stream_key", "streams", "sweep_floor", "sweep_key",
                 "sweep_rows", "time", "time_unit", "type_key", "wamount", "wkind")

    def __init__(self, query: Compiled, time: str | None, type_key: str, stream_key: str,
                 time_unit: str) -> None:
        if not isinstance(time_unit, str):
            raise CeqlTypeError(f"time_unit must be a string, one of {', '.join(TIME_UNITS)}; "
                                f"not {type(time_unit).__name__}.")
        if time_unit not in TIME_UNIT_PER_SECOND:
            raise CeqlValidationError(
                f"Unknown time_unit {time_unit!r}: use one of {', '.join(TIME_UNITS)}.")
        self.query = query
        self.time = time
        self.type_key = type_key
        self.stream_key = stream_key
        self.time_unit = time_unit
        self.atoms, self.dfa = query.determinized(type_key, stream_key)
        ast = query.ast
        self.streams = frozenset(ast.streams)
        self.pkeys = ast.partition_by
        w = ast.within
        self.wkind: str | None = w.kind if w is not None else None
        self.wamount: Fraction | None = w.amount if w is not None else None
        eps: Any = None
        if w is not None and (w.kind in (WITHIN_EVENTS, WITHIN_ATTR) or time is None):
            eps = exact(w.amount)  # without a time attribute, positions stand for seconds
        self.clock = Clock(time, w.attr if w is not None and w.kind == WITHIN_ATTR else None)
        self.parts = Partitions(self.dfa.g0, eps is not None)
        self.runs = Runs(self.dfa, self.parts, eps, ast.consume)
        self.enum = Enumerator(self.clock, eps, ast.limit)
        self.inert = Inertness(self.dfa)
        self.inert.on_full = self.dfa_full
        self.offset = 0  # rows fed so far: the position of the next one
        self.since_sweep = 0  # rows since partitions were last swept
        #: sweep once ``since_sweep`` reaches this
        self.sweep_rows = SWEEP_MIN
        #: or once the window key reaches this (None: not a window in time or an attribute;
        #: -inf: at the first row, which sets it)
        self.sweep_key: Any = float("-inf") if w is not None and w.kind != WITHIN_EVENTS else None
        #: ... and at least this many rows came since the last sweep (what it could not drop)
        self.sweep_floor = 0

    @property
    def eps(self) -> Any:
        """The window bound in window-key units (None: no WITHIN)."""
        return self.runs.eps

    def set_eps(self, eps: Any) -> None:
        """Set the window bound everywhere it is read."""
        self.runs.eps = eps
        self.enum.eps = eps
        self.parts.windowed = eps is not None  # partitions made from now on keep a FIFO

    def times_decided(self) -> None:
        """The first timed event said whether times are timestamps: fix a time window's unit."""
        if self.wkind == WITHIN_TIME and self.time is not None:
            assert self.wamount is not None
            per_s = 1_000_000 if self.clock.is_ts else TIME_UNIT_PER_SECOND[self.time_unit]
            self.set_eps(exact(self.wamount * per_s))

    def dfa_full(self) -> None:
        """Between two events, the shared automaton is over its budget: let the owner reset it."""
        on_full = self.runs.on_full
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
        eps = self.runs.eps
        timewise = eps is not None and self.wkind != WITHIN_EVENTS
        held = self.parts.sweep(now_key, eps, timewise)
        self.since_sweep = 0
        self.sweep_rows = max(SWEEP_MIN, len(self.parts))
        self.sweep_floor = held
        if timewise:
            self.sweep_key = now_key + eps
