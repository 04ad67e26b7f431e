"""Property tests of conjunction and negation: the engine against the brute-force reference on
random queries with ``AND`` and ``NOT`` (``conj_neg`` generators of ``tests/strategies.py``)
mixed with every other operator and clause, through the same checks as
``tests/test_properties.py`` (row, chunked and Arrow feeds, stream order).

Every atom on a negated variable of a NOT between two elements is kept (reading variables
bound before or after the NOT, the NOT under ``+`` or in an operand of AND inside the FILTER),
and so are the conditions of a leading or trailing NOT under every strategy (SELECT lists
leaving out what they read too): every query drawn is evaluated, none is taken out.
A trailing NOT makes matches wait for time to pass: for those the checks feed in pieces, then
``close()``, and compare everything in order with ``Query.run`` (which closes at the end) —
where batches are cut must not matter.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from itertools import pairwise
from typing import Any

import pyarrow as pa
from hypothesis import given, note
from hypothesis import strategies as st

import ceql
from ceql.frontends.ceql import format_query
from ceql.ir import condition_refs, is_correlated, top_sequence
from ceql.ir import nodes as A
from ceql.ir.walks import seq_elements
from reference import reference_matches
from strategies import (
    PROFILE,
    Case,
    MultiCase,
    cases,
    events_lists,
    formulas,
    multi_cases,
    withins,
)
from test_properties import (
    Key,
    check_against_reference,
    check_arrow_feed_equals_reference,
    check_chunked_feed_equals_run,
    check_engine_equals_reference,
    check_outputs_come_in_stream_order,
    keys,
)


def _chain(elems: list[tuple[A.Formula, bool]]) -> A.Formula:
    f = elems[0][0]
    for e, contiguous in elems[1:]:
        f = A.Seq(f, e, contiguous)
    return f


def _drop_atoms(c: A.FilterExpr, names: set[str], negated: set[str]) -> A.FilterExpr | None:
    if isinstance(c, A.FilterAtom):
        about = {c.var} | condition_refs(c.var, c.pred)
        drop = bool(about & names) or (bool(about & negated) and is_correlated(c))
        return None if drop else c
    if isinstance(c, A.FilterAnd):
        left = _drop_atoms(c.left, names, negated)
        right = _drop_atoms(c.right, names, negated)
        if left is None or right is None:
            return left or right
        return replace(c, left=left, right=right)
    return c  # atoms about negated variables are plain conjuncts, never under OR


def _negated_names(n: A.Not) -> set[str]:
    f = n.formula
    names: set[str] = set()
    while isinstance(f, A.As):
        names.add(f.var)
        f = f.formula
    return names


def _without_edges(q: A.Query) -> A.Query:
    """``q`` without a leading or trailing NOT (and the atoms about its variable)."""
    return _strip_edges(q, set())


def _strip_edges(q: A.Query, negated: set[str]) -> A.Query:
    """``q`` without a leading or trailing NOT and the atoms about its variable, and without
    atoms reading other events on the ``negated`` variables."""
    names: set[str] = set()

    def strip(f: A.Formula) -> A.Formula:
        if isinstance(f, A.Filter):
            inner = strip(f.formula)
            cond = _drop_atoms(f.cond, names, negated)
            return inner if cond is None else replace(f, formula=inner, cond=cond)
        if isinstance(f, A.As):
            return replace(f, formula=strip(f.formula))
        if isinstance(f, A.Seq):
            elems = list(seq_elements(f))
            for i in (-1, 0):
                if isinstance(elems[i][0], A.Not):
                    names.update(_negated_names(elems[i][0]))  # type: ignore[arg-type]
                    del elems[i]
            if elems and elems[0][1]:
                elems[0] = (elems[0][0], False)
            return _chain(elems)
        return f

    # the edges' names are collected on the way down, then atoms dropped everywhere
    stripped = strip(q.where)
    return replace(q, where=_drop_everywhere(stripped, names, negated))


def _drop_everywhere(f: A.Formula, names: set[str], negated: set[str]) -> A.Formula:
    """``f`` with every FILTER without the atoms :func:`_drop_atoms` drops."""
    if isinstance(f, A.Filter):
        inner = _drop_everywhere(f.formula, names, negated)
        cond = _drop_atoms(f.cond, names, negated)
        return inner if cond is None else replace(f, formula=inner, cond=cond)
    if isinstance(f, A.As | A.Plus | A.Not):
        return replace(f, formula=_drop_everywhere(f.formula, names, negated))
    if isinstance(f, A.Seq | A.Or | A.And):
        return replace(f, left=_drop_everywhere(f.left, names, negated),
                       right=_drop_everywhere(f.right, names, negated))
    return f


def _edges(q: A.Query) -> tuple[bool, bool]:
    """Whether ``q`` has a leading and a trailing NOT."""
    top = top_sequence(q.where)
    if top is None:
        return False, False
    elems = seq_elements(top)
    return isinstance(elems[0][0], A.Not), isinstance(elems[-1][0], A.Not)


def _case(c: Case) -> Case:
    return (_without_edges(c[0]), c[1], c[2])


def _multi(c: MultiCase) -> MultiCase:
    return (_without_edges(c[0]), c[1], c[2])


@PROFILE
@given(st.lists(multi_cases(conj_neg=True).map(_multi), min_size=1, max_size=2))
def test_engine_equals_reference_with_and_and_not(batch: list[MultiCase]) -> None:
    check_engine_equals_reference(batch)


@PROFILE
@given(cases(conj_neg=True).map(_case), st.data())
def test_chunked_feed_equals_run_with_and_and_not(case: Case, data: st.DataObject) -> None:
    check_chunked_feed_equals_run(case, data)


@PROFILE
@given(cases(mixed=False, conj_neg=True).map(_case), st.data())
def test_arrow_feed_equals_reference_with_and_and_not(case: Case,
                                                      data: st.DataObject) -> None:
    check_arrow_feed_equals_reference(case, data)


@PROFILE
@given(cases(conj_neg=True).map(_case))
def test_outputs_come_in_stream_order_with_and_and_not(case: Case) -> None:
    check_outputs_come_in_stream_order(case)


@PROFILE
@given(st.lists(multi_cases(correlated=True, conj_neg=True).map(_multi), min_size=1,
                max_size=2))
def test_engine_equals_reference_with_and_not_and_conditions_between_events(
        batch: list[MultiCase]) -> None:
    check_engine_equals_reference(batch)


@PROFILE
@given(cases(correlated=True, conj_neg=True).map(_case), st.data())
def test_chunked_feed_equals_run_with_and_not_and_conditions_between_events(
        case: Case, data: st.DataObject) -> None:
    check_chunked_feed_equals_run(case, data)


# ---------------------------------------------------------------- leading and trailing NOT


def _pieces(n: int, data: st.DataObject) -> list[tuple[int, int]]:
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=5), label="cuts"))
    bounds = [0, *cuts, n]
    return list(pairwise(bounds))


def _table(events: list[dict[str, Any]]) -> pa.Table:
    names = list(dict.fromkeys(k for e in events for k in e)) or ["type"]
    return pa.table({k: pa.array([e.get(k) for e in events]) for k in names})


@PROFILE
@given(st.lists(multi_cases(conj_neg=True), min_size=1, max_size=2))
def test_engine_equals_reference_with_leading_and_trailing_not(batch: list[MultiCase]) -> None:
    for q, streams, time in batch:
        variants = [q, replace(q, consume="NONE", limit=None, strategy="ALL")]
        for v in dict.fromkeys(variants):
            compiled = ceql.compile(format_query(v))
            for events in streams:
                note(f"query: {format_query(v)}\nevents: {events}\ntime={time!r}")
                ref = reference_matches(v, events, time=time)
                got = keys(compiled.run(events, time=time))
                note(f"reference: {[tuple(m) for m in ref]}\nengine: {got}")
                check_against_reference(got, ref, v.limit)


@PROFILE
@given(cases(mixed=False, conj_neg=True), st.data())
def test_pieces_and_close_equal_run_with_leading_and_trailing_not(
        case: Case, data: st.DataObject) -> None:
    """Rows in pieces, Arrow in pieces, then close(): the same matches in the same order as
    ``Query.run``; a match is never output before its end was fed."""
    _check_pieces(case, data)


@PROFILE
@given(cases(mixed=False, correlated=True, conj_neg=True), st.data())
def test_pieces_and_close_equal_run_with_edges_and_conditions_between_events(
        case: Case, data: st.DataObject) -> None:
    """As above, with conditions of the NOTs that read the match (SELECT lists leaving out
    what they read included), and ``Query.run`` against the reference."""
    q, events, time = case
    note(f"query: {format_query(q)}\nevents: {events}\ntime={time!r}")
    ref = reference_matches(q, events, time=time)
    check_against_reference(keys(ceql.compile(format_query(q)).run(events, time=time)), ref,
                            q.limit)
    _check_pieces(case, data)


def _check_pieces(case: Case, data: st.DataObject) -> None:
    q, events, time = case
    text = format_query(q)
    note(f"query: {text}\nevents: {events}\ntime={time!r}")
    compiled = ceql.compile(text)
    whole = keys(compiled.run(events, time=time))
    pieces = _pieces(len(events), data)
    table = _table(events)
    for arrow in (False, True):
        ev = compiled.evaluator(time=time)
        fed: list[Key] = []
        for a, b in pieces:
            batch: Any = events[a:b]
            if arrow:
                batch = pa.RecordBatch.from_arrays(
                    [col.combine_chunks() for col in table.slice(a, b - a).columns],
                    names=table.column_names)
            out = keys(ev.feed(batch))
            assert all(k[0] < b for k in out), "an output came before its end was fed"
            fed += out
        fed += keys(ev.close())
        assert ev.close() == []
        note(f"arrow={arrow}: {fed}")
        assert fed == whole
    if not _edges(q)[1]:  # nothing waits: outputs come in stream order
        ends = [k[0] for k in whole]
        assert ends == sorted(ends)


@PROFILE
@given(st.lists(multi_cases(correlated=True, conj_neg=True), min_size=1,
                max_size=2))
def test_engine_equals_reference_with_edges_and_conditions_between_events(
        batch: list[MultiCase]) -> None:
    for q, streams, time in batch:
        compiled = ceql.compile(format_query(q))
        for events in streams:
            note(f"query: {format_query(q)}\nevents: {events}\ntime={time!r}")
            ref = reference_matches(q, events, time=time)
            check_against_reference(keys(compiled.run(events, time=time)), ref, q.limit)


@st.composite
def _next_keyed_cases(draw: st.DrawFn) -> Case:
    """SELECT NEXT with a leading NOT whose conditions read the match (no conditions between
    events): ``NOT B AS n ; T AS v ; ψ FILTER n[a op v.a] …`` (``v`` bound once, ``ψ`` any
    formula), the variant ceql keeps runs apart by start and the NOT's reads for."""
    psi: A.Formula = A.EventType(draw(st.sampled_from(("C", "C", "A"))))
    if draw(st.booleans()):
        psi = draw(formulas(("S",), draw(st.sampled_from((1, 2))), conj_neg=False))[0]
    v = A.As(A.EventType(draw(st.sampled_from(("A", "A", "B", "C")))), "v")
    beta = A.As(A.EventType(draw(st.sampled_from(("B", "B", "A", "C")))), "n")
    where: A.Formula = A.Seq(A.Seq(A.Not(beta), v), psi)
    op = draw(st.sampled_from(("=", "=", "!=", "<", ">=")))
    cond: A.FilterExpr = A.FilterAtom("n", A.Compare(op, A.Attr("a"), A.Attr("a", var="v")))
    if draw(st.booleans()):
        cond = A.FilterAnd(cond, A.FilterAtom("n", A.Compare(
            draw(st.sampled_from(("=", "<", ">"))), A.Attr("b"), A.Literal(1))))
    select = draw(st.sampled_from((None, None, ("v",), ())))
    q = A.Query("NEXT", select, ("S",), A.Filter(where, cond),
                partition_by=draw(st.sampled_from(((), (), ("g",)))),
                within=draw(st.one_of(  # mostly wide windows: more complex events compete
                    st.builds(A.Within, st.just("events"), st.sampled_from(
                        (Fraction(4), Fraction(8)))), withins(required=True))),
                consume=draw(st.sampled_from(("NONE", "NONE", "ANY", "PARTITION"))),
                limit=draw(st.sampled_from((None, None, 0, 1))))
    if draw(st.booleans()):  # few values: conditions that hold now and fail then
        rows = draw(st.lists(st.tuples(st.sampled_from("ABC"), st.integers(1, 2),
                                       st.integers(0, 2), st.integers(0, 1)),
                             min_size=3, max_size=9))
        events = [{"type": t, "a": a, "b": b, "g": g, "ts": k}
                  for k, (t, a, b, g) in enumerate(rows)]
    else:
        events = draw(events_lists(mixed=False, types=("A", "B", "C")))
    return q, events, draw(st.sampled_from(("ts",) if q.within.kind == "time"  # type: ignore[union-attr]
                                           else (None, "ts")))


@PROFILE
@given(_next_keyed_cases(), st.data())
def test_next_with_a_leading_not_reading_the_match(case: Case, data: st.DataObject) -> None:
    """SELECT NEXT chooses among the complex events that pass a leading NOT whose conditions
    read the match: against the reference, and in pieces (rows, Arrow) then ``close()``."""
    q, events, time = case
    text = format_query(q)
    assert ceql.compile(text).automaton()[1].edge_next  # the path under test is drawn
    note(f"query: {text}\nevents: {events}\ntime={time!r}")
    ref = reference_matches(q, events, time=time)
    check_against_reference(keys(ceql.compile(text).run(events, time=time)), ref, q.limit)
    _check_pieces(case, data)


@st.composite
def _rank_after_cases(draw: st.DrawFn) -> Case:
    """NEXT, LAST or MAX with a leading or trailing NOT whose fate depends on the match (its
    conditions read a variable, bound once or under ``+``), or LAST with such a NOT and
    conditions between events: the strategy chosen after the check (``edge_rank``)."""
    strategy = draw(st.sampled_from(("NEXT", "LAST", "MAX")))
    v: A.Formula = A.As(A.EventType(draw(st.sampled_from(("A", "A", "B", "C")))), "v")
    if draw(st.booleans()):
        v = A.Plus(v)
    psi: A.Formula = A.As(A.EventType(draw(st.sampled_from(("C", "A", "B")))), "w")
    if draw(st.booleans()):
        psi = A.Seq(psi, draw(formulas(("S",), 1, conj_neg=False))[0])
    beta = A.As(A.EventType(draw(st.sampled_from(("B", "B", "A", "C")))), "n")
    trailing = draw(st.booleans())
    body: A.Formula = A.Seq(v, psi) if draw(st.booleans()) else A.Seq(psi, v)
    where: A.Formula = A.Seq(body, A.Not(beta)) if trailing else A.Seq(A.Not(beta), body)
    conds: list[A.FilterExpr] = []
    reads = draw(st.booleans()) or strategy != "LAST"
    if reads:
        op = draw(st.sampled_from(("=", "!=", "<", ">=")))
        conds.append(A.FilterAtom("n", A.Compare(op, A.Attr("a"), A.Attr("a", var="v"))))
    if draw(st.booleans()) or not reads:  # conditions between events
        op = draw(st.sampled_from(("<", ">=", "=", "!=")))
        conds.append(A.FilterAtom("w", A.Compare(op, A.Attr("b"), A.Attr("b", var="v"))))
    if draw(st.booleans()):
        conds.append(A.FilterAtom("n", A.Compare(
            draw(st.sampled_from(("=", "<", ">"))), A.Attr("b"), A.Literal(1))))
    cond = conds[0]
    for c in conds[1:]:
        cond = A.FilterAnd(cond, c)
    q = A.Query(strategy, draw(st.sampled_from((None, None, ("v",), ("w",), ()))), ("S",),
                A.Filter(where, cond),
                partition_by=draw(st.sampled_from(((), (), ("g",)))),
                within=draw(st.one_of(st.builds(A.Within, st.just("events"), st.sampled_from(
                    (Fraction(3), Fraction(6)))), withins(required=True))),
                consume=draw(st.sampled_from(("NONE", "NONE", "ANY", "PARTITION")))
                if not trailing else "NONE",
                limit=draw(st.sampled_from((None, None, 0, 1))))
    rows = draw(st.lists(st.tuples(st.sampled_from("ABC"), st.integers(1, 3),
                                   st.integers(0, 2), st.integers(0, 1)),
                         min_size=3, max_size=10))
    events = [{"type": t, "a": a, "b": b, "g": g, "ts": k} for k, (t, a, b, g) in enumerate(rows)]
    return q, events, draw(st.sampled_from(("ts",) if q.within.kind == "time"  # type: ignore[union-attr]
                                           else (None, "ts")))


@PROFILE
@given(_rank_after_cases(), st.data())
def test_strategies_choose_among_the_complex_events_that_pass_an_edge_not(
        case: Case, data: st.DataObject) -> None:
    """NEXT, LAST and MAX with a leading or trailing NOT that reads the match (or LAST with
    conditions between events): against the reference, and in pieces (rows, Arrow) then
    ``close()``."""
    q, events, time = case
    text = format_query(q)
    cea = ceql.compile(text).automaton()[1]
    assert cea.edge_rank or cea.edge_next  # the paths under test are drawn (keyed NEXT too)
    note(f"query: {text}\nevents: {events}\ntime={time!r}")
    ref = reference_matches(q, events, time=time)
    compiled = ceql.compile(text)
    whole = keys(compiled.run(events, time=time))
    check_against_reference(whole, ref, q.limit)
    _check_pieces(case, data)
    cut = data.draw(st.integers(0, len(events)), label="snapshot after")
    ev = compiled.evaluator(time=time)
    got = keys(ev.feed(events[:cut]))
    ev = ceql.Evaluator.restore(compiled, ev.snapshot())  # runs and pending choices saved
    assert got + keys(ev.feed(events[cut:])) + keys(ev.close()) == whole
