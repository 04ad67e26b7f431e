"""Evaluating a query's graph patterns (GPMs) on event graphs.

Each GPM is a SPARQL 1.1 SELECT query over one event graph (SPAseq's ``DEFINE GPM``), run by
pyoxigraph: the event's graph is the query's default graph, the :class:`StaticDataset`'s graphs
its named graphs (see :mod:`ceql.rdf.dataset`). Its answer on an event is a list of
*mappings*, one per solution: a ``dict`` from variable name (without ``?``) to the plain value
of :func:`ceql.rdf.terms.to_value` (or, with ``terms=True``, to the term's N-Triples text,
:func:`ceql.rdf.terms.term_text`: equal texts are equal terms, kept exactly as written —
``"05"^^xsd:int`` is not ``"5"^^xsd:integer`` — on every path: :mod:`ceql.rdf.exact`); a
variable a solution leaves unbound (``OPTIONAL``, ``UNION``) is absent from its dict. The
mappings of one event are sorted (by the projected variables in order: absent first, then
numbers, strings, … — an order of no meaning but independent of the store's internals and of
the path taken), except when the GPM has its own ``ORDER BY``. Duplicate solutions are kept,
as SPARQL does without ``DISTINCT`` (SPAseq's GPMs are ``SELECT DISTINCT``:
``docs/SPASEQ.md``).

Three paths give the same answers (the tests check it on random graphs):

* **without a store** (:mod:`ceql.rdf.fast`), when every GPM is a basic graph pattern with
  FILTERs (SPAseq's usual GPM, :attr:`GpmEvaluator.storeless`): the batch's events are read
  once into the store's term texts, keeping only the triples whose predicates the GPMs use
  (the others are checked all the same), each GPM is matched on the whole batch by hash joins,
  and each FILTER constraint is decided by the store's expression evaluator once per distinct
  value; a batch this path does not take as it is (JSON-LD, RDF-star, blank nodes in FILTER
  values, text the library must judge) goes to the store as below. Measured on the stock use
  case (``bench/rdf_gpm.py``, ``bench/spaseq.py --gpm-store``): 2.5–4× the store's batch path;
* :meth:`GpmEvaluator.evaluate` — one event: its triples go into a graph of the store, each
  GPM runs with that graph as its default graph, the graph is removed;
* :meth:`GpmEvaluator.evaluate_many` — a batch: every event becomes a graph of the store
  (named by a blank node) and each GPM runs **once** for the whole batch, rewritten by
  :mod:`ceql.rdf.sparql` to ``GRAPH ?__ceql_event { … }``; a GPM the rewrite cannot keep exact
  (:meth:`GpmEvaluator.batch_plan` says why) runs per event on the same store.

An evaluator holds one store: it is not thread-safe (give each thread or task its own). Each
event gets a graph name of its own (pyoxigraph's in-memory store slows down when a graph name
is reused, by ~0.25 ms an event per thousand events before), and since the store never frees
what was removed (~2 KB an event of the stock use case), it is rebuilt, with the dataset,
every ``renew_every`` events: by default :data:`RENEW_EVENTS`, or a quarter of the dataset's
triples when that is more (rebuilding takes ~3-4 µs a triple, so at most ~16 µs an event,
and what is not freed stays within about twice the dataset's own memory).
"""

from __future__ import annotations

import datetime as dt
import math
import operator
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, compress, repeat
from typing import Any

import pyoxigraph as ox

from ceql.errors import CeqlTypeError, caret_snippet
from ceql.rdf.bgp import Bgp, parse_bgp
from ceql.rdf.dataset import StaticDataset
from ceql.rdf.errors import GpmError, RdfInputError
from ceql.rdf.exact import (
    ORIGINAL_FN,
    ExactTerms,
    constants_as_stand_ins,
    filters_on_originals,
)
from ceql.rdf.fast import Row, distinct_triples, group_by_predicate, match_batch
from ceql.rdf.reader import (
    EventSource,
    as_python,
    ntriples_text,
    parse_error,
    rdf_format,
    read_event,
    sniff_format,
)
from ceql.rdf.sparql import EVENT_VAR, BatchPlan, plan_batch
from ceql.rdf.terms import Term, Value, literal_value, term_text, term_value, to_value
from ceql.rdf.triples import TripleColumns, TripleReader

__all__ = ["RENEW_EVENTS", "GpmEvaluator", "GpmResults", "Solution"]

Solution = dict[str, Value]
GpmResults = dict[str, list[Solution]]

_EVENT_LABEL = "ceqlev"
_EVENT = operator.itemgetter(0)
_NO_TRIPLES: TripleColumns = ((), (), (), ())
_ROW_VAR = "__ceql_row"
_DECIDED_LIMIT = 100_000  # FILTER outcomes remembered per constraint
_VALUES_LIMIT = 100_000  # term texts → values remembered


def _text_value(text: str) -> Value:
    """:func:`~ceql.rdf.terms.term_value` of a term text as the store writes it, without
    parsing it again when it has no escape."""
    if text.startswith('"'):
        end = text.rfind('"')
        lexical = text[1:end]
        if "\\" in lexical:
            return term_value(text)
        tail = text[end + 1:]
        return literal_value(lexical, tail[3:-1]) if tail.startswith("^^<") else lexical
    if text.startswith("<"):
        return text[1:-1]
    return text if text.startswith("_:") else term_value(text)


def _mapping(names: Sequence[str]) -> Callable[[Row], Solution]:
    """A row's mapping (the row: the event's index, then the values of ``names``); a dict
    display for up to four variables, which is much cheaper than ``dict(zip(…))``."""
    if len(names) == 0:
        return lambda _: {}
    if len(names) == 1:
        (a,) = names
        return lambda r: {a: r[1]}
    if len(names) == 2:
        a, b = names
        return lambda r: {a: r[1], b: r[2]}
    if len(names) == 3:
        a, b, c = names
        return lambda r: {a: r[1], b: r[2], c: r[3]}
    if len(names) == 4:
        a, b, c, d = names
        return lambda r: {a: r[1], b: r[2], c: r[3], d: r[4]}
    return lambda r: dict(zip(names, r[1:], strict=True))


RENEW_EVENTS = 10_000
_ERROR_AT = re.compile(r"error at (\d+):(\d+): ")
_ORDER_BY = re.compile(r"\bORDER\s+BY\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class _Gpm:
    name: str
    text: str
    variables: tuple[str, ...]
    plan: BatchPlan
    ordered: bool
    bgp: Bgp | None  # its basic graph pattern, constants resolved, when it is only that
    exact_text: str  # text, its FILTERs reading the originals of stand-ins (ceql.rdf.exact)
    exact_plan: BatchPlan


def _rank(v: Value) -> tuple[int, object, str]:
    kind = type(v).__name__  # 2 before 2.0: equal values of two types sort one way
    if isinstance(v, bool):
        return (1, v, kind)
    if isinstance(v, (int, float)):
        return (2, v, kind) if not (isinstance(v, float) and math.isnan(v)) else (3, 0, kind)
    if isinstance(v, str):
        return (4, v, kind)
    if isinstance(v, dt.datetime):
        return (5, v, kind) if v.utcoffset() is not None else (6, v, kind)
    if isinstance(v, dt.date):
        return (7, v, kind)
    if isinstance(v, dt.timedelta):
        return (9, v, kind)
    return (8, str(v), kind)


def _sort_key(variables: tuple[str, ...]) -> Callable[[Solution], tuple[object, ...]]:
    def key(m: Solution) -> tuple[object, ...]:
        return tuple((1, *_rank(m[v])) if v in m else (0, 0, 0, "") for v in variables)
    return key


class GpmEvaluator:
    """All the GPMs of a query, ready to run on event graphs.

    ``queries``: GPM name → SPARQL SELECT text. ``dataset``: the static graphs ``GRAPH <iri>``
    reads. ``prefixes``: prefix → IRI declared for every GPM (as SPARQL ``PREFIX`` lines
    would). ``base_iri``: resolves relative IRIs, in the GPMs and in events' text. ``terms``:
    mappings hold N-Triples texts of terms instead of plain values. ``renew_every``: events a
    store serves before it is rebuilt (see the module's docstring). ``fast``: match basic
    graph patterns without the store when every GPM is one (:mod:`ceql.rdf.fast`); ``False``
    keeps every batch on the store (the reference the tests and benchmarks compare with).
    ``patterns``: GPM name → its basic graph pattern (:class:`ceql.rdf.bgp.Bgp`, constants as
    written) or ``None`` when it is more, for a caller that has the GPM as a structure (SPAseq
    builds it from its syntax tree): used instead of finding the pattern in the text
    (:func:`ceql.rdf.bgp.parse_bgp`), the text then serving the store path only.

    >>> gpms = GpmEvaluator({"A": "SELECT ?v WHERE { ?s <http://ex/p> ?v FILTER(?v > 3) }"})
    >>> gpms.evaluate('<http://ex/s> <http://ex/p> 5 .')
    {'A': [{'v': 5}]}
    """

    def __init__(self, queries: Mapping[str, str], dataset: StaticDataset | None = None, *,
                 prefixes: Mapping[str, str] | None = None, base_iri: str | None = None,
                 terms: bool = False, renew_every: int | None = None,
                 fast: bool = True, patterns: Mapping[str, Bgp | None] | None = None) -> None:
        if not isinstance(queries, Mapping):
            raise CeqlTypeError("queries must map GPM names to SPARQL text, not "
                                f"{type(queries).__name__}")
        if dataset is not None and not isinstance(dataset, StaticDataset):
            raise CeqlTypeError(f"dataset must be a StaticDataset, not {type(dataset).__name__}")
        self._prefixes = dict(prefixes) if prefixes else None
        self._base_iri = base_iri
        self._convert: Callable[[Term], Value] = term_text if terms else to_value
        self._exact = ExactTerms()
        # the dataset as the store holds it: exact terms (ceql.rdf.exact)
        self._dataset, self._dataset_stand_ins = self._exact.quads(
            dataset.quads if dataset is not None else ())
        self._named = list(dataset.graph_nodes) if dataset is not None else []
        self.renew_every = (max(RENEW_EVENTS, len(self._dataset) // 4)
                            if renew_every is None else renew_every)
        self._events = 0  # events loaded, whose numbers name their graphs
        self._since = 0  # events loaded into this store
        self._store = self._new_store()
        given = patterns if patterns is not None else {}
        self._gpms = tuple(self._compile(name, text, given) for name, text in queries.items())
        self._reader = TripleReader(base_iri)
        # (GPM, FILTER constraint) → values of its variables → whether they pass
        self._decided: dict[tuple[str, int], dict[Row, bool]] = {}
        self._values: dict[str, Value] = {}  # term text → value (terms=False)
        # without a store when every GPM is a basic graph pattern (ceql.rdf.fast)
        self._fast = fast and all(g.bgp is not None for g in self._gpms)
        needed: set[str] = set()
        for g in self._gpms:
            wanted = g.bgp.predicates if g.bgp is not None else None
            if wanted is None:
                self._needed: frozenset[str] | None = None
                break
            needed |= wanted
        else:
            self._needed = frozenset(needed)
        # without DISTINCT, a duplicate triple would repeat solutions
        self._duplicates_matter = any(g.bgp is not None and not g.bgp.distinct
                                      for g in self._gpms)

    def _new_store(self) -> ox.Store:
        store = ox.Store()
        store.extend(self._dataset)
        for node in self._named:
            store.add_graph(node)
        self._since = 0
        return store

    def _done(self) -> None:
        if self._since >= self.renew_every:
            self._store = self._new_store()

    def _node(self) -> ox.BlankNode:
        self._events += 1
        self._since += 1
        return ox.BlankNode(f"{_EVENT_LABEL}{self._events}")

    def _query(self, text: str, default_graph: ox.BlankNode | None = None,
               named_graphs: list[ox.NamedNode | ox.BlankNode] | None = None,
               ) -> ox.QuerySolutions | ox.QueryBoolean | ox.QueryTriples:
        # custom functions only for a text that calls them (ceql.rdf.exact)
        functions = self._exact.functions if ORIGINAL_FN in text else None
        return self._store.query(text, prefixes=self._prefixes, base_iri=self._base_iri,
                                 default_graph=default_graph, named_graphs=named_graphs,
                                 custom_functions=functions)

    def _select(self, text: str, default_graph: ox.BlankNode | None = None,
                named_graphs: list[ox.NamedNode | ox.BlankNode] | None = None,
                ) -> ox.QuerySolutions:
        result = self._query(text, default_graph, named_graphs)
        assert isinstance(result, ox.QuerySolutions)  # checked by _compile
        return result

    def _compile(self, name: str, text: str, patterns: Mapping[str, Bgp | None]) -> _Gpm:
        if not isinstance(name, str) or not isinstance(text, str):
            raise CeqlTypeError(f"GPM {name!r}: names and queries are str, not "
                                f"{type(name).__name__} → {type(text).__name__}")
        try:
            result = self._query(text)
        except SyntaxError as e:
            msg = str(e.msg or e)
            m = _ERROR_AT.match(msg)
            if m is None:
                raise GpmError(f"GPM {name!r} is not valid SPARQL: {msg}") from None
            line, column = int(m.group(1)), int(m.group(2))
            detail = msg[m.end():].splitlines()[0]
            if "Prefix not found" in detail:
                detail = "a prefix is not declared (add a PREFIX line, or pass prefixes=)"
            raise GpmError(f"GPM {name!r} is not valid SPARQL: {detail}", line=line,
                           column=column, snippet=caret_snippet(text, line, column)) from None
        if not isinstance(result, ox.QuerySolutions):
            kind = "an ASK" if isinstance(result, ox.QueryBoolean) else "a CONSTRUCT/DESCRIBE"
            raise GpmError(f"GPM {name!r} is {kind} query: a GPM is a SELECT query, whose "
                           "solutions are the mappings events compare")
        variables = tuple(v.value for v in result.variables)
        # a pattern's literal constant matches exactly that term (ceql.rdf.exact)
        text = constants_as_stand_ins(text, self._exact, self._prefixes, self._base_iri)
        plan = self._plan(text)
        exact_text = filters_on_originals(text)
        exact_plan = plan
        if exact_text != text:
            try:
                self._query(exact_text)
            except SyntaxError as e:  # not expected: the rewrite only wraps variables
                raise GpmError(f"GPM {name!r}: its FILTERs could not be rewritten to read "
                               f"exact terms ({e}); please report it") from None
            exact_plan = self._plan(exact_text)
        bgp = patterns[name] if name in patterns else parse_bgp(text)
        if bgp is not None:
            bgp = self._resolve(bgp)
        return _Gpm(name, text, variables, plan, bool(_ORDER_BY.search(text)), bgp,
                    exact_text, exact_plan)

    def _plan(self, text: str) -> BatchPlan:
        plan = plan_batch(text)
        if not plan.why:
            try:
                self._query(plan.query)
            except SyntaxError:
                plan = BatchPlan("", "the library refused the rewritten query")
        return plan

    def _resolve(self, bgp: Bgp) -> Bgp | None:
        """``bgp`` with its constants as the store's query parser reads them (the GPM's
        prologue, the evaluator's prefixes and base IRI), or ``None`` if one is not an IRI."""
        texts: dict[str, str] = {}
        for pattern in bgp.patterns:
            for slot in pattern:
                if slot.var is None and slot.text not in texts:
                    try:
                        _, rows = self._rows(f"{bgp.prologue}SELECT ?x WHERE "
                                             f"{{ BIND({slot.text} AS ?x) }}")
                    except SyntaxError:
                        return None
                    term = rows[0][0] if len(rows) == 1 and len(rows[0]) == 1 else None
                    if not isinstance(term, ox.NamedNode):
                        return None
                    texts[slot.text] = str(term)
        return bgp.resolved(texts.__getitem__)

    @property
    def names(self) -> tuple[str, ...]:
        """The GPM names, in the order given."""
        return tuple(g.name for g in self._gpms)

    def variables(self, name: str) -> tuple[str, ...]:
        """The variables GPM ``name`` projects (the keys its mappings can have)."""
        return self._gpm(name).variables

    def batch_plan(self, name: str) -> str:
        """How :meth:`evaluate_many` runs GPM ``name`` on the store: ``"one query per
        batch"``, or ``"per event: <why>"`` (see :attr:`storeless` for batches that need no
        store)."""
        why = self._gpm(name).plan.why
        return f"per event: {why}" if why else "one query per batch"

    @property
    def storeless(self) -> bool:
        """Whether batches are matched without the store (:mod:`ceql.rdf.fast`): every GPM is
        a basic graph pattern, and ``fast=True``. A batch whose events the fast reader does
        not take still goes to the store."""
        return self._fast

    def _gpm(self, name: str) -> _Gpm:
        for g in self._gpms:
            if g.name == name:
                return g
        raise KeyError(f"no GPM {name!r}: the GPMs are {list(self.names)}")

    def _rows(self, text: str, default_graph: ox.BlankNode | None = None,
              named_graphs: list[ox.NamedNode | ox.BlankNode] | None = None,
              ) -> tuple[list[str], list[tuple[Term | None, ...]]]:
        """A query's variables and solutions, read to the end. A live solutions iterator holds
        the store (removing a graph then waits for ever), so none may outlive this call, not
        even in a traceback's frame."""
        solutions = self._select(text, default_graph, named_graphs)
        try:
            return [v.value for v in solutions.variables], [tuple(s) for s in solutions]
        finally:
            del solutions

    def _memo(self, exact: bool) -> Callable[[Term], Value]:
        """The term → value conversion, remembering within one call (the GPMs of a query
        mostly bind the same terms of an event); ``exact``: the store holds stand-ins, whose
        originals are converted."""
        memo: dict[Term, Value] = {}
        plain = self._convert
        if exact:
            original = self._exact.original
            plain = lambda term: self._convert(original(term))  # noqa: E731

        def convert(term: Term) -> Value:
            v = memo.get(term)
            if v is None:
                v = memo[term] = plain(term)
            return v

        return convert

    def _mappings(self, gpm: _Gpm, node: ox.BlankNode, convert: Callable[[Term], Value],
                  exact: bool) -> list[Solution]:
        names, rows = self._rows(gpm.exact_text if exact else gpm.text, node, self._named)
        return [{v: convert(t) for v, t in zip(names, row, strict=True) if t is not None}
                for row in rows]

    @staticmethod
    def _sort(results: GpmResults, gpms: Sequence[_Gpm]) -> GpmResults:
        for g in gpms:
            found = results[g.name]
            if len(found) > 1 and not g.ordered:
                found.sort(key=_sort_key(g.variables))
        return results

    def _load(self, event: EventSource, node: ox.BlankNode, format: str | None,
              name: str) -> bool:
        """Put one event's triples into the store's graph ``node``, with stand-ins for the
        literals the store would change (:mod:`ceql.rdf.exact`); whether it needed any. Text
        is parsed to check its literals; when none needs a stand-in, the store loads the text
        itself (giving blank nodes fresh ids, as :func:`read_event` does)."""
        store = self._store
        event = as_python(event)  # type: ignore[assignment]
        text: str | bytes | None = None
        fmt = ox.RdfFormat.N_TRIPLES
        quads: Sequence[ox.Quad] | None = None
        if format is None:
            text = ntriples_text(event)
            if text is not None:
                try:
                    if self._exact.keeps_text(text):  # no literal to check: load it
                        store.load(text, fmt, to_graph=node)
                        store.add_graph(node)
                        return False
                    quads = list(ox.parse(text, fmt, rename_blank_nodes=True))
                except SyntaxError:
                    text = None  # read_event below names the bad triple
        if quads is None and isinstance(event, (str, bytes)):
            fmt = sniff_format(event) if format is None else rdf_format(format)
            if fmt is not ox.RdfFormat.JSON_LD:  # JSON-LD could name graphs of its own
                text = event
                try:
                    if self._exact.keeps_text(event):
                        store.load(event, fmt, base_iri=self._base_iri, to_graph=node)
                        store.add_graph(node)
                        return False
                    quads = list(ox.parse(event, fmt, base_iri=self._base_iri,
                                          rename_blank_nodes=True))
                except SyntaxError as e:
                    raise parse_error(e, event, fmt, name) from None
        if quads is None:
            text = None
            quads = read_event(event, format=format, base_iri=self._base_iri,
                               name=name).quads
        changed = self._exact.changes(quads)
        if text is not None and not changed:
            store.load(text, fmt, base_iri=self._base_iri, to_graph=node)
        else:
            store.extend(self._exact.with_stand_ins(quads, node))
        store.add_graph(node)  # an empty event is still a graph
        return changed

    def evaluate(self, event: EventSource, *, format: str | None = None,
                 name: str = "event") -> GpmResults:
        """Every GPM's mappings on one event graph (see :mod:`ceql.rdf.reader` for what
        ``event`` may be; ``name`` is how errors call it)."""
        node = self._node()
        try:
            exact = self._load(event, node, format, name) or self._dataset_stand_ins
            convert = self._memo(exact)
            results = {g.name: self._mappings(g, node, convert, exact) for g in self._gpms}
        finally:
            self._store.remove_graph(node)
            self._done()
        return self._sort(results, self._gpms)

    def evaluate_many(self, events: Iterable[EventSource], *, format: str | None = None,
                      names: Sequence[str] | None = None) -> list[GpmResults]:
        """Every GPM's mappings on each event of a batch, in the batch's order: the same as
        :meth:`evaluate` on each, with one query per GPM for the whole batch.

        ``names``: how errors call the events (default ``"event <i>"``, ``i`` from 0).
        """
        if self._fast:
            events = list(events)
            found = self._evaluate_fast(
                events, format,
                [f"event {i}" for i in range(len(events))] if names is None else names)
            if found is not None:
                return found
        store = self._store
        nodes: list[ox.BlankNode] = []
        exact = self._dataset_stand_ins
        try:
            for i, event in enumerate(events):
                nodes.append(self._node())
                exact |= self._load(event, nodes[-1], format,
                                    f"event {i}" if names is None else str(names[i]))
            results: list[GpmResults] = [{g.name: [] for g in self._gpms} for _ in nodes]
            start, first = len(_EVENT_LABEL), self._events - len(nodes) + 1
            convert = self._memo(exact)
            for g in self._gpms:
                plan = g.exact_plan if exact else g.plan
                if plan.why:
                    for i, node in enumerate(nodes):
                        results[i][g.name] = self._mappings(g, node, convert, exact)
                    continue
                columns, rows = self._rows(plan.query)
                at = columns.index(EVENT_VAR)
                keep = [(columns.index(v), v) for v in g.variables]
                for row in rows:
                    graph = row[at]
                    assert isinstance(graph, ox.BlankNode)  # the rewrite's FILTER
                    results[int(graph.value[start:]) - first][g.name].append(
                        {v: convert(t) for i, v in keep if (t := row[i]) is not None})
        finally:
            for node in nodes:
                store.remove_graph(node)
            self._done()
        return [self._sort(r, self._gpms) for r in results]

    def _evaluate_fast(self, events: Sequence[EventSource], format: str | None,
                       names: Sequence[str]) -> list[GpmResults] | None:
        """:meth:`evaluate_many` without the store (:mod:`ceql.rdf.fast`), or ``None`` when
        the batch needs the store path."""
        try:
            fmt = None if format is None else rdf_format(format)
        except RdfInputError:
            return None
        batch: Sequence[object] = events
        if set(map(type, events)) != {str}:
            batch = [e if type(e) is str else as_python(e) for e in events]
        table = self._reader.read_batch(batch, fmt, names, self._needed)
        if table is None:
            return None
        if self._duplicates_matter:  # a graph is a set
            table = distinct_triples(table)
        lists = group_by_predicate(table)
        everything = table if self._needed is None else _NO_TRIPLES
        values = self._values if self._convert is not term_text else None
        found: list[list[list[Solution]]] = []
        for g in self._gpms:
            assert g.bgp is not None  # self._fast
            variables, solutions = match_batch(g.bgp, lists, everything, len(events))
            at = {v: i for i, v in enumerate(variables, start=1)}
            if g.bgp.filters and solutions[0]:
                passed = self._filter(g, at, solutions)
                if passed is None:
                    return None
                solutions = passed
            bound = [v for v in g.variables if v in at]
            columns = [solutions[0], *(solutions[at[v]] for v in bound)]
            found.append(self._per_event(g, columns, bound, values, len(events)))
        if len(found) == 1:
            name = self._gpms[0].name
            return [{name: mappings} for mappings in found[0]]
        if not found:
            return [{} for _ in events]
        return list(map(dict, map(zip, repeat(self.names), zip(*found, strict=True))))

    @staticmethod
    def _per_event(gpm: _Gpm, columns: list[Sequence[Any]], bound: list[str],
                   values: dict[str, Value] | None, events: int) -> list[list[Solution]]:
        """Each event's mappings from a GPM's solutions, in event order (``columns``: the
        events' indices, then the texts of ``bound``); ``values``: text → value (``None``
        for terms=True)."""
        at = columns[0]
        if not at:
            return [[] for _ in range(events)]
        rows: Iterable[Row] = zip(*columns, strict=True)
        solved = len(set(at))  # events with a solution
        # DISTINCT: solutions of distinct events are distinct already
        if solved < len(at) and gpm.bgp is not None and gpm.bgp.distinct:
            unique = dict.fromkeys(rows)
            if len(unique) < len(at):
                at = list(map(_EVENT, unique))
            rows = unique
        if values is not None:
            if len(values) > _VALUES_LIMIT:
                values.clear()
            rows = list(rows)
            for column in list(zip(*rows, strict=True))[1:]:
                for t in set(column).difference(values):
                    values[t] = _text_value(t)
            value = values.__getitem__
            rows = [(r[0], *map(value, r[1:])) for r in rows]
        mappings = map(_mapping(bound), rows)
        if len(at) == solved == events:
            return [[m] for m in mappings]  # one mapping an event, the usual case
        per: list[list[Solution]] = [[] for _ in range(events)]
        deque(map(list.append, map(per.__getitem__, at), mappings), maxlen=0)
        if solved < len(at) and not gpm.ordered:
            key = _sort_key(gpm.variables)
            for found in per:
                if len(found) > 1:
                    found.sort(key=key)
        return per

    def _filter(self, gpm: _Gpm, at: Mapping[str, int], solutions: list[Sequence[Any]]
                ) -> list[Sequence[Any]] | None:
        """The solutions (columns) that pass the GPM's FILTERs, each constraint decided by
        the store's own expression evaluator on the distinct values of its variables (one
        query over them, ``VALUES``, for those not decided before: the constraints are
        deterministic). An unbound variable is left out of ``VALUES``, so unbound there too.
        ``None`` if a value is a blank node, which ``VALUES`` cannot carry (the batch then
        takes the store path)."""
        assert gpm.bgp is not None
        for k, (text, names) in enumerate(gpm.bgp.filters):
            bound = [v for v in names if v in at]
            keys: list[Row] = (list(zip(*(solutions[at[v]] for v in bound), strict=True))
                               if bound else [()] * len(solutions[0]))
            memo = self._decided.setdefault((gpm.name, k), {})
            if len(memo) > _DECIDED_LIMIT:
                memo.clear()
            new = [t for t in dict.fromkeys(keys) if t not in memo]
            if new:
                if "\n_:" in "\n" + "\n".join(chain.from_iterable(new)):
                    return None
                table = " ".join(f"({n} {' '.join(t)})" for n, t in enumerate(new))
                variables = " ".join(f"?{v}" for v in bound)
                _, passing = self._rows(
                    f"{gpm.bgp.prologue}SELECT ?{_ROW_VAR} WHERE {{ VALUES (?{_ROW_VAR} "
                    f"{variables}) {{ {table} }} FILTER {text} }}")
                for t in new:
                    memo[t] = False
                for row in passing:
                    term = row[0]
                    assert isinstance(term, ox.Literal)
                    memo[new[int(term.value)]] = True
            mask = list(map(memo.__getitem__, keys))
            solutions = [list(compress(column, mask)) for column in solutions]
            if not solutions[0]:
                break
        return solutions
