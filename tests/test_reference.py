"""The brute-force reference on SEMANTICS.md's worked examples and on hand-computed cases.

ASTs are built directly, so these tests need neither the parser nor the engine.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from fractions import Fraction
from typing import Any

import pytest

from ceql.ir import nodes as A
from reference import (
    UNKNOWN,
    RefMatch,
    aggregate_value,
    distinct_value,
    pred_holds,
    reference_matches,
)

# ---------------------------------------------------------------- AST builders


def T(name: str, stream: str | None = None) -> A.EventType:
    return A.EventType(name, stream)


def seq(*parts: A.Formula, contiguous: bool = False) -> A.Formula:
    out = parts[0]
    for p in parts[1:]:
        out = A.Seq(out, p, contiguous)
    return out


def cseq(*parts: A.Formula) -> A.Formula:
    return seq(*parts, contiguous=True)


def plus(f: A.Formula) -> A.Plus:
    return A.Plus(f)


def cplus(f: A.Formula) -> A.Plus:
    return A.Plus(f, contiguous=True)


def as_(f: A.Formula, var: str) -> A.As:
    return A.As(f, var)


def or_(*parts: A.Formula) -> A.Formula:
    out = parts[0]
    for p in parts[1:]:
        out = A.Or(out, p)
    return out


def lit(v: Any) -> A.Literal:
    return A.Literal(v)


def attr(name: str) -> A.Attr:
    return A.Attr(name)


def cmp(var: str, name: str, op: str, value: Any) -> A.FilterAtom:
    return A.FilterAtom(var, A.Compare(op, attr(name), lit(value)))


def fand(*conds: A.FilterExpr) -> A.FilterExpr:
    out = conds[0]
    for c in conds[1:]:
        out = A.FilterAnd(out, c)
    return out


def filt(f: A.Formula, *conds: A.FilterExpr) -> A.Filter:
    return A.Filter(f, fand(*conds))


def query(where: A.Formula, *, strategy: str = "ANY", select: tuple[str, ...] | None = None,
          streams: tuple[str, ...] = ("S",), partition_by: tuple[str, ...] = (),
          within: A.Within | None = None, consume: str = "NONE",
          limit: int | None = None) -> A.Query:
    return A.Query(strategy, select, streams, where, partition_by, within, consume, limit)


def events_w(n: int | Fraction) -> A.Within:
    return A.Within("events", Fraction(n))


def time_w(seconds: int | Fraction) -> A.Within:
    return A.Within("time", Fraction(seconds))


def attr_w(n: int | Fraction, name: str) -> A.Within:
    return A.Within("attr", Fraction(n), name)


def stream(spec: str, **cols: Sequence[Any]) -> list[dict[str, Any]]:
    """``stream("A B C", id=[1, 2, 3])``; a column value ``...`` leaves the attribute out."""
    types = spec.split()
    out: list[dict[str, Any]] = []
    for i, t in enumerate(types):
        ev: dict[str, Any] = {"type": t}
        for k, vals in cols.items():
            if vals[i] is not ...:
                ev[k] = vals[i]
        out.append(ev)
    return out


def sets(matches: list[RefMatch]) -> set[frozenset[int]]:
    return {frozenset(m.positions) for m in matches}


def by_end(matches: list[RefMatch]) -> dict[int, set[tuple[int, ...]]]:
    out: dict[int, set[tuple[int, ...]]] = defaultdict(set)
    for m in matches:
        out[m.end].add(m.positions)
    return dict(out)


def run(q: A.Query, events: Sequence[Mapping[str, Any]], **kw: Any) -> list[RefMatch]:
    out = reference_matches(q, events, **kw)
    # The reference never reports one complex event twice, and groups by end in stream order.
    assert len(out) == len(set(out))
    assert [m.end for m in out] == sorted(m.end for m in out)
    return out


# ---------------------------------------------------------------- worked example 1: stocks

STOCK = [
    {"type": "SELL", "name": "MSFT", "price": 101},
    {"type": "SELL", "name": "MSFT", "price": 102},
    {"type": "SELL", "name": "INTL", "price": 80},
    {"type": "BUY", "name": "INTL", "price": 80},
    {"type": "SELL", "name": "AMZN", "price": 1900},
    {"type": "SELL", "name": "INTL", "price": 81},
    {"type": "SELL", "name": "AMZN", "price": 1920},
]

STOCK_WHERE = filt(
    seq(as_(T("SELL"), "msft"), as_(T("SELL"), "intel"), as_(T("SELL"), "amzn")),
    cmp("msft", "name", "=", "MSFT"), cmp("msft", "price", ">", 100),
    cmp("intel", "name", "=", "INTL"),
    cmp("amzn", "name", "=", "AMZN"), cmp("amzn", "price", "<", 2000),
)


def test_stock_all() -> None:
    out = run(query(STOCK_WHERE, streams=("Stock",)), STOCK)
    assert by_end(out) == {4: {(1, 2, 4), (0, 2, 4)},
                           6: {(1, 2, 6), (0, 2, 6), (1, 5, 6), (0, 5, 6)}}
    assert all(m.start == m.positions[0] and m.end == m.positions[-1] for m in out)
    assert all(m.partition == () for m in out)


@pytest.mark.parametrize(("strategy", "expected"), [
    ("ALL", {4: {(1, 2, 4), (0, 2, 4)}, 6: {(1, 2, 6), (0, 2, 6), (1, 5, 6), (0, 5, 6)}}),
    # NEXT prefers the earliest events: min(DΔD') decides.
    ("NEXT", {4: {(0, 2, 4)}, 6: {(0, 2, 6)}}),
    # LAST prefers the latest events: max(DΔD') decides.
    ("LAST", {4: {(1, 2, 4)}, 6: {(1, 5, 6)}}),
    # all of them have three events: none contains another
    ("MAX", {4: {(1, 2, 4), (0, 2, 4)}, 6: {(1, 2, 6), (0, 2, 6), (1, 5, 6), (0, 5, 6)}}),
    ("STRICT", {}),
])
def test_stock_strategies(strategy: str, expected: dict[int, set[tuple[int, ...]]]) -> None:
    assert by_end(run(query(STOCK_WHERE, strategy=strategy, streams=("Stock",)), STOCK)) == expected


def test_stock_within_5_events() -> None:
    out = run(query(STOCK_WHERE, streams=("Stock",), within=events_w(5)), STOCK)
    assert by_end(out) == {4: {(1, 2, 4), (0, 2, 4)}, 6: {(1, 2, 6), (1, 5, 6)}}


def test_stock_within_5_seconds_without_time_uses_positions() -> None:
    out = run(query(STOCK_WHERE, streams=("Stock",), within=time_w(5)), STOCK)
    assert by_end(out) == {4: {(1, 2, 4), (0, 2, 4)}, 6: {(1, 2, 6), (1, 5, 6)}}


def test_stock_consume_any() -> None:
    out = run(query(STOCK_WHERE, streams=("Stock",), consume="ANY"), STOCK)
    assert by_end(out) == {4: {(1, 2, 4), (0, 2, 4)}}


def test_stock_consume_partition_without_partition_by_is_any() -> None:
    out = run(query(STOCK_WHERE, streams=("Stock",), consume="PARTITION"), STOCK)
    assert by_end(out) == {4: {(1, 2, 4), (0, 2, 4)}}


# ---------------------------------------------------------------- worked example 2: T / H

TH = stream("T T H H T T T H H",
            id=[2, 0, 0, 1, 1, 0, 1, 1, 0],
            value=[25, 45, 20, 25, 40, 42, 25, 70, 18])

TH_WHERE = filt(seq(as_(T("T"), "x"), as_(T("H"), "y")),
                cmp("x", "value", ">", 40), cmp("y", "value", "<", 25),
                cmp("x", "id", "=", 0), cmp("y", "id", "=", 0))


@pytest.mark.parametrize(("strategy", "expected"), [
    ("ALL", {(1, 2), (1, 8), (5, 8)}),
    ("ANY", {(1, 2), (1, 8), (5, 8)}),
    ("STRICT", {(1, 2)}),
    ("NEXT", {(1, 2), (1, 8)}),
    ("LAST", {(1, 2), (5, 8)}),
    ("MAX", {(1, 2), (1, 8), (5, 8)}),
])
def test_th_strategies(strategy: str, expected: set[tuple[int, ...]]) -> None:
    out = run(query(TH_WHERE, strategy=strategy), TH)
    assert {m.positions for m in out} == expected


KLEENE_WHERE = filt(
    seq(as_(T("H"), "x"), plus(filt(as_(T("T"), "y"), cmp("y", "id", "=", 1))), as_(T("H"), "z")),
    cmp("x", "value", "<", 30), cmp("z", "value", ">", 60),
    cmp("x", "id", "=", 1), cmp("z", "id", "=", 1))


@pytest.mark.parametrize(("strategy", "expected"), [
    ("ALL", {(3, 4, 6, 7), (3, 4, 7), (3, 6, 7)}),
    ("ANY", {(3, 4, 6, 7), (3, 4, 7), (3, 6, 7)}),
    ("NEXT", {(3, 4, 6, 7)}),
    ("LAST", {(3, 4, 6, 7)}),
    ("MAX", {(3, 4, 6, 7)}),
    ("STRICT", set()),
])
def test_kleene_strategies(strategy: str, expected: set[tuple[int, ...]]) -> None:
    out = run(query(KLEENE_WHERE, strategy=strategy), TH)
    assert {m.positions for m in out} == expected
    assert all(m.end == 7 and m.start == 3 for m in out)


# ---------------------------------------------------------------- where CORE C++ differs


def test_partition_within_events_counts_substream_positions() -> None:
    ev = stream("A B B", id=[1, 2, 1])
    q = query(seq(T("A"), T("B")), partition_by=("id",), within=events_w(1))
    assert run(q, ev) == [RefMatch(2, 0, (0, 2), (1,))]


def test_alternative_with_kleene_keeps_every_match() -> None:
    ev = stream("C B A B")
    q = query(seq(or_(T("C"), plus(T("A"))), T("B")), within=events_w(10))
    assert sets(run(q, ev)) == {frozenset({0, 1}), frozenset({0, 3}), frozenset({2, 3})}


def test_contiguous_iteration_on_the_right_of_sequence() -> None:
    ev = stream("A B C B")
    out = sets(run(query(seq(T("A"), cplus(T("B")))), ev))
    assert frozenset({0, 1, 3}) not in out
    assert out == {frozenset({0, 1}), frozenset({0, 3})}
    # the non-contiguous iteration does give it
    assert frozenset({0, 1, 3}) in sets(run(query(seq(T("A"), plus(T("B")))), ev))


def test_no_within_means_no_bound() -> None:
    ev = [{"type": "A", "ts": 0}, {"type": "B", "ts": 10_000}]
    assert sets(run(query(seq(T("A"), T("B"))), ev, time="ts")) == {frozenset({0, 1})}


def test_within_minutes_and_seconds_add_up_and_fractions_are_exact() -> None:
    ev = [{"type": "A", "ts": 0}, {"type": "B", "ts": 90}, {"type": "B", "ts": 91}]
    q = query(seq(T("A"), T("B")), within=time_w(90))  # 1 MINUTE 30 SECONDS
    assert sets(run(q, ev, time="ts")) == {frozenset({0, 1})}
    ev = [{"type": "A", "ts": 0}, {"type": "B", "ts": 1.5}, {"type": "B", "ts": 1.75}]
    q = query(seq(T("A"), T("B")), within=time_w(Fraction(3, 2)))
    assert sets(run(q, ev, time="ts")) == {frozenset({0, 1})}


def test_within_attr_is_inclusive() -> None:
    ev = [{"type": "A", "t": 10}, {"type": "B", "t": 12}, {"type": "B", "t": 13}]
    q = query(seq(T("A"), T("B")), within=attr_w(2, "t"))
    assert sets(run(q, ev)) == {frozenset({0, 1})}


def test_composite_partition_key_and_written_twice() -> None:
    ev = stream("A B B B", a=[1, 1, 2, 1], b=[5, 6, 5, 5])
    q = query(seq(T("A"), T("B")), partition_by=("a", "b"))
    assert run(q, ev) == [RefMatch(3, 0, (0, 3), (1, 5))]


def test_outputs_form_a_set() -> None:
    # two valuations (x marks 0 or y marks 0), one complex event
    ev = stream("A B")
    q = query(seq(or_(as_(T("A"), "x"), as_(T("A"), "y")), T("B")))
    assert run(q, ev) == [RefMatch(1, 0, (0, 1), ())]


def test_in_set_and_negative_literals() -> None:
    ev = stream("A A A A", v=[-1, 0, 2, None])
    inset = A.FilterAtom("A", A.InSet(attr("v"), (lit(-1), lit(2))))
    notin = A.FilterAtom("A", A.InSet(attr("v"), (lit(-1), lit(2)), negated=True))
    assert sets(run(query(filt(T("A"), inset)), ev)) == {frozenset({0}), frozenset({2})}
    # NULL NOT IN {...} is unknown, hence false
    assert sets(run(query(filt(T("A"), notin)), ev)) == {frozenset({1})}


# ---------------------------------------------------------------- hand-computed cases


def test_contiguous_sequence() -> None:
    ev = stream("A B A C B")
    assert sets(run(query(cseq(T("A"), T("B"))), ev)) == {frozenset({0, 1})}
    assert sets(run(query(seq(T("A"), T("B"))), ev)) == {
        frozenset({0, 1}), frozenset({0, 4}), frozenset({2, 4})}


def test_contiguous_sequence_counts_substream_positions() -> None:
    ev = stream("A B B", id=[1, 2, 1])
    assert sets(run(query(cseq(T("A"), T("B"))), ev)) == {frozenset({0, 1})}
    out = run(query(cseq(T("A"), T("B")), partition_by=("id",)), ev)
    assert out == [RefMatch(2, 0, (0, 2), (1,))]


def test_contiguous_iteration() -> None:
    ev = stream("A A B A A")
    expected = {frozenset(s) for s in ({0}, {1}, {0, 1}, {3}, {4}, {3, 4})}
    assert sets(run(query(cplus(T("A"))), ev)) == expected
    everything = {frozenset(s) for s in ({0}, {1}, {0, 1}, {3}, {4}, {3, 4}, {0, 3}, {0, 4},
                                         {1, 3}, {1, 4}, {0, 1, 3}, {0, 1, 4}, {0, 3, 4},
                                         {1, 3, 4}, {0, 1, 3, 4})}
    assert sets(run(query(plus(T("A"))), ev)) == everything


def test_contiguous_iteration_of_a_sequence() -> None:
    ev = stream("A B A B C A B")
    out = sets(run(query(cplus(seq(T("A"), T("B")))), ev))
    # (A ; B) valuations: {0,1} {0,3} {0,6} {2,3} {2,6} {5,6}; ":+" joins V1, V2 only when
    # V2 starts right after V1 ends: {0,1}+{2,3}, {0,1}+{2,6}; {2,3}+... would need an A at 4
    assert out == {frozenset(s) for s in ({0, 1}, {0, 3}, {0, 6}, {2, 3}, {2, 6}, {5, 6},
                                          {0, 1, 2, 3}, {0, 1, 2, 6})}


def test_kleene_of_a_sequence_with_variables() -> None:
    ev = stream("A B A B")
    q = query(plus(seq(as_(T("A"), "x"), as_(T("B"), "y"))), select=("x",))
    out = run(q, ev)
    # valuations {0,1} {0,3} {2,3} {0,1,2,3}; projecting on x keeps the As
    assert {(m.start, m.end, m.positions) for m in out} == {
        (0, 1, (0,)), (0, 3, (0,)), (2, 3, (2,)), (0, 3, (0, 2))}


def test_nested_kleene() -> None:
    ev = stream("A B A B")
    out = sets(run(query(plus(seq(T("A"), plus(T("B"))))), ev))
    assert out == {frozenset(s) for s in ({0, 1}, {0, 3}, {0, 1, 3}, {2, 3}, {0, 1, 2, 3})}


def test_kleene_inside_kleene_is_the_same_as_one_kleene() -> None:
    ev = stream("A A A")
    assert sets(run(query(plus(plus(T("A")))), ev)) == sets(run(query(plus(T("A"))), ev))
    assert len(sets(run(query(plus(plus(T("A")))), ev))) == 7


def test_or_inside_kleene() -> None:
    ev = stream("A C B")
    out = sets(run(query(plus(or_(T("A"), T("B")))), ev))
    assert out == {frozenset(s) for s in ({0}, {2}, {0, 2})}
    out = sets(run(query(cplus(or_(T("A"), T("B")))), ev))
    assert out == {frozenset({0}), frozenset({2})}


def test_filter_over_a_kleene_variable_checks_every_event() -> None:
    ev = stream("A A A", v=[2, 0, 3])
    q = query(filt(plus(as_(T("A"), "x")), cmp("x", "v", ">", 1)))
    assert sets(run(q, ev)) == {frozenset({0}), frozenset({2}), frozenset({0, 2})}


def test_as_on_a_sub_formula() -> None:
    ev = stream("A B C", v=[1, 0, 5])
    where = seq(as_(seq(T("A"), T("B")), "x"), T("C"))
    assert sets(run(query(filt(where, cmp("x", "v", ">", 0))), ev)) == set()
    assert sets(run(query(filt(where, cmp("x", "v", ">=", 0))), ev)) == {frozenset({0, 1, 2})}
    out = run(query(where, select=("x",)), ev)
    assert out == [RefMatch(2, 0, (0, 1), ())]


def test_as_gathers_every_variable_and_reuse_unites() -> None:
    ev = stream("A B")
    q = query(seq(as_(T("A"), "x"), as_(T("B"), "x")), select=("x",))
    assert run(q, ev) == [RefMatch(1, 0, (0, 1), ())]


def test_empty_variable_satisfies_its_filter() -> None:
    ev = stream("A B", v=[0, 0])
    # x is bound only in the left alternative; on B alone V(x) is empty
    where = filt(or_(as_(T("A"), "x"), T("B")), cmp("x", "v", ">", 5))
    assert sets(run(query(where), ev)) == {frozenset({1})}


def test_filter_or_is_a_union() -> None:
    ev = stream("A A A", v=[1, 2, 3])
    cond = A.FilterOr(cmp("A", "v", "=", 1), cmp("A", "v", "=", 3))
    assert sets(run(query(A.Filter(T("A"), cond)), ev)) == {frozenset({0}), frozenset({2})}
    # on a Kleene, FILTER θ1 OR θ2 is (φ FILTER θ1) OR (φ FILTER θ2): all events share one side
    out = sets(run(query(A.Filter(plus(T("A")), cond)), ev))
    assert out == {frozenset({0}), frozenset({2})}


def test_event_type_names_are_variables() -> None:
    ev = stream("A B B", v=[0, 1, 2])
    q = query(filt(seq(T("A"), T("B")), cmp("B", "v", ">", 1)), select=("B",))
    assert run(q, ev) == [RefMatch(2, 0, (2,), ())]


def test_projection_keeps_the_interval_and_dedups() -> None:
    ev = stream("A B B C")
    where = seq(as_(T("A"), "x"), plus(T("B")), T("C"))
    out = run(query(where, select=("x",)), ev)
    assert out == [RefMatch(3, 0, (0,), ())]
    out = run(query(where, select=()), ev)
    assert out == [RefMatch(3, 0, (), ())]
    assert len(run(query(where), ev)) == 3


def test_projection_after_strategy() -> None:
    # MAX compares D before projection: {0,1,2} wins over {0,2}; projected on x both give (0,)
    ev = stream("A B C")
    where = seq(as_(T("A"), "x"), or_(seq(T("B"), T("C")), T("C")))
    assert run(query(where, strategy="MAX", select=("x",)), ev) == [RefMatch(2, 0, (0,), ())]
    assert len(run(query(where, strategy="MAX"), ev)) == 1


def test_strategy_is_applied_before_within() -> None:
    ev = stream("A A B")
    # NEXT keeps {0,2} at end 2, and the window then removes it; {1,2} is not resurrected
    q = query(seq(T("A"), T("B")), strategy="NEXT", within=events_w(1))
    assert run(q, ev) == []
    q = query(seq(T("A"), T("B")), strategy="LAST", within=events_w(1))
    assert sets(run(q, ev)) == {frozenset({1, 2})}


def test_strict_counts_substream_positions() -> None:
    ev = stream("A C B", id=[1, 2, 1])
    assert run(query(seq(T("A"), T("B")), strategy="STRICT"), ev) == []
    q = query(seq(T("A"), T("B")), strategy="STRICT", partition_by=("id",))
    assert run(q, ev) == [RefMatch(2, 0, (0, 2), (1,))]


def test_null_partition_values_are_dropped() -> None:
    ev = stream("A A B B A B", id=[None, 1, 1, ..., float("nan"), 1])
    q = query(seq(T("A"), T("B")), partition_by=("id",))
    assert {(m.positions, m.partition) for m in run(q, ev)} == {
        ((1, 2), (1,)), ((1, 5), (1,))}


def test_partitions_evaluate_separately() -> None:
    ev = stream("A A B B", id=[1, 2, 2, 1])
    q = query(seq(T("A"), T("B")), partition_by=("id",))
    assert run(q, ev) == [RefMatch(2, 1, (1, 2), (2,)), RefMatch(3, 0, (0, 3), (1,))]
    # without partitioning: four pairs
    assert len(run(query(seq(T("A"), T("B"))), ev)) == 4


def test_consume_any_acts_across_partitions() -> None:
    ev = stream("A A B B", id=[1, 2, 2, 1])
    q = query(seq(T("A"), T("B")), partition_by=("id",), consume="ANY")
    assert run(q, ev) == [RefMatch(2, 1, (1, 2), (2,))]
    q = query(seq(T("A"), T("B")), partition_by=("id",), consume="PARTITION")
    assert run(q, ev) == [RefMatch(2, 1, (1, 2), (2,)), RefMatch(3, 0, (0, 3), (1,))]


def test_consume_any_lets_later_matches_through() -> None:
    ev = stream("A B A B A B")
    q = query(seq(T("A"), T("B")), consume="ANY")
    assert run(q, ev) == [RefMatch(1, 0, (0, 1), ()), RefMatch(3, 2, (2, 3), ()),
                          RefMatch(5, 4, (4, 5), ())]


def test_consume_uses_the_interval_start_after_projection() -> None:
    ev = stream("A B C B")
    # SELECT y keeps the interval [0, 1]: the match at 1 consumes up to 1
    q = query(seq(T("A"), as_(T("B"), "y")), select=("y",), consume="ANY")
    assert run(q, ev) == [RefMatch(1, 0, (1,), ())]


def test_consume_is_decided_only_by_outputs_that_survive_the_window() -> None:
    ev = stream("A X C B D")
    q = query(or_(seq(T("A"), T("B")), seq(T("C"), T("D"))), within=events_w(2), consume="ANY")
    # at 3 only {0,3}, outside the window: nothing is output, nothing consumed; at 4 {2,4}
    assert run(q, ev) == [RefMatch(4, 2, (2, 4), ())]
    ev = stream("A A C B B")
    q = query(seq(T("A"), T("B")), within=events_w(2), consume="ANY")
    # at 3: {1,3} ({0,3} is outside the window); it consumes through 3, so nothing at 4
    assert run(q, ev) == [RefMatch(3, 1, (1, 3), ())]


# ---------------------------------------------------------------- streams (FROM)


def test_events_of_other_streams_take_no_position() -> None:
    ev = [{"type": "A", "stream": "S"}, {"type": "B", "stream": "T"}, {"type": "B"}]
    q = query(cseq(T("A"), T("B")), streams=("S",))
    assert run(q, ev) == [RefMatch(2, 0, (0, 2), ())]
    q = query(cseq(T("A"), T("B")), streams=("S", "T"))
    assert run(q, ev) == [RefMatch(1, 0, (0, 1), ())]


def test_stream_qualified_types() -> None:
    ev = [{"type": "A", "stream": "T"}, {"type": "A", "stream": "S"}, {"type": "A"},
          {"type": "B", "stream": "T"}]
    q = query(seq(T("A", "S"), T("B")), streams=("S", "T"))
    assert sets(run(q, ev)) == {frozenset({1, 3}), frozenset({2, 3})}
    q = query(seq(T("A", "T"), T("B", "T")), streams=("S", "T"))
    assert sets(run(q, ev)) == {frozenset({0, 3}), frozenset({2, 3})}
    # the qualified type's variable is the type name
    q = query(seq(T("A", "S"), T("B")), streams=("S", "T"), select=("A",))
    assert {m.positions for m in run(q, ev)} == {(1,), (2,)}


def test_window_and_contiguity_with_foreign_events() -> None:
    ev = [{"type": "A", "stream": "S"}, {"type": "X", "stream": "U"},
          {"type": "X", "stream": "U"}, {"type": "B", "stream": "S"}]
    q = query(seq(T("A"), T("B")), streams=("S",), within=events_w(1))
    assert run(q, ev) == [RefMatch(3, 0, (0, 3), ())]
    # with time=None a time window measures original positions
    q = query(seq(T("A"), T("B")), streams=("S",), within=time_w(1))
    assert run(q, ev) == []
    q = query(seq(T("A"), T("B")), streams=("S",), within=time_w(3))
    assert run(q, ev) == [RefMatch(3, 0, (0, 3), ())]


def test_other_type_and_stream_keys() -> None:
    ev = [{"kind": "A", "src": "S"}, {"kind": "B", "src": "U"}, {"kind": "B", "src": "S"}]
    q = query(seq(T("A"), T("B")), streams=("S",))
    assert run(q, ev, type_key="kind", stream_key="src") == [RefMatch(2, 0, (0, 2), ())]


# ---------------------------------------------------------------- time


def test_time_attribute_numbers_are_seconds() -> None:
    ev = [{"type": "A", "ts": 1}, {"type": "B", "ts": 3}, {"type": "B", "ts": 4}]
    q = query(seq(T("A"), T("B")), within=time_w(2))
    assert sets(run(q, ev, time="ts")) == {frozenset({0, 1})}


def test_time_attribute_datetimes() -> None:
    t0 = dt.datetime(2024, 1, 2, 14, 30)
    ev = [{"type": "A", "ts": t0},
          {"type": "B", "ts": t0 + dt.timedelta(seconds=1, microseconds=500_000)},
          {"type": "B", "ts": t0 + dt.timedelta(seconds=1, microseconds=500_001)}]
    q = query(seq(T("A"), T("B")), within=time_w(Fraction(3, 2)))
    assert sets(run(q, ev, time="ts")) == {frozenset({0, 1})}
    q = query(seq(T("A"), T("B")), within=time_w(Fraction(3, 2)), select=())
    assert run(q, ev, time="ts") == [RefMatch(1, 0, (), ())]


def test_times_out_of_order_are_an_error() -> None:
    ev = [{"type": "A", "ts": 2}, {"type": "B", "ts": 1}]
    with pytest.raises(ValueError):
        reference_matches(query(seq(T("A"), T("B"))), ev, time="ts")


def test_bad_window_attribute_is_an_error() -> None:
    q = query(seq(T("A"), T("B")), within=attr_w(2, "t"))
    for bad in (None, "x", ...):
        ev = stream("A B B", t=[1, bad, 3])
        with pytest.raises(ValueError):
            reference_matches(q, ev)
    # events the query does not read (other streams, no partition key) need nothing
    ev = [{"type": "A", "t": 1}, {"type": "B", "stream": "U"}, {"type": "B", "t": 3}]
    assert run(q, ev) == [RefMatch(2, 0, (0, 2), ())]
    ev = [{"type": "A", "t": 1, "k": 1}, {"type": "B"}, {"type": "B", "t": 3, "k": 1}]
    assert run(replace(q, partition_by=("k",)), ev) == [RefMatch(2, 0, (0, 2), (1,))]


def test_events_the_query_does_not_read_need_no_time() -> None:
    ev = [{"type": "A", "ts": 1}, {"type": "B", "stream": "U"}, {"type": "B", "ts": 3}]
    assert run(query(seq(T("A"), T("B"))), ev, time="ts") == [RefMatch(2, 0, (0, 2), ())]


def test_too_many_events_for_a_brute_force() -> None:
    ev = stream(" ".join(["A"] * 13))
    with pytest.raises(ValueError):
        reference_matches(query(T("A")), ev)
    # but partitions of at most 12 are fine
    ev = stream(" ".join(["A"] * 13), id=[i % 2 for i in range(13)])
    assert len(reference_matches(query(T("A"), partition_by=("id",)), ev)) == 13


# ---------------------------------------------------------------- predicates


def P(text_op: str, left: A.Expr, right: A.Expr) -> A.Compare:
    return A.Compare(text_op, left, right)


@pytest.mark.parametrize(("pred", "event", "holds"), [
    (P("=", attr("v"), lit(1)), {"v": 1}, True),
    (P("=", attr("v"), lit(1)), {"v": 1.0}, True),
    (P("=", attr("v"), lit(1)), {}, False),
    (P("=", attr("v"), lit(1)), {"v": None}, False),
    (A.PNot(P("=", attr("v"), lit(1))), {}, False),  # NOT unknown is unknown
    (A.PNot(P("=", attr("v"), lit(1))), {"v": 2}, True),
    (P("!=", attr("v"), lit(1)), {"v": None}, False),
    (P("=", attr("v"), lit(1)), {"v": "1"}, False),  # string vs number
    (A.PNot(P("=", attr("v"), lit(1))), {"v": "1"}, False),
    (P("=", attr("v"), lit(1)), {"v": True}, False),  # bool is not a number
    (P("=", attr("v"), lit(True)), {"v": True}, True),
    (P("<", attr("v"), lit("b")), {"v": "a"}, True),
    (P(">", attr("v"), lit(0)), {"v": float("nan")}, False),
    (A.PNot(P(">", attr("v"), lit(0))), {"v": float("nan")}, False),
    (P(">", A.Arith("/", attr("v"), lit(0)), lit(0)), {"v": 1}, False),
    (A.PNot(P(">", A.Arith("/", attr("v"), lit(0)), lit(0))), {"v": 1}, False),
    (P(">", A.Arith("%", attr("v"), attr("w")), lit(-1)), {"v": 1, "w": 0}, False),
    (P("=", A.Arith("/", attr("v"), lit(2)), lit(1.5)), {"v": 3}, True),
    (P("=", A.Arith("%", attr("v"), lit(3)), lit(1)), {"v": 7}, True),
    (P("=", A.Arith("+", attr("v"), lit(1)), lit(1)), {"v": "a"}, False),
    (P("=", A.Neg(attr("v")), lit(-2)), {"v": 2}, True),
    (P(">", A.Arith("*", attr("v"), attr("w")), lit(5)), {"v": 2, "w": 3}, True),
    (P(">", A.Arith("-", attr("v"), attr("w")), lit(0)), {"v": 2}, False),
    # Kleene logic: FALSE AND unknown is FALSE, TRUE OR unknown is TRUE
    (A.PNot(A.PAnd(P("=", attr("v"), lit(1)), P("=", attr("w"), lit(1)))), {"v": 2}, True),
    (A.PNot(A.PAnd(P("=", attr("v"), lit(1)), P("=", attr("w"), lit(1)))), {"v": 1}, False),
    (A.POr(P("=", attr("v"), lit(1)), P("=", attr("w"), lit(1))), {"v": 1}, True),
    (A.POr(P("=", attr("v"), lit(1)), P("=", attr("w"), lit(1))), {"v": 2}, False),
    (A.PNot(A.POr(P("=", attr("v"), lit(1)), P("=", attr("w"), lit(1)))), {"v": 2}, False),
    (A.PNot(A.POr(P("=", attr("v"), lit(1)), P("=", attr("w"), lit(1)))), {"v": 2, "w": 2}, True),
    (A.Like(attr("s"), "^ab"), {"s": "abc"}, True),
    (A.Like(attr("s"), "b"), {"s": "abc"}, True),  # partial match
    (A.Like(attr("s"), "^b"), {"s": "abc"}, False),
    (A.Like(attr("s"), "b"), {}, False),
    (A.PNot(A.Like(attr("s"), "b")), {}, False),
    (A.Like(attr("s"), "1"), {"s": 1}, False),
    (A.InSet(attr("v"), (lit(1), lit(2))), {"v": 2}, True),
    (A.InSet(attr("v"), (lit(1), lit(2)), True), {"v": 3}, True),
    (A.InSet(attr("v"), (lit(1), lit(2)), True), {"v": 2}, False),
    (A.InSet(attr("v"), (lit(1), lit(2)), True), {}, False),
    (A.InSet(attr("s"), (lit("a"), lit("b"))), {"s": "b"}, True),
    (A.InRange(attr("v"), lit(1), lit(3)), {"v": 1}, True),
    (A.InRange(attr("v"), lit(1), lit(3)), {"v": 3}, True),
    (A.InRange(attr("v"), lit(1), lit(3)), {"v": 3.5}, False),
    (A.InRange(attr("v"), lit(1), lit(3)), {"v": None}, False),
    (A.PNot(A.InRange(attr("v"), lit(1), lit(3))), {"v": None}, False),
    (A.InRange(A.Arith("*", attr("v"), lit(2)), attr("lo"), lit(10)), {"v": 3, "lo": 6}, True),
    (A.InRange(A.Arith("*", attr("v"), lit(2)), attr("lo"), lit(10)), {"v": 3}, False),
])
def test_predicates(pred: A.Pred, event: dict[str, Any], holds: bool) -> None:
    assert pred_holds(pred, event) is holds


# ---------------------------------------------------------------- conditions between events


def qa(var: str, name: str) -> A.Attr:
    """``var.name``: a qualified attribute."""
    return A.Attr(name, var=var)


def prev(name: str) -> A.Prev:
    return A.Prev(name)


def agg(func: str, var: str, name: str | None = None) -> A.Agg:
    return A.Agg(func, var, name)


def atom(var: str, pred: A.Pred) -> A.FilterAtom:
    return A.FilterAtom(var, pred)


def match(pred: A.Pred) -> A.FilterMatch:
    return A.FilterMatch(pred)


def sets_of(*groups: set[int]) -> set[frozenset[int]]:
    return {frozenset(g) for g in groups}


def test_worked_condition_between_events() -> None:
    # T AS x ; H AS y FILTER y[id = x.id]
    q = query(filt(seq(as_(T("T"), "x"), as_(T("H"), "y")), atom("y", P("=", attr("id"),
                                                                         qa("x", "id")))))
    assert sets(run(q, TH)) == sets_of({1, 2}, {1, 8}, {4, 7}, {5, 8}, {6, 7})


HTH = seq(as_(T("H"), "h"), plus(as_(T("T"), "t")), as_(T("H"), "k"))
HTH_IDS = (cmp("t", "id", "=", 1), cmp("h", "id", "=", 1), cmp("k", "id", "=", 1))


def test_worked_count_in_a_match_condition() -> None:
    # H AS h ; (T AS t)+ ; H AS k FILTER [COUNT(t) >= 2] AND t[id = 1] AND h[id = 1] AND ...
    q = query(filt(HTH, match(P(">=", agg("COUNT", "t"), lit(2))), *HTH_IDS))
    assert sets(run(q, TH)) == sets_of({3, 4, 6, 7})


def test_worked_avg_in_a_match_condition() -> None:
    # the averages are 40 for {4}, 25 for {6}, 32.5 for {4,6}
    q = query(filt(HTH, match(P(">", agg("AVG", "t", "value"), lit(33))), *HTH_IDS))
    assert sets(run(q, TH)) == sets_of({3, 4, 7})


def test_worked_prev() -> None:
    # (T AS x)+ FILTER x[value < PREV(value)] AND x[id = 0]
    q = query(filt(plus(as_(T("T"), "x")), atom("x", P("<", attr("value"), prev("value"))),
                   cmp("x", "id", "=", 0)))
    assert sets(run(q, TH)) == sets_of({1}, {5}, {1, 5})


def test_worked_count_and_sum_match_condition() -> None:
    # SEMANTICS.md: FILTER [COUNT(b) >= 3 AND SUM(b.amount) > 10000]
    ev = stream("B B B B", amount=[5000, 4000, 2000, 100])
    cond = match(A.PAnd(P(">=", agg("COUNT", "b"), lit(3)),
                        P(">", agg("SUM", "b", "amount"), lit(10000))))
    # three or more b's: {0,1,2} 11000, {0,1,2,3} 11100; the other triples sum to 9100 or less
    assert sets(run(query(filt(plus(as_(T("B"), "b")), cond)), ev)) == sets_of(
        {0, 1, 2}, {0, 1, 2, 3})


def test_worked_rising_prices() -> None:
    # SEMANTICS.md: (B AS b)+ FILTER b[price > PREV(price)] — strictly rising across the b's
    ev = stream("B B B", price=[1, 3, 2])
    q = query(filt(plus(as_(T("B"), "b")), atom("b", P(">", attr("price"), prev("price")))))
    assert sets(run(q, ev)) == sets_of({0}, {1}, {2}, {0, 1}, {0, 2})


def test_prev_exempts_the_first_event_from_the_whole_predicate() -> None:
    ev = stream("A A A", v=[1, 7, 8])
    rising_and_big = A.PAnd(P(">", attr("v"), prev("v")), P(">", attr("v"), lit(5)))
    # x[v > PREV(v) AND v > 5]: the first x is exempt from both comparisons, so {0} (v = 1)
    # and every set starting at 0 pass
    q = query(filt(plus(as_(T("A"), "x")), atom("x", rising_and_big)))
    assert sets(run(q, ev)) == sets_of({0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2})
    # two atoms: only the PREV one exempts the first event; v > 5 applies to every x
    q = query(filt(plus(as_(T("A"), "x")), atom("x", P(">", attr("v"), prev("v"))),
                   cmp("x", "v", ">", 5)))
    assert sets(run(q, ev)) == sets_of({1}, {2}, {1, 2})


def test_prev_is_the_previous_event_of_the_variable_not_of_the_stream() -> None:
    ev = stream("A B A A", v=[1, 9, 5, 3])
    q = query(filt(plus(or_(as_(T("A"), "x"), T("B"))),
                   atom("x", P(">", attr("v"), prev("v")))))
    # {0,1,2}: x = {0,2}, 5 > 1 (B at 1 is not an x); {0,3}: 3 > 1; {2,3}: 3 > 5 fails
    out = sets(run(q, ev))
    assert frozenset({0, 1, 2}) in out and frozenset({0, 3}) in out
    assert frozenset({2, 3}) not in out and frozenset({0, 2, 3}) not in out
    assert frozenset({1, 2, 3}) not in out  # x = {2,3}
    assert frozenset({1, 3}) in out  # x = {3}: nothing before it, exempt


def test_prev_null_is_unknown() -> None:
    ev = stream("A A A", v=[None, 2, 3])
    q = query(filt(plus(as_(T("A"), "x")), atom("x", P(">", attr("v"), prev("v")))))
    # {0,1}: 2 > NULL is unknown; {0,2}: 3 > NULL too; {0,1,2} fails at 1. The first event's
    # NULL matters only as a previous value: {0} alone is exempt
    assert sets(run(q, ev)) == sets_of({0}, {1}, {2}, {1, 2})


def test_qualified_attributes_are_universal() -> None:
    # SEMANTICS.md: A AS a ; (B AS b)+ FILTER b[price > a.price] — every b above every a
    ev = stream("A B B B", price=[10, 11, 12, 9])
    q = query(filt(seq(as_(T("A"), "a"), plus(as_(T("B"), "b"))),
                   atom("b", P(">", attr("price"), qa("a", "price")))))
    assert sets(run(q, ev)) == sets_of({0, 1}, {0, 2}, {0, 1, 2})
    # several a's: every (a, b) pair is tested
    ev = stream("A A B B", price=[1, 5, 3, 6])
    q = query(filt(seq(plus(as_(T("A"), "a")), plus(as_(T("B"), "b"))),
                   atom("b", P(">", attr("price"), qa("a", "price")))))
    assert sets(run(q, ev)) == sets_of({0, 2}, {0, 3}, {0, 2, 3}, {1, 3}, {0, 1, 3})


def test_a_null_in_one_choice_fails_the_condition() -> None:
    ev = stream("A A B", v=[1, None, 5])
    q = query(filt(seq(plus(as_(T("A"), "a")), as_(T("B"), "b")),
                   atom("b", P(">", attr("v"), qa("a", "v")))))
    assert sets(run(q, ev)) == sets_of({0, 2})


def test_two_qualified_variables_are_chosen_independently() -> None:
    ev = stream("A B B C", v=[1, 1, 3, 4])
    q = query(filt(seq(as_(T("A"), "a"), plus(as_(T("B"), "b")), as_(T("C"), "c")),
                   atom("c", P(">", attr("v"), A.Arith("+", qa("a", "v"), qa("b", "v"))))))
    # 4 > 1 + 1 but not 4 > 1 + 3
    assert sets(run(q, ev)) == sets_of({0, 1, 3})


def test_the_filtered_variable_qualified_is_the_tested_event() -> None:
    # x[v >= x.v] compares each x with itself, not with every other x
    ev = stream("A A A", v=[1, 2, None])
    q = query(filt(plus(as_(T("A"), "x")), atom("x", P(">=", attr("v"), qa("x", "v")))))
    assert sets(run(q, ev)) == sets_of({0}, {1}, {0, 1})
    # another name for the same events is another variable: every pair
    q = query(filt(plus(as_(as_(T("A"), "x"), "y")), atom("x", P(">=", attr("v"), qa("y", "v")))))
    assert sets(run(q, ev)) == sets_of({0}, {1})


def test_an_empty_qualified_variable_makes_the_condition_vacuous() -> None:
    ev = stream("A C B", v=[5, 0, 1])
    where = seq(or_(as_(T("A"), "a"), T("C")), as_(T("B"), "b"))
    q = query(filt(where, atom("b", P(">", attr("v"), qa("a", "v")))))
    assert sets(run(q, ev)) == sets_of({1, 2})  # {0,2}: 1 > 5 fails; {1,2}: no a
    q = query(filt(where, match(P("<", qa("a", "v"), qa("b", "v")))))
    assert sets(run(q, ev)) == sets_of({1, 2})
    q = query(filt(where, match(P("=", agg("COUNT", "a"), lit(0)))))
    assert sets(run(q, ev)) == sets_of({1, 2})


def test_an_aggregate_of_an_empty_variable_is_null() -> None:
    ev = stream("A B", v=[1, 2])
    q = query(filt(or_(as_(T("A"), "a"), as_(T("B"), "b")),
                   atom("b", P(">", attr("v"), agg("AVG", "a", "v")))))
    # {0}: no b, vacuous; {1}: AVG of no a is NULL, so 2 > NULL is unknown
    assert sets(run(q, ev)) == sets_of({0})
    for func in ("SUM", "MIN", "MAX", "FIRST", "LAST"):
        q = query(filt(or_(as_(T("A"), "a"), as_(T("B"), "b")),
                       A.FilterOr(match(P(">=", agg(func, "a", "v"), lit(0))),
                                  match(P("<", agg(func, "a", "v"), lit(0))))))
        assert sets(run(q, ev)) == sets_of({0}), func


def test_match_condition_is_universal_over_its_qualified_variables() -> None:
    ev = stream("A A B B", v=[1, 5, 3, 6])
    q = query(filt(seq(plus(as_(T("A"), "a")), plus(as_(T("B"), "b"))),
                   match(P("<", qa("a", "v"), qa("b", "v")))))
    assert sets(run(q, ev)) == sets_of({0, 2}, {0, 3}, {0, 2, 3}, {1, 3}, {0, 1, 3})


def test_match_condition_refuses_plain_attributes() -> None:
    q = query(filt(T("A"), match(P("=", attr("v"), lit(1)))))
    with pytest.raises(ValueError):
        reference_matches(q, stream("A", v=[1]))


@pytest.mark.parametrize(("func", "values", "expected"), [
    ("COUNT", [], 0),
    ("COUNT", [None, 1, ...], 3),
    ("SUM", [], UNKNOWN),
    ("SUM", [1, None, 2], 3),
    ("SUM", [1, float("nan"), 2], 3),
    ("SUM", [None, None], UNKNOWN),
    ("SUM", [0.5, 1], 1.5),
    ("SUM", [1, "x"], UNKNOWN),  # a value that is not a number: NULL (our decision)
    ("SUM", [1, True], UNKNOWN),  # bools are not numbers
    ("AVG", [], UNKNOWN),
    ("AVG", [1, None, 2], 1.5),  # SUM / number of non-NULL values
    ("AVG", [40, 25], 32.5),
    ("AVG", [1, "2"], UNKNOWN),
    ("MIN", [3, None, 1], 1),
    ("MAX", [3, None, 1], 3),
    ("MIN", [2.5, 1], 1),
    ("MIN", ["b", "a", "c"], "a"),
    ("MAX", ["b", "a", "c"], "c"),
    ("MAX", [True, False], True),
    ("MAX", [1, "x"], UNKNOWN),  # values of several kinds: NULL (our decision)
    ("MIN", [1, True], UNKNOWN),
    ("MIN", [None], UNKNOWN),
    ("FIRST", [], UNKNOWN),
    ("FIRST", [None, 2], UNKNOWN),  # by position: the first event's NULL is NULL
    ("FIRST", [1, 2], 1),
    ("FIRST", ["s", 2], "s"),
    ("LAST", [1, None], UNKNOWN),
    ("LAST", [1, float("nan")], UNKNOWN),
    ("LAST", [1, 2], 2),
])
def test_aggregate_values(func: str, values: list[Any], expected: object) -> None:
    got = aggregate_value(func, [None if v is ... else v for v in values])
    if expected is UNKNOWN:
        assert got is UNKNOWN
    else:
        assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(("func", "values", "expected"), [
    ("COUNT", [], 0),
    ("COUNT", ["CL", "CL", "AR", None, "PE", float("nan")], 3),  # NULLs skipped, as SQL
    ("COUNT", [1, 1.0, True, "1"], 3),  # 1 = 1.0; a bool and a string are other values
    ("SUM", [2, 2, 3, None], 5),
    ("SUM", [], UNKNOWN),
    ("SUM", [None], UNKNOWN),
    ("SUM", [1, "x"], UNKNOWN),  # not all numbers: NULL, as SUM
    ("SUM", [0.1, 0.2, 0.1], 0.30000000000000004),
    ("AVG", [2, 2, 3], 2.5),
    ("AVG", [1, True], UNKNOWN),
])
def test_distinct_aggregate_values(func: str, values: list[Any], expected: object) -> None:
    got = distinct_value(func, values)
    if expected is UNKNOWN:
        assert got is UNKNOWN
    else:
        assert got == expected and type(got) is type(expected)


def test_count_distinct_in_a_match_condition() -> None:
    """"Three different countries": COUNT(DISTINCT b.country) over the b events."""
    ev = stream("B B B B B", country=["CL", "CL", "AR", None, "PE"])
    three = match(P(">=", A.Agg("COUNT", "b", "country", distinct=True), lit(3)))
    q = query(filt(plus(as_(T("B"), "b")), three), within=events_w(4))
    assert sets(run(q, ev)) == sets_of({0, 2, 4}, {1, 2, 4}, {0, 1, 2, 4}, {0, 2, 3, 4},
                                       {1, 2, 3, 4}, {0, 1, 2, 3, 4})


def test_sum_skips_nulls() -> None:
    ev = stream("A A A A", v=[1, None, 2, 3])
    q = query(filt(plus(as_(T("A"), "x")), match(P("=", agg("SUM", "x", "v"), lit(3)))))
    # {1} alone: the sum of no value is NULL
    assert sets(run(q, ev)) == sets_of({0, 2}, {0, 1, 2}, {3}, {1, 3})


def test_first_and_last_keep_nulls() -> None:
    ev = stream("A A", v=[None, 1])
    q = query(filt(plus(as_(T("A"), "x")), match(P(">=", agg("FIRST", "x", "v"), lit(0)))))
    assert sets(run(q, ev)) == sets_of({1})
    ev = stream("A A", v=[1, None])
    q = query(filt(plus(as_(T("A"), "x")), match(P(">=", agg("LAST", "x", "v"), lit(0)))))
    assert sets(run(q, ev)) == sets_of({0})
    # MIN skips the NULL
    q = query(filt(plus(as_(T("A"), "x")), match(P(">=", agg("MIN", "x", "v"), lit(0)))))
    assert sets(run(q, ev)) == sets_of({0}, {0, 1})


def test_min_and_max_of_strings() -> None:
    ev = stream("A A A", s=["c", "b", "a"])
    q = query(filt(plus(as_(T("A"), "x")), match(P("=", agg("MIN", "x", "s"), lit("b")))))
    assert sets(run(q, ev)) == sets_of({1}, {0, 1})
    q = query(filt(plus(as_(T("A"), "x")), match(P("=", agg("MAX", "x", "s"), lit("b")))))
    assert sets(run(q, ev)) == sets_of({1}, {1, 2})


def test_an_aggregate_inside_an_atom() -> None:
    # every x equals the smallest x: all the x's are equal
    ev = stream("A A A", v=[1, 1, 2])
    q = query(filt(plus(as_(T("A"), "x")), atom("x", P("=", attr("v"), agg("MIN", "x", "v")))))
    assert sets(run(q, ev)) == sets_of({0}, {1}, {2}, {0, 1})


def test_a_filter_inside_an_iteration_applies_per_block() -> None:
    ev = stream("A B A B", v=[5, 6, 0, 1])
    block = seq(as_(T("A"), "x"), as_(T("B"), "y"))
    higher = atom("y", P(">", attr("v"), qa("x", "v")))
    # per block: {0,1} (6 > 5) and {2,3} (1 > 0) each pass, so their concatenation does
    per_block = sets(run(query(plus(A.Filter(block, higher))), ev))
    assert per_block == sets_of({0, 1}, {2, 3}, {0, 1, 2, 3})
    # over the whole iteration: y = 3 (v 1) is not above x = 0 (v 5)
    whole = sets(run(query(A.Filter(plus(block), higher)), ev))
    assert whole == sets_of({0, 1}, {2, 3})
    # COUNT per block: each block has one x
    one = match(P("=", agg("COUNT", "x"), lit(1)))
    assert sets(run(query(plus(A.Filter(block, one))), ev)) == sets_of(
        {0, 1}, {0, 3}, {2, 3}, {0, 1, 2, 3})
    assert sets(run(query(A.Filter(plus(block), one)), ev)) == sets_of({0, 1}, {0, 3}, {2, 3})


BUYS = [{"type": "BUY", "stream": "S1", "price": 5}, {"type": "BUY", "stream": "S2", "price": 20},
        {"type": "BUY", "stream": "S1", "price": 30}, {"type": "BUY", "stream": "S2", "price": 1},
        {"type": "BUY", "price": 40}]


def test_stream_qualified_variable_in_filter_and_select() -> None:
    # S1>BUY ; BUY: WHERE writes S1>BUY, so the variable S1>BUY holds the first leaf's event
    # (from S1, or from no stream) only, never the plain BUY's; BUY holds both events
    where = seq(T("BUY", "S1"), T("BUY"))
    q = query(filt(where, cmp("S1>BUY", "price", ">", 10)), streams=("S1", "S2"),
              select=("S1>BUY",))
    assert run(q, BUYS) == [RefMatch(3, 2, (2,), ()), RefMatch(4, 2, (2,), ())]
    q = query(filt(where, cmp("BUY", "price", ">", 10)), streams=("S1", "S2"))
    assert run(q, BUYS) == [RefMatch(4, 2, (2, 4), ())]
    q = query(where, streams=("S1", "S2"), select=("S1>BUY",))
    assert {(m.end, m.positions) for m in run(q, BUYS)} == {
        (1, (0,)), (2, (0,)), (3, (0,)), (4, (0,)), (3, (2,)), (4, (2,))}
    # a NOT S1>BUY is a leaf written S1>BUY too: S1>BUY names the negated event, not the BUYs
    q = query(filt(seq(seq(T("BUY"), A.Not(T("BUY", "S1"))), T("BUY")),
                   cmp("S1>BUY", "price", ">", 25)), streams=("S1", "S2"))
    # BUYS prices 5, 20, 30, 1, 40 from S1, S2, S1, S2, none: a BUY of S1 (or none) above 25
    # between the two forbids the pair (2, from S1 at 30, lies between 0 or 1 and 3 or 4)
    assert sets(run(q, BUYS)) == sets_of({0, 1}, {0, 2}, {1, 2}, {2, 3}, {2, 4}, {3, 4})
    # WHERE writes no S1>BUY: a plain leaf binds S1>BUY for its events from S1 or no stream
    q = query(T("BUY"), streams=("S1", "S2"), select=("S1>BUY",))
    assert {m.positions for m in run(q, BUYS)} == {(0,), (2,), (4,), ()}


def test_stream_qualified_names_filter_each_streams_events() -> None:
    """CORE's ``SELECT * FROM S1, S2 WHERE BUY FILTER S1>BUY[name = 'MSFT'] AND
    S2>BUY[name = 'INTL']``: a BUY of MSFT from S1, of INTL from S2; a BUY from no stream is of
    both, so it must be both."""
    ev = [{"type": "BUY", "stream": "S1", "name": "MSFT"},
          {"type": "BUY", "stream": "S1", "name": "INTL"},
          {"type": "BUY", "stream": "S2", "name": "INTL"},
          {"type": "BUY", "stream": "S2", "name": "MSFT"},
          {"type": "BUY", "name": "MSFT"}]
    cond = fand(cmp("S1>BUY", "name", "=", "MSFT"), cmp("S2>BUY", "name", "=", "INTL"))
    q = query(filt(T("BUY"), cond), streams=("S1", "S2"))
    assert sets(run(q, ev)) == sets_of({0}, {2})
    # conditions between events and PREV over S1>BUY: the S1 events of every BUY leaf
    rising = atom("S1>BUY", P(">", attr("price"), A.Prev("price")))
    q = query(filt(seq(T("BUY"), T("BUY")), rising), streams=("S1", "S2"))
    # the pairs whose S1-or-no-stream events rise: 0 (5) then 2 (30) or 4 (40), 2 then 4;
    # and every pair with at most one such event
    assert sets(run(q, BUYS)) == sets_of({0, 1}, {0, 2}, {0, 3}, {0, 4}, {1, 2}, {1, 3},
                                         {1, 4}, {2, 3}, {2, 4}, {3, 4})
    falling = atom("S1>BUY", P("<", attr("price"), A.Prev("price")))
    q = query(filt(seq(T("BUY"), T("BUY")), falling), streams=("S1", "S2"))
    assert sets(run(q, BUYS)) == sets_of({0, 1}, {0, 3}, {1, 2}, {1, 3}, {1, 4}, {2, 3},
                                         {3, 4})
    above = atom("S2>BUY", P(">", attr("price"), qa("S1>BUY", "price")))
    q = query(filt(seq(T("BUY"), T("BUY")), above), streams=("S1", "S2"))
    # 0 (S1, 5) then 1 (S2, 20): 20 > 5; 2 (S1, 30) then 3 (S2, 1): no; a no-stream event is
    # of both streams, so it is compared with itself (40 > 40 fails); {0, 2} and {1, 3} have
    # no event of one of the two streams
    assert sets(run(q, BUYS)) == sets_of({0, 1}, {0, 2}, {1, 3})
