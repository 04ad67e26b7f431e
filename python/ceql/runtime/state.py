"""What one evaluation holds: the query's settings and the parts of the runtime, wired together.

:class:`Evaluation` is plain state (the loops of :mod:`ceql.runtime.feeds` drive it, the
:class:`~ceql.Evaluator` owns it, :mod:`ceql.runtime.snapshot` saves and restores it).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Protocol

from ..automata import DFA
from ..constants import TIME_UNIT_PER_SECOND, TIME_UNITS, WITHIN_ATTR, WITHIN_EVENTS, WITHIN_TIME
from ..errors import CeqlError
from ..ir import nodes as N
from ..predicates import AtomTable
from .algorithm import Runs
from .enumeration import Enumerator
from .partitions import Partitions
from .skipping import Inertness
from .times import Clock, exact

__all__ = ["Compiled", "Evaluation"]


class Compiled(Protocol):
    """What the runtime reads of a compiled query (:class:`ceql.Query` is one)."""

    @property
    def ast(self) -> N.Query: ...

    def determinized(self, type_key: str, stream_key: str) -> tuple[AtomTable, DFA]: ...


class Evaluation:
    """The settings and state of one evaluation of one query."""

    __slots__ = ("atoms", "clock", "dfa", "enum", "inert", "offset", "parts", "pkeys", "query",
                 "runs", "since_sweep", "stream_key", "streams", "time", "time_unit",
                 "type_key", "wamount", "wkind")

    def __init__(self, query: Compiled, time: str | None, type_key: str, stream_key: str,
                 time_unit: str) -> None:
        if time_unit not in TIME_UNIT_PER_SECOND:
            raise CeqlError(f"Unknown time_unit {time_unit!r}: use one of {', '.join(TIME_UNITS)}.")
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
        self.offset = 0  # rows fed so far: the position of the next one
        self.since_sweep = 0  # relevant rows since partitions were last swept (row path)

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

    def sweep(self, now_key: Any) -> None:
        """Drop partitions that can never output again (see :meth:`Partitions.sweep`)."""
        eps = self.runs.eps
        self.parts.sweep(now_key, eps, eps is not None and self.wkind != WITHIN_EVENTS)
