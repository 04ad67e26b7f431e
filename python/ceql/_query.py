"""Compiled queries: the public face of the engine."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from . import _ast
from ._automaton import DFA
from ._cea import CEA, build_cea
from ._evaluator import Evaluator
from ._match import Match
from ._parser import parse
from ._predicates import AtomTable
from ._validate import normalize_schema, validate
from .errors import CeqlValidationError

__all__ = ["DEFAULT_MAX_STATES", "Query", "compile"]

DEFAULT_MAX_STATES = 10_000
_CHUNK = 2048


class Query:
    """A parsed, validated CEQL query, ready to run. Immutable and picklable."""

    __slots__ = ("__weakref__", "_cache", "_dfas", "ast", "max_states", "schema", "text")
    text: str
    ast: _ast.Query
    schema: dict[str, str] | None
    max_states: int
    _cache: dict[tuple[str, str], tuple[AtomTable, CEA]]
    _dfas: dict[tuple[str, str, int], tuple[AtomTable, DFA]]

    def __init__(self, text: str, ast: _ast.Query, schema: dict[str, str] | None,
                 max_states: int) -> None:
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "ast", ast)
        object.__setattr__(self, "schema", schema)
        object.__setattr__(self, "max_states", max_states)
        object.__setattr__(self, "_cache", {})
        object.__setattr__(self, "_dfas", {})

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Query is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        schema = tuple(sorted(self.schema.items())) if self.schema is not None else None
        return (_restore, (self.text, schema, self.max_states))

    def __repr__(self) -> str:
        return f"ceql.compile({self.text!r})"

    # ------------------------------------------------------------------ facts
    @property
    def partition_by(self) -> tuple[str, ...]:
        """The attributes of the PARTITION BY key."""
        return self.ast.partition_by

    @property
    def variables(self) -> tuple[str, ...]:
        """The variables a match reports (the SELECT list, or every bound variable)."""
        if self.ast.select is not None:
            return self.ast.select
        return tuple(sorted(_bound(self.ast.where)))

    def _automaton_parts(self, type_key: str, stream_key: str) -> tuple[AtomTable, CEA]:
        key = (type_key, stream_key)
        hit = self._cache.get(key)
        if hit is None:
            atoms = AtomTable(type_key=type_key, stream_key=stream_key)
            with _deep(_depth(self.ast.where)):
                hit = (atoms, build_cea(self.ast, atoms))
            self._cache[key] = hit
        return hit

    def _determinized(self, type_key: str, stream_key: str) -> tuple[AtomTable, DFA]:
        """The atoms and the lazily determinized automaton, shared by this thread's evaluators.

        Sharing means each partition, task or batch of a thread reuses the states and
        transitions computed before it; one copy per thread, because the DFA grows as it runs.
        """
        key = (type_key, stream_key, threading.get_ident())
        hit = self._dfas.get(key)
        if hit is None:
            atoms, cea = self._automaton_parts(type_key, stream_key)
            hit = self._dfas[key] = (atoms, DFA(cea, self.ast.strategy, self.max_states))
        return hit

    def cea(self) -> CEA:
        """The (non-deterministic) complex event automaton of the query."""
        return self._automaton_parts("type", "stream")[1]

    # ------------------------------------------------------------------ running
    def evaluator(self, *, time: str | None = None, type_key: str = "type",
                  stream_key: str = "stream", time_unit: str = "s") -> Evaluator:
        """A stateful evaluator: ``feed(batch)`` returns the matches each batch completes.

        ``time`` names the time attribute (numbers count ``time_unit``s — seconds by default;
        datetimes allowed); ``None`` uses positions as time.
        """
        return Evaluator(self, time=time, type_key=type_key, stream_key=stream_key,
                         time_unit=time_unit)

    def run(self, events: Iterable[Mapping[str, Any]], *, time: str | None = None,
            type_key: str = "type", stream_key: str = "stream", time_unit: str = "s",
            sort: bool = False) -> Iterator[Match]:
        """Evaluate over ``events`` (mappings) and yield every match, in stream order.

        With ``sort=True`` the events are first sorted by ``time`` (stable); positions still
        index the input as given.
        """
        ev = self.evaluator(time=time, type_key=type_key, stream_key=stream_key,
                            time_unit=time_unit)
        if sort and time is not None:
            yield from _run_sorted(ev, list(events), time)
            return
        chunk: list[Mapping[str, Any]] = []
        for e in events:
            chunk.append(e)
            if len(chunk) >= _CHUNK:
                yield from ev.iter_feed(chunk)
                chunk = []
        if chunk:
            yield from ev.iter_feed(chunk)


def _run_sorted(ev: Evaluator, rows: list[Mapping[str, Any]], time: str) -> Iterator[Match]:
    from ._evaluator import _to_micros

    def key(i: int) -> Any:
        v = rows[i].get(time)
        try:
            return (0, _to_micros(v))
        except TypeError:
            return (0, v) if v is not None else (1, 0)

    order = sorted(range(len(rows)), key=key)
    for m in ev.feed([rows[i] for i in order]):
        ps = tuple(sorted(order[p] for p in m.positions))
        yield Match(order[m.start_position], order[m.end_position], m.start_time, m.end_time,
                    ps, m.partition, m._labels)


def _bound(f: _ast.Formula) -> set[str]:
    out: set[str] = set()
    todo: list[_ast.Formula] = [f]
    while todo:
        g = todo.pop()
        if isinstance(g, _ast.EventType):
            out.add(g.name)
        elif isinstance(g, _ast.As):
            out.add(g.var)
            todo.append(g.formula)
        elif isinstance(g, (_ast.Filter, _ast.Plus)):
            todo.append(g.formula)
        else:
            todo += [g.left, g.right]
    return out


MAX_DEPTH = 2000


def _depth(node: object) -> int:
    """How deeply the AST nests (iteratively, so deep queries cannot overflow the stack)."""
    deepest = 0
    todo: list[tuple[object, int]] = [(node, 1)]
    while todo:
        n, d = todo.pop()
        deepest = max(deepest, d)
        if dataclasses.is_dataclass(n):
            for f in dataclasses.fields(n):
                v = getattr(n, f.name)
                if dataclasses.is_dataclass(v):
                    todo.append((v, d + 1))
                elif isinstance(v, tuple):
                    todo += [(x, d + 1) for x in v if dataclasses.is_dataclass(x)]
    return deepest


@contextlib.contextmanager
def _deep(depth: int) -> Iterator[None]:
    """Let the compiler's recursive passes handle a query ``depth`` levels deep."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 4 * depth + 1000))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _restore(text: str, schema: tuple[tuple[str, str], ...] | None, max_states: int) -> Query:
    return compile(text, schema=dict(schema) if schema is not None else None,
                   max_states=max_states)


@functools.lru_cache(maxsize=256)
def _compile_cached(text: str, schema: tuple[tuple[str, str], ...] | None,
                    max_states: int) -> Query:
    sch = dict(schema) if schema is not None else None
    ast = parse(text)
    depth = _depth(ast)
    if depth > MAX_DEPTH:
        raise CeqlValidationError(
            f"The query nests {depth} levels deep; ceql compiles at most {MAX_DEPTH}. Shorten "
            "the longest sequence or nesting (e.g. use A+ for a run of A events).")
    with _deep(depth):
        ast = validate(ast, text, sch)
        q = Query(text, ast, sch, max_states)
        q._automaton_parts("type", "stream")  # compile now: errors surface at compile time
    return q


def compile(text: str, *, schema: Any = None, max_states: int = DEFAULT_MAX_STATES) -> Query:
    """Parse, validate and compile a CEQL query (cached by text, schema and max_states).

    ``schema`` (optional) maps attribute names to types (``"number"``, ``"string"``,
    ``"bool"``, ``"timestamp"``, Python types or a ``pyarrow.Schema``) and enables
    compile-time checks of attribute names and types.
    """
    if not isinstance(text, str):
        from .errors import CeqlError

        raise CeqlError(f"A CEQL query must be a string, not {type(text).__name__}.")
    sch = normalize_schema(schema) if schema is not None else None
    key = tuple(sorted(sch.items())) if sch is not None else None
    return _compile_cached(text, key, int(max_states))
