"""Basic graph patterns evaluated in Python, without a store: SPAseq's usual GPM on a batch.

A GPM that is a basic graph pattern with FILTERs (:mod:`ceql.rdf.bgp` says which qualify) is
matched here on a whole batch of events, their triples held as the N-Triples texts of their
terms (read by :class:`ceql.rdf.triples.TripleReader`): :func:`match_batch` matches a pattern
on the batch column by column, one hash join per triple pattern keyed by the event.
:class:`ceql.rdf.GpmEvaluator` takes this path when every GPM of the evaluator qualifies (its
FILTERs it decides with the store's evaluator: see there), and its store otherwise (the tests
compare both on random graphs, patterns, FILTERs and literals).

What keeps the answers those of the store, besides the terms read exactly
(:mod:`ceql.rdf.triples`) and the constants resolved by the store's query parser
(:mod:`ceql.rdf.bgp`):

* **graphs are sets.** When a GPM has no ``DISTINCT``, an event's triples are made distinct
  before matching (:func:`distinct_triples`), and a BGP's solutions are then distinct over
  its variables; with ``DISTINCT``, a duplicate triple would only repeat solutions, which it
  removes (as it does duplicates of the projection).
"""

from __future__ import annotations

import operator
from collections.abc import Hashable, Iterable, Mapping, Sequence
from itertools import compress, repeat
from typing import Any

from ceql.rdf.bgp import Bgp
from ceql.rdf.triples import TripleColumns

__all__ = ["Row", "distinct_triples", "group_by_predicate", "match_batch"]

Row = tuple[Any, ...]
"""A solution of a batch: the event's index, then the variables' term texts."""


def distinct_triples(table: TripleColumns) -> TripleColumns:
    """``table`` without its duplicate triples (a graph is a set), in the same order."""
    unique = dict.fromkeys(zip(*table, strict=True))
    if len(unique) == len(table[0]):
        return table
    if not unique:
        return [], [], [], []
    events, subjects, predicates, objects = zip(*unique, strict=True)
    return list(events), list(subjects), list(predicates), list(objects)


def group_by_predicate(table: TripleColumns) -> dict[str, TripleColumns]:
    """``table``'s triples grouped by predicate, each group in ``table``'s order."""
    predicates = table[2]
    kinds = set(predicates)
    if len(kinds) <= 1:
        return {p: table for p in kinds}
    out: dict[str, TripleColumns] = {}
    for p in kinds:
        mask = list(map(p.__eq__, predicates))
        events = list(compress(table[0], mask))
        out[p] = (events, list(compress(table[1], mask)), [p] * len(events),
                  list(compress(table[3], mask)))
    return out


def _where(table: TripleColumns, mask: Iterable[object]) -> TripleColumns:
    keep = list(mask)
    return (list(compress(table[0], keep)), list(compress(table[1], keep)),
            list(compress(table[2], keep)), list(compress(table[3], keep)))


_NO_TRIPLES: TripleColumns = ((), (), (), ())


def match_batch(bgp: Bgp, by_predicate: Mapping[str, TripleColumns],
                everything: TripleColumns, events: int
                ) -> tuple[list[str], list[Sequence[Any]]]:
    """Every solution of ``bgp`` (constants resolved) on each of a batch's ``events``, whose
    triples are given by predicate and all together, each in event order (for a GPM
    without ``DISTINCT``, without duplicates: duplicates only repeat solutions). Returns the
    variables and the solutions as columns, in event order: the events' indices, then each
    variable's term texts in that order. One hash join per triple pattern, keyed by the
    event and the variables bound before."""
    names: list[str] = []
    solutions: list[Sequence[Any]] | None = None  # None: every event's one empty solution
    for pattern in bgp.patterns:
        ps, pp, po = pattern
        table = everything if pp.var is not None else by_predicate.get(pp.text, _NO_TRIPLES)
        for k, slot in ((1, ps), (3, po)):
            if slot.var is None:
                table = _where(table, map(slot.text.__eq__, table[k]))
        first: dict[str, int] = {}
        for k, slot in enumerate(pattern, start=1):
            if slot.var is None:
                continue
            if slot.var in first:  # the variable twice in this pattern
                table = _where(table, map(operator.eq, table[first[slot.var]], table[k]))
            else:
                first[slot.var] = k
        shared = [(names.index(v) + 1, k) for v, k in first.items() if v in names]
        new: list[Sequence[Any]] = [table[k] for v, k in first.items() if v not in names]
        names += [v for v in first if v not in names]
        if solutions is None:  # the first pattern: its triples are the solutions
            solutions = [table[0], *new]
        else:
            solutions = _join(solutions, table, shared, new)
        if not solutions[0]:
            break
    if solutions is None:
        solutions = [range(events)]
    return names, solutions


def _join(solutions: list[Sequence[Any]], table: TripleColumns,
          shared: list[tuple[int, int]], new: list[Sequence[Any]]) -> list[Sequence[Any]]:
    """The solutions extended by each of ``table``'s triples of their event that agrees on
    the ``shared`` (solution column, triple column) pairs, with that triple's ``new``
    columns."""
    size = len(table[0])
    keys: Sequence[Hashable] = table[0]
    wanted: Iterable[Hashable] = solutions[0]
    if shared:
        keys = list(zip(keys, *(table[k] for _, k in shared), strict=True))
        wanted = zip(wanted, *(solutions[i] for i, _ in shared), strict=True)
    index = dict(zip(keys, range(size), strict=True))
    if len(index) == size:  # one triple a key: a lookup per solution
        found: list[Any] = list(map(index.get, wanted))  # None: no triple
        mask = list(map(operator.is_not, found, repeat(None)))
        if not all(mask):
            solutions = [list(compress(column, mask)) for column in solutions]
            found = list(compress(found, mask))
    else:
        triples: dict[Hashable, list[int]] = {}
        for key, i in zip(keys, range(size), strict=True):
            got = triples.get(key)
            if got is None:
                triples[key] = [i]
            else:
                got.append(i)
        rows: list[int] = []
        found = []
        for row, key in enumerate(wanted):
            for i in triples.get(key, ()):
                rows.append(row)
                found.append(i)
        solutions = [list(map(column.__getitem__, rows)) for column in solutions]
    return solutions + [list(map(column.__getitem__, found)) for column in new]
