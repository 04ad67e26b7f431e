"""Compiled queries: the public face of the engine."""

from __future__ import annotations

import functools
import operator
import threading
import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, SupportsIndex

from .analysis import compile_warnings, normalize_schema, output_variables, validate
from .analysis.keys import implied_key, planned
from .analysis.negated import moved_negated_atoms
from .analysis.ranking import exponential_choices
from .automata import CEA, DFA, build_cea
from .automata.registers import RegisterPlan
from .constants import DEFAULT_STREAM_COLUMN, DEFAULT_TIME_UNIT, DEFAULT_TYPE_COLUMN
from .errors import CeqlInputError, CeqlTypeError, CeqlValidationError, UnseenNameWarning
from .frontends.ceql import depth_floor, format_query, parse
from .ir import MAX_DEPTH, depth, is_correlated_query, recursion_for
from .ir import nodes as N
from .predicates import AtomTable
from .runtime import Evaluator, Match, unseen_names_message
from .runtime.engine import Choice, choose
from .runtime.feeds import not_an_event
from .runtime.lazy import LazyPlan, plan_lazy
from .runtime.notices import warn
from .runtime.times import Clock

__all__ = ["DEFAULT_MAX_STATES", "Query", "compile", "compile_ir"]

DEFAULT_MAX_STATES = 10_000
_CHUNK = 2048


class Query:
    """A parsed, validated CEQL query, ready to run. Immutable and picklable."""

    __slots__ = ("__weakref__", "_cache", "_local", "ast", "max_states", "plan", "schema", "text")
    text: str
    ast: N.Query
    #: the query as evaluated: ``ast`` with an implied partition key (see
    #: :mod:`ceql.analysis.keys`)
    plan: N.Query
    schema: dict[str, str] | None
    max_states: int
    _cache: dict[tuple[str, str], tuple[AtomTable, CEA]]
    #: .dfas: this thread's automata, by (type_key, stream_key); .register_plans likewise
    _local: threading.local

    def __init__(self, text: str, ast: N.Query, schema: dict[str, str] | None,
                 max_states: int) -> None:
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "ast", ast)
        plan = ast
        if is_correlated_query(ast.where):
            with recursion_for(depth(ast.where)):
                plan = planned(moved_negated_atoms(ast))
        object.__setattr__(self, "plan", plan)
        object.__setattr__(self, "schema", schema)
        object.__setattr__(self, "max_states", max_states)
        object.__setattr__(self, "_cache", {})
        object.__setattr__(self, "_local", threading.local())

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Query is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        schema = tuple(sorted(self.schema.items())) if self.schema is not None else None
        return (_restore, (self.text, schema, self.max_states))

    def __repr__(self) -> str:
        return f"ceql.compile({self.text!r})"

    def _repr_html_(self) -> str:
        """The query in a notebook: its text, its automaton drawn, its plan."""
        from .display import query_html

        atoms, cea = self.automaton()
        return query_html(self.ast, atoms, cea)

    # ------------------------------------------------------------------ facts
    @property
    def partition_by(self) -> tuple[str, ...]:
        """The attributes of the PARTITION BY key, as written (``plan.partition_by`` adds the
        key the query's equalities imply, which runs it per value but is not reported in
        :attr:`Match.partition`)."""
        return self.ast.partition_by

    def implied_key(self) -> tuple[str, tuple[N.FilterAtom, ...]] | None:
        """The partition key the query's equalities between events imply, with those
        equalities (``b[user = a.user]`` → ``user``); None when there is none."""
        if self.plan is self.ast:
            return None
        key = implied_key(self.ast)
        return None if key is None else (key[0], tuple(key[1]))

    def exponential_choices(self) -> tuple[N.Agg, ...]:
        """The aggregates that make NEXT, LAST or MAX rank a partial match per subset of an
        iteration's events (:class:`~ceql.errors.ExponentialChoiceWarning`); empty when none."""
        return tuple(exponential_choices(self.ast))

    @property
    def variables(self) -> tuple[str, ...]:
        """The variables a match reports: the SELECT list, or in pattern order every variable
        but a type name that only repeats an alias (:func:`ceql.analysis.output_variables`)."""
        return output_variables(self.ast)

    def automaton(self, type_key: str = DEFAULT_TYPE_COLUMN,
                  stream_key: str = DEFAULT_STREAM_COLUMN) -> tuple[AtomTable, CEA]:
        """The query's atoms and complex event automaton for events keyed this way (cached)."""
        key = (type_key, stream_key)
        hit = self._cache.get(key)
        if hit is None:
            atoms = AtomTable(type_key=type_key, stream_key=stream_key)
            with recursion_for(depth(self.ast.where)):
                hit = (atoms, build_cea(self.plan, atoms))
            self._cache[key] = hit
        return hit

    def determinized(self, type_key: str, stream_key: str) -> tuple[AtomTable, DFA]:
        """The atoms and the lazily determinized automaton, shared by this thread's evaluators.

        Sharing means each partition, task or batch of a thread reuses the states and
        transitions computed before it. The automaton is a cache with a budget
        (``max_states``): when full, it keeps what live evaluators hold and drops the rest. One
        per thread (it changes as it runs), dropped with the thread.
        """
        dfas: dict[tuple[str, str], tuple[AtomTable, DFA]] | None = getattr(
            self._local, "dfas", None)
        if dfas is None:
            dfas = self._local.dfas = {}
        key = (type_key, stream_key)
        hit = dfas.get(key)
        if hit is None:
            atoms, cea = self.automaton(type_key, stream_key)
            hit = dfas[key] = (atoms, DFA(cea, "ALL" if cea.edge_last or cea.edge_next
                                      else self.plan.strategy,
                                      self.max_states))
        return hit

    def register_plan(self, type_key: str, stream_key: str, full_d: bool,
                      fated: bool = False) -> RegisterPlan:
        """The register plan of a query with conditions between events, shared by this
        thread's evaluators like :meth:`determinized` (immutable but for caches derived from
        it; building it compiles every condition, too slow to repeat on each restore)."""
        plans: dict[tuple[str, str, bool, bool], RegisterPlan] | None = getattr(
            self._local, "register_plans", None)
        if plans is None:
            plans = self._local.register_plans = {}
        key = (type_key, stream_key, full_d, fated)
        hit = plans.get(key)
        if hit is None:
            hit = plans[key] = RegisterPlan(self.automaton(type_key, stream_key)[1], full_d,
                                            fated)
        return hit

    def cea(self) -> CEA:
        """The (non-deterministic) complex event automaton of the query."""
        return self.automaton()[1]

    # ------------------------------------------------------------------ running
    def evaluator(self, *, time: str | None = None, type_key: str = DEFAULT_TYPE_COLUMN,
                  stream_key: str = DEFAULT_STREAM_COLUMN,
                  time_unit: str = DEFAULT_TIME_UNIT, time_format: str | None = None,
                  keep_events: bool = False, lazy: bool | None = None) -> Evaluator:
        """A stateful evaluator: ``feed(batch)`` returns the matches each batch completes.

        ``time`` names the time attribute (numbers count ``time_unit``s — seconds by default;
        datetimes allowed; strings with ``time_format``, a ``datetime.strptime`` format such
        as ``"%d/%m/%Y %H:%M"``); ``None`` uses positions as time, which a window in time
        (``WITHIN 10 SECONDS``) refuses. With ``keep_events=True`` each match carries its
        events (:attr:`Match.events`); the evaluator keeps only those a later match can
        include. ``lazy``: feed the automaton only the rows of Arrow batches that can be in a
        match (:meth:`lazy_plan`); None lets the planner decide per batch, True uses it
        whenever the query allows, False never; the matches are the same.
        """
        return Evaluator(self, time=time, type_key=type_key, stream_key=stream_key,
                         time_unit=time_unit, time_format=time_format, keep_events=keep_events,
                         lazy=lazy)

    def lazy_plan(self, type_key: str = DEFAULT_TYPE_COLUMN,
                  stream_key: str = DEFAULT_STREAM_COLUMN) -> LazyPlan:
        """Whether lazy evaluation may run this query (and why not), and the conditions every
        match has an event for, which it checks rarest first (see :mod:`ceql.runtime.lazy`)."""
        return plan_lazy(self.plan, self.automaton(type_key, stream_key)[1])

    def engine(self, type_key: str = DEFAULT_TYPE_COLUMN,
               stream_key: str = DEFAULT_STREAM_COLUMN, keep_events: bool = False,
               lazy: bool | None = None) -> Choice:
        """The engine stack an evaluator with these options runs (``.name`` says it in
        words): the base engine and the wrappers around it, chosen once, here."""
        return choose(self.plan, self.automaton(type_key, stream_key)[1], keep_events, lazy)

    def restore(self, data: bytes) -> Evaluator:
        """Continue an evaluation of this query saved by :meth:`Evaluator.snapshot`.

        The restored evaluator takes the options of the one that took the snapshot and gives
        exactly the matches the original would have given for the events that follow.
        """
        return Evaluator.restore(self, data)

    def run(self, events: Iterable[Mapping[str, Any]], *, time: str | None = None,
            type_key: str = DEFAULT_TYPE_COLUMN, stream_key: str = DEFAULT_STREAM_COLUMN,
            time_unit: str = DEFAULT_TIME_UNIT, sort: bool = False,
            time_format: str | None = None) -> Iterator[Match]:
        """Evaluate over ``events`` (mappings) and yield every match, in stream order.

        Options as for :meth:`evaluator`; each match carries its events
        (:attr:`Match.events`). Positions are the events' indices in ``events`` as given. With
        ``sort=True`` the events are first sorted by ``time`` (stable; a time must be a number
        or a datetime, or a string with ``time_format``; events without one go last): matches
        come in time order, ``positions`` stay ascending indices of the input, each variable
        lists the indices of its events, and ``start_position``/``end_position`` are the
        indices of the match's first and last event *in time order* (so ``start_position``
        may exceed ``end_position``, while ``start_time <= end_time``).

        A match that waits for time to pass (a trailing NOT) comes once a later event shows
        its window has passed, or at the end. Once all events were read, an event type or
        stream of the query that none of them
        carried (a misspelling?) is warned of (:class:`ceql.UnseenNameWarning`).
        """
        if isinstance(events, Mapping | str | bytes | bytearray) or not _iterable(events):
            one = " (one event? put it in a list)" if isinstance(events, Mapping) else ""
            raise CeqlTypeError("Query.run takes an iterable of mappings (e.g. a list of dicts), "
                                f"not {type(events).__name__}{one}.")
        ev = self.evaluator(time=time, type_key=type_key, stream_key=stream_key,
                            time_unit=time_unit, time_format=time_format, keep_events=True)
        if sort and time is not None:
            yield from _run_sorted(ev, list(events), time, time_format)
        else:
            chunk: list[Mapping[str, Any]] = []
            for e in events:
                chunk.append(e)
                if len(chunk) >= _CHUNK:
                    yield from ev.iter_feed(chunk)
                    chunk = []
            if chunk:
                yield from ev.iter_feed(chunk)
            yield from ev.close()  # the input is complete: what waited for time is final
        message = unseen_names_message(ev.unseen(), ev.seen(), ev.events_seen)
        if message is not None:
            warn(message, UnseenNameWarning)


def _iterable(x: object) -> bool:
    try:
        iter(x)  # type: ignore[call-overload]
    except TypeError:
        return False
    return True


def _run_sorted(ev: Evaluator, rows: list[Mapping[str, Any]], time: str,
                time_format: str | None) -> Iterator[Match]:
    # Times are read (and refused) as the evaluator reads them, but with the events' own
    # positions; events without a time go last, for the evaluator to skip or refuse.
    clock = Clock(time, None, time_format)
    keys: list[tuple[int, Any]] = []
    for i, e in enumerate(rows):
        if not isinstance(e, Mapping):
            raise not_an_event(e, i)
        keys.append((1, 0) if e.get(time) is None else (0, clock.row_time(e, i)[0]))
    order = sorted(range(len(rows)), key=keys.__getitem__)
    ev._label_positions(order.__getitem__)
    try:
        matches = ev.feed([rows[i] for i in order])
    except CeqlInputError as exc:
        exc.add_note("With sort=True, event positions in this message count the events in "
                     "time order.")
        raise
    for m in [*matches, *ev.close()]:
        # positions ascending in the input; labels and events follow their events
        events = m.events or ()
        moved = sorted(zip([order[p] for p in m.positions], m._labels, events, strict=True),
                       key=_first)
        yield Match(order[m.start_position], order[m.end_position], m.start_time, m.end_time,
                    tuple(p for p, _, _ in moved), m.partition, tuple(lb for _, lb, _ in moved),
                    timed=m.timed, events=tuple(e for _, _, e in moved))


def _first(t: tuple[int, Any, Any]) -> int:
    return t[0]


def _restore(text: str, schema: tuple[tuple[str, str], ...] | None, max_states: int) -> Query:
    # Unpickling (e.g. in every Spark task) does not repeat the compile-time warnings.
    return _compile_cached(text, schema, max_states)


@functools.lru_cache(maxsize=256)
def _compile_cached(text: str, schema: tuple[tuple[str, str], ...] | None,
                    max_states: int) -> Query:
    sch = dict(schema) if schema is not None else None
    levels, exact = depth_floor(text)  # refuses a huge query before parsing it (seconds)
    if levels <= MAX_DEPTH:
        ast = parse(text)
        levels, exact = depth(ast), True
    if levels > MAX_DEPTH:
        raise CeqlValidationError(
            f"The query nests {'' if exact else 'at least '}{levels} levels deep; ceql compiles "
            f"at most {MAX_DEPTH}. Shorten the longest sequence or nesting (e.g. use A+ for a "
            "run of A events).")
    with recursion_for(levels):
        ast = validate(ast, text, sch)
        q = Query(text, ast, sch, max_states)
        q.automaton()  # compile now: errors surface at compile time
    return q


def compile(text: str, *, schema: Any = None, max_states: int = DEFAULT_MAX_STATES) -> Query:
    """Parse, validate and compile a CEQL query (cached by text, schema and max_states).

    ``schema`` (optional) maps attribute names to types (``"number"``, ``"string"``,
    ``"bool"``, ``"timestamp"``, Python types or a ``pyarrow.Schema``) and enables
    compile-time checks of attribute names and types.
    """
    if not isinstance(text, str):
        raise CeqlTypeError(f"A CEQL query must be a string, not {type(text).__name__}.")
    sch = normalize_schema(schema) if schema is not None else None
    key = tuple(sorted(sch.items())) if sch is not None else None
    states = _checked_max_states(max_states)
    q = _compile_cached(text, key, states)
    # On every call, cached or not; Python's filters show each once per calling line.
    for category, message in _compile_warnings(text, key, states):
        warnings.warn(message, category, stacklevel=2)
    return q


def compile_ir(query: N.Query, *, schema: Any = None,
               max_states: int = DEFAULT_MAX_STATES) -> Query:
    """Validate and compile a query given as IR, without text to parse: what a front end
    that builds :mod:`ceql.ir.nodes` (SPAseq's lowering) hands the engine. The query's
    ``text`` (messages, explain, pickling) is the formatter's rendering of it. Options as for
    :func:`compile` (cached likewise, by the IR).
    """
    if not isinstance(query, N.Query):
        raise CeqlTypeError(f"compile_ir takes a ceql.ir.nodes.Query, not "
                            f"{type(query).__name__}.")
    sch = normalize_schema(schema) if schema is not None else None
    key = tuple(sorted(sch.items())) if sch is not None else None
    states = _checked_max_states(max_states)
    q = _compile_ir_cached(query, key, states)
    for category, message in _compile_ir_warnings(query, key, states):
        warnings.warn(message, category, stacklevel=2)
    return q


@functools.lru_cache(maxsize=256)
def _compile_ir_cached(query: N.Query, schema: tuple[tuple[str, str], ...] | None,
                       max_states: int) -> Query:
    sch = dict(schema) if schema is not None else None
    levels = depth(query.where)
    if levels > MAX_DEPTH:
        raise CeqlValidationError(
            f"The query nests {levels} levels deep; ceql compiles at most {MAX_DEPTH}.")
    with recursion_for(levels):
        text = format_query(query)
        ast = validate(query, text, sch)
        q = Query(text, ast, sch, max_states)
        q.automaton()  # compile now: errors surface at compile time
    return q


@functools.lru_cache(maxsize=256)
def _compile_ir_warnings(query: N.Query, schema: tuple[tuple[str, str], ...] | None,
                         max_states: int) -> tuple[tuple[type[Warning], str], ...]:
    """The warnings :func:`compile` would give the query (computed once)."""
    kinds = dict(schema) if schema is not None else None
    return compile_warnings(_compile_ir_cached(query, schema, max_states).ast, kinds)


@functools.lru_cache(maxsize=256)
def _compile_warnings(text: str, schema: tuple[tuple[str, str], ...] | None,
                      max_states: int) -> tuple[tuple[type[Warning], str], ...]:
    """The LIKE, unbounded-output and (with a schema) text-order warnings of a compiled query
    (computed once)."""
    kinds = dict(schema) if schema is not None else None
    return compile_warnings(_compile_cached(text, schema, max_states).ast, kinds)


def _checked_max_states(n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, SupportsIndex):
        raise CeqlTypeError(f"max_states must be a whole number (an int), not {type(n).__name__}.")
    value = operator.index(n)
    if value < 1:
        raise CeqlValidationError(
            f"max_states must be at least 1, not {value}: it caps the automaton states one "
            f"evaluation holds at once (default {DEFAULT_MAX_STATES}).")
    return value
