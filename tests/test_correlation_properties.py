"""Property tests of conditions between events: the engine against the brute-force reference on
random correlated queries (``Y.attr``, ``PREV``, aggregates, match conditions ``[P]``, ``S>T``
variables) mixed with every other operator and clause.

The same checks as ``tests/test_properties.py`` (whose helpers and conventions they share: outputs
compared as multisets, the LIMIT rule, time windows over positions without a time attribute), on
``correlated_queries()`` from ``tests/strategies.py``: queries are written out with
``format_query`` and compiled from that text; the reference evaluates the AST itself.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import Phase, example, find, given, note, settings
from hypothesis import strategies as st

from ceql.frontends.ceql import format_query, parse
from ceql.ir import nodes as A
from ceql.ir.walks import filter_leaves, formula_nodes
from strategies import (
    PROFILE,
    Case,
    MultiCase,
    cases,
    correlated_queries,
    multi_cases,
    prev_on_one_event,
    written_qualified,
)
from test_properties import (
    check_arrow_feed_equals_reference,
    check_chunked_feed_equals_run,
    check_engine_equals_reference,
    check_max_with_a_select_list_equals_reference,
    check_outputs_come_in_stream_order,
)

# ---------------------------------------------------------------- examples always tried


def _q(where: A.Formula, **kw: Any) -> A.Query:
    return A.Query(kw.pop("strategy", "ALL"), kw.pop("select", None), kw.pop("streams", ("S",)),
                   where, **kw)


def _stream(spec: str, **cols: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, t in enumerate(spec.split()):
        ev: dict[str, Any] = {"type": t, "ts": i}
        ev.update({k: v[i] for k, v in cols.items() if v[i] is not None})
        out.append(ev)
    return out


_X = A.As(A.EventType("A"), "x")
_Y = A.As(A.EventType("B"), "y")
# (A AS x)+ FILTER x[a >= PREV(a)]: non-decreasing runs
_RISING = _q(A.Filter(A.Plus(_X), A.FilterAtom("x", A.Compare(">=", A.Attr("a"),
                                                              A.Prev("a")))))
# ((A AS x ; B AS y) FILTER y[a > x.a])+: the condition holds in each block, not across blocks
_BLOCKS = _q(A.Plus(A.Filter(A.Seq(_X, _Y), A.FilterAtom("y", A.Compare(
    ">", A.Attr("a"), A.Attr("a", var="x"))))))
# (A AS x)+ ; B AS y FILTER [COUNT(x) >= 2 AND SUM(x.a) <= y.a]
_TOTAL = _q(A.Filter(A.Seq(A.Plus(_X), _Y), A.FilterMatch(A.PAnd(
    A.Compare(">=", A.Agg("COUNT", "x"), A.Literal(2)),
    A.Compare("<=", A.Agg("SUM", "x", "a"), A.Attr("a", var="y"))))))
# SELECT S>A FROM S, T WHERE S>A ; B AS y FILTER S>A[a < y.a]
_QUALIFIED = _q(A.Filter(A.Seq(A.EventType("A", "S"), _Y), A.FilterAtom(
    "S>A", A.Compare("<", A.Attr("a"), A.Attr("a", var="y")))), streams=("S", "T"),
    select=("S>A",))
# A AS x ; A AS y FILTER y[a = x.a]: an equality tying every event (an engine may run it per
# value of a, but without PARTITION BY its outputs have no partition)
_JOINED = _q(A.Filter(A.Seq(_X, A.As(A.EventType("A"), "y")), A.FilterAtom("y", A.Compare(
    "=", A.Attr("a"), A.Attr("a", var="x")))))

# A AS x ; B AS y FILTER y[a > PREV(a) AND a > 100]: y binds one event, exempt from all of it
_LONE_PREV = _q(A.Filter(A.Seq(_X, _Y), A.FilterAtom("y", A.PAnd(
    A.Compare(">", A.Attr("a"), A.Prev("a")), A.Compare(">", A.Attr("a"), A.Literal(100))))))

# SELECT * FROM S, T WHERE A ; A FILTER S>A[a > PREV(a)] AND T>A[a = 1] (CORE's per-stream
# conditions on plain leaves)
_PER_STREAM = _q(A.Filter(A.Seq(A.EventType("A"), A.EventType("A")), A.FilterAnd(
    A.FilterAtom("S>A", A.Compare(">", A.Attr("a"), A.Prev("a"))),
    A.FilterAtom("T>A", A.Compare("=", A.Attr("a"), A.Literal(1))))), streams=("S", "T"))

# SELECT S>A FROM S, T WHERE (S>A ; A)+ FILTER S>A[a >= PREV(a)]: WHERE writes S>A, so S>A is
# the first leaf's events only, never the plain A's (from S or not)
_WRITTEN = _q(A.Filter(A.Plus(A.Seq(A.EventType("A", "S"), A.EventType("A"))), A.FilterAtom(
    "S>A", A.Compare(">=", A.Attr("a"), A.Prev("a")))), streams=("S", "T"), select=("S>A",))

# (A AS x)+ FILTER [COUNT(DISTINCT x.a) >= 2] AND x[b <= SUM(DISTINCT x.a)]
_DISTINCT = _q(A.Filter(A.Plus(_X), A.FilterAnd(
    A.FilterMatch(A.Compare(">=", A.Agg("COUNT", "x", "a", distinct=True), A.Literal(2))),
    A.FilterAtom("x", A.Compare("<=", A.Attr("b"), A.Agg("SUM", "x", "a", distinct=True))))),
    within=A.Within("events", Fraction(4)))

_RUN = _stream("A A B A A A B", a=[1, 2, 3, 0, 2, None, 5])
# S>A is 0 and 2 (2 has no stream: it belongs to both); 1 is T's
_MIXED = [{**e, "stream": s} if s else e for e, s in zip(
    _stream("A A A B B", a=[0, 1, 2, 1, 3]), ["S", "T", None, "S", "T"], strict=True)]


@PROFILE
@given(st.lists(multi_cases(correlated=True), min_size=1, max_size=3))
@example([(_RISING, [_RUN], None), (replace(_RISING, strategy="NEXT"), [_RUN], None),
          (replace(_RISING, strategy="MAX", limit=1), [_RUN], "ts")])
@example([(_BLOCKS, [_stream("A B A B", a=[5, 6, 0, 1])], None),
          (_TOTAL, [_RUN, _stream("A A B", a=[1, None, 1])], None),
          (_QUALIFIED, [_MIXED], None), (_PER_STREAM, [_MIXED], None),
          (_WRITTEN, [_MIXED, [{**e, "stream": "S"} for e in _RUN]], None)])
@example([(_LONE_PREV, [_RUN], None), (replace(_LONE_PREV, strategy="NEXT"), [_RUN], "ts"),
          (_DISTINCT, [_stream("A A A A A", a=[1, 1, None, 2, 1], b=[0, 2, 1, 3, 1])], None)])
@example([(_JOINED, [_stream("A A B A", a=[0, 0, 1, 1])], None),
          (replace(_JOINED, strategy="MAX", select=("x",)), [_RUN], "ts")])
def test_correlated_engine_equals_reference(batch: list[MultiCase]) -> None:
    """Each query (and two variants of it: its bare WHERE; without CONSUME BY and LIMIT) on up
    to three streams."""
    check_engine_equals_reference(batch)


def test_the_generator_draws_prev_on_a_variable_with_one_event() -> None:
    """``PREV`` where its variable binds at most one event (valid, vacuous) is drawn."""
    assert prev_on_one_event(find(correlated_queries(), prev_on_one_event))


def _plain_leaf_named_by_stream(q: A.Query, written: bool) -> bool:
    """A FILTER head ``S>T`` over a formula with a plain (unqualified) ``T`` leaf, where WHERE
    writes a leaf ``S>T`` (``written``: ``S>T`` names that leaf's events, not the plain
    leaf's) or none (``S>T`` names the plain leaf's events from ``S``)."""
    for f in formula_nodes(q.where):
        if isinstance(f, A.Filter):
            negated = {id(g) for n in formula_nodes(f.formula) if isinstance(n, A.Not)
                       for g in formula_nodes(n)}
            plain = {g.name for g in formula_nodes(f.formula)
                     if isinstance(g, A.EventType) and g.stream is None
                     and id(g) not in negated}
            for c in filter_leaves(f.cond):
                if (isinstance(c, A.FilterAtom) and c.var.partition(">")[2] in plain
                        and (c.var in written_qualified(q.where)) == written):
                    return True
    return False


def _distinct_aggregate(q: A.Query) -> bool:
    return "(DISTINCT " in format_query(q)


def test_the_generator_draws_distinct_aggregates() -> None:
    """``COUNT|SUM|AVG(DISTINCT y.attr)`` are drawn."""
    assert _distinct_aggregate(find(correlated_queries(), _distinct_aggregate))


@pytest.mark.parametrize("written", [False, True])
def test_the_generator_draws_stream_qualified_names_of_plain_leaves(written: bool) -> None:
    """``S>T[…]`` over plain ``T`` leaves: where WHERE writes no ``S>T`` (CORE's meaning:
    their events from ``S``) and where it writes one (``S>T`` names that leaf's events)."""
    def drawn(q: A.Query) -> bool:
        return _plain_leaf_named_by_stream(q, written)
    # found within a few hundred draws; shrinking it would cost minutes
    assert drawn(find(correlated_queries(), drawn,
                      settings=settings(phases=[Phase.generate], database=None,
                                        max_examples=3000, derandomize=True)))


@PROFILE
@given(cases(correlated=True), st.data())
def test_correlated_max_with_a_select_list_equals_reference(case: Case,
                                                            data: st.DataObject) -> None:
    """MAX with a SELECT list of some of the variables (``S>T`` ones included)."""
    check_max_with_a_select_list_equals_reference(case, data)


@PROFILE
@given(cases(correlated=True))
def test_correlated_outputs_come_in_stream_order(case: Case) -> None:
    check_outputs_come_in_stream_order(case)


@PROFILE
@given(cases(correlated=True), st.data())
def test_correlated_chunked_feed_equals_run(case: Case, data: st.DataObject) -> None:
    check_chunked_feed_equals_run(case, data)


@PROFILE
@given(cases(mixed=False, correlated=True), st.data())
def test_correlated_arrow_feed_equals_reference(case: Case, data: st.DataObject) -> None:
    check_arrow_feed_equals_reference(case, data)


@PROFILE
@given(correlated_queries())
def test_correlated_format_roundtrip(q: A.Query) -> None:
    text = format_query(q)
    note(text)
    assert parse(text) == q
    assert format_query(parse(text)) == text


@st.composite
def _iterated_join_cases(draw: st.DrawFn) -> Case:
    """``(A AS x)+`` and ``B AS y`` in sequence (either first) or AND, a condition of either
    variable reading the other (one or two comparisons of any operator, arithmetic on one
    side sometimes), under every strategy, on dense streams of A and B: the records of an
    iterated variable another reads, which the engine summarizes (and MAX's maximal chains
    of one run)."""
    x = A.Plus(A.As(A.EventType("A"), "x"), draw(st.integers(0, 3)) == 0)
    y = A.As(A.EventType(draw(st.sampled_from(["B", "A"]))), "y")
    shape = draw(st.sampled_from(["seq", "rseq", "and"]))
    both = A.Seq(x, y) if shape == "seq" else A.Seq(y, x) if shape == "rseq" else A.And(x, y)
    head, read = draw(st.sampled_from([("x", "y"), ("y", "x")]))
    cmps: list[A.Pred] = []
    for attr in draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=2)):
        own: A.Expr = A.Attr(attr)
        if draw(st.integers(0, 3)) == 0:
            own = A.Arith("+", own, A.Literal(1))
        cmps.append(A.Compare(draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">=", "<", ">"])),
                              own,
                              A.Attr(attr, var=read)))
    pred = cmps[0] if len(cmps) == 1 else A.PAnd(cmps[0], cmps[1])
    strategy = draw(st.sampled_from(["ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT"]))
    within = draw(st.sampled_from([None, None, A.Within("events", Fraction(4)),
                                       A.Within("events", Fraction(7))]))
    q = _q(A.Filter(both, A.FilterAtom(head, pred)), strategy=strategy, within=within)
    value = st.one_of(*[st.integers(0, 5)] * 7, st.none())
    events: list[dict[str, Any]] = []
    ts = 0
    for _ in range(draw(st.integers(2, 10))):
        ts += draw(st.sampled_from([0, 1, 1]))
        events.append({"type": draw(st.sampled_from("AAB")), "ts": ts,
                       **{k: draw(value) for k in ("a", "b", "c")}})
    return q, events, draw(st.sampled_from([None, "ts"]))


@PROFILE
@given(st.lists(_iterated_join_cases(), min_size=1, max_size=3))
@example([(_q(A.Filter(A.And(A.Plus(A.As(A.EventType("A"), "x")), A.Seq(
    A.As(A.EventType("B"), "l"), A.As(A.EventType("C"), "p"))), A.FilterAtom(
    "x", A.Compare(">", A.Attr("ts"), A.Attr("ts", var="l")))), strategy=s),
    _stream("A B A A C A"), "ts") for s in ("LAST", "MAX", "ALL")])
@example([(_q(A.Filter(A.Seq(A.Plus(_X), _Y), A.FilterAtom(h, A.Compare(op, A.Attr("a"), A.Attr(
    "a", var=r)))), strategy=s), _stream("A A A B A B", a=[1, 3, 1, 2, 0, 3]), None)
    for s in ("ALL", "NEXT", "LAST", "MAX") for h, r in (("x", "y"), ("y", "x"))
    for op in (">", "<=", "=")])
def test_iterated_variable_read_by_another_equals_reference(batch: list[Case]) -> None:
    """The clicks shape of issue 27 and its relatives."""
    check_engine_equals_reference([(q, [events], time) for q, events, time in batch])
