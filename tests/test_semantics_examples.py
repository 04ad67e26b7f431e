"""SEMANTICS.md's worked examples (and the corrections to CORE C++ it lists), through the
public engine API: ``ceql.compile(text).run(events, time=...)``.

Every assertion is an exact set of complex events per end position.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pytest

import ceql

# ---------------------------------------------------------------- helpers


def run(text: str, events: Sequence[dict[str, Any]], **kw: Any) -> list[Any]:
    return list(ceql.compile(text).run(events, **kw))


def per_end(matches: list[Any]) -> dict[int, set[tuple[int, ...]]]:
    """end position → set of position tuples; also checks each match's basic invariants."""
    out: dict[int, set[tuple[int, ...]]] = defaultdict(set)
    seen = set()
    for m in matches:
        key = (m.end_position, m.start_position, tuple(m.positions), tuple(m.partition))
        assert key not in seen, f"{m} output twice"
        seen.add(key)
        assert list(m.positions) == sorted(set(m.positions))
        assert m.start_position <= m.end_position
        if m.positions:
            assert m.start_position <= m.positions[0] and m.positions[-1] <= m.end_position
        out[m.end_position].add(tuple(m.positions))
    ends = [m.end_position for m in matches]
    assert ends == sorted(ends), "outputs must come grouped by end position, in stream order"
    return dict(out)


def stream(spec: str, **cols: Sequence[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, t in enumerate(spec.split()):
        ev: dict[str, Any] = {"type": t}
        for k, vals in cols.items():
            if vals[i] is not ...:
                ev[k] = vals[i]
        out.append(ev)
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

STOCK_QUERY = """
SELECT {strategy} * FROM Stock
WHERE SELL AS msft; SELL AS intel; SELL AS amzn
FILTER msft[name = 'MSFT'] AND msft[price > 100] AND intel[name = 'INTL']
   AND amzn[name = 'AMZN'] AND amzn[price < 2000]
{tail}
"""

STOCK_ALL = {4: {(1, 2, 4), (0, 2, 4)}, 6: {(1, 2, 6), (0, 2, 6), (1, 5, 6), (0, 5, 6)}}


def test_stock() -> None:
    out = run(STOCK_QUERY.format(strategy="", tail=""), STOCK)
    assert per_end(out) == STOCK_ALL
    for m in out:
        assert m.partition == ()
        assert m.start_position == m.positions[0] and m.end_position == m.positions[-1]
        # without a time attribute an event's time is its position
        assert m.start_time == m.start_position and m.end_time == m.end_position
        v = m.variables
        assert (v["msft"], v["intel"], v["amzn"]) == tuple((p,) for p in m.positions)


@pytest.mark.parametrize(("strategy", "expected"), [
    ("ALL", STOCK_ALL),
    ("ANY", STOCK_ALL),
    ("NEXT", {4: {(0, 2, 4)}, 6: {(0, 2, 6)}}),
    ("LAST", {4: {(1, 2, 4)}, 6: {(1, 5, 6)}}),
    ("MAX", STOCK_ALL),
    ("STRICT", {}),
])
def test_stock_strategies(strategy: str, expected: dict[int, set[tuple[int, ...]]]) -> None:
    assert per_end(run(STOCK_QUERY.format(strategy=strategy, tail=""), STOCK)) == expected


def test_stock_within_5_events() -> None:
    out = run(STOCK_QUERY.format(strategy="", tail="WITHIN 5 EVENTS"), STOCK)
    assert per_end(out) == {4: {(1, 2, 4), (0, 2, 4)}, 6: {(1, 2, 6), (1, 5, 6)}}


def test_stock_consume_by_any() -> None:
    out = run(STOCK_QUERY.format(strategy="", tail="CONSUME BY ANY"), STOCK)
    assert per_end(out) == {4: {(1, 2, 4), (0, 2, 4)}}


def test_stock_consume_by_any_with_limit() -> None:
    # consumption is decided before LIMIT cuts: one output at 4, still nothing at 6
    out = run(STOCK_QUERY.format(strategy="", tail="CONSUME BY ANY LIMIT 1"), STOCK)
    got = per_end(out)
    assert list(got) == [4] and len(got[4]) == 1 and got[4] <= STOCK_ALL[4]


def test_stock_limit() -> None:
    out = run(STOCK_QUERY.format(strategy="", tail="LIMIT 3"), STOCK)
    got = per_end(out)
    assert got[4] == STOCK_ALL[4]
    assert len(got[6]) == 3 and got[6] <= STOCK_ALL[6]


# ---------------------------------------------------------------- worked examples 2 and 3

TH = stream("T T H H T T T H H",
            id=[2, 0, 0, 1, 1, 0, 1, 1, 0],
            value=[25, 45, 20, 25, 40, 42, 25, 70, 18])

TH_QUERY = """SELECT {strategy} * FROM S
WHERE (T AS x ; H AS y) FILTER x[value > 40] AND y[value < 25] AND x[id = 0] AND y[id = 0]"""


@pytest.mark.parametrize(("strategy", "expected"), [
    ("ALL", {2: {(1, 2)}, 8: {(1, 8), (5, 8)}}),
    ("ANY", {2: {(1, 2)}, 8: {(1, 8), (5, 8)}}),
    ("STRICT", {2: {(1, 2)}}),
    ("NEXT", {2: {(1, 2)}, 8: {(1, 8)}}),
    ("LAST", {2: {(1, 2)}, 8: {(5, 8)}}),
    ("MAX", {2: {(1, 2)}, 8: {(1, 8), (5, 8)}}),
])
def test_th_strategies(strategy: str, expected: dict[int, set[tuple[int, ...]]]) -> None:
    assert per_end(run(TH_QUERY.format(strategy=strategy), TH)) == expected


# ------------------------------------------------ correlation, conjunction and negation


@pytest.mark.parametrize(("where", "expected"), [
    ("(T AS x AND H AS y) FILTER x[id = 1] AND y[id = 1] WITHIN 2 EVENTS",
     {4: {(3, 4)}, 7: {(6, 7)}}),
    ("T AS x ; NOT H AS n ; H AS y FILTER x[id = 0] AND y[id = 0] AND n[id = 0]",
     {2: {(1, 2)}, 8: {(5, 8)}}),
    ("T AS x ; NOT H AS n ; H AS y FILTER x[id = 0] AND y[id = 0]", {2: {(1, 2)}}),
    ("T AS x ; NOT H AS n FILTER x[id = 1] AND n[id = 1] WITHIN 2 EVENTS", {4: {(4,)}}),
    ("NOT H AS n ; T AS x FILTER x[id = 0] AND n[id = 0] WITHIN 3 EVENTS", {1: {(1,)}}),
])
def test_conjunction_and_negation(where: str, expected: dict[int, set[tuple[int, ...]]]) -> None:
    assert per_end(run(f"SELECT * FROM S WHERE {where}", TH)) == expected


def test_some_valuation_passing_the_negation_keeps_the_complex_event() -> None:
    # {0,2,3} through the split {0,2} | {3}: the B at 1 is inside the first part
    got = per_end(run("SELECT * FROM S WHERE (A+) ; NOT B ; (A+)", stream("A B A A")))
    assert got == {3: {(0, 2, 3), (2, 3)}}  # {0,3} has the B in its only gap


KLEENE_QUERY = """SELECT {strategy} * FROM S
WHERE H AS x ; (T AS y FILTER y[id = 1])+ ; H AS z
FILTER x[value < 30] AND z[value > 60] AND x[id = 1] AND z[id = 1]"""


@pytest.mark.parametrize(("strategy", "expected"), [
    ("ALL", {7: {(3, 4, 6, 7), (3, 4, 7), (3, 6, 7)}}),
    ("ANY", {7: {(3, 4, 6, 7), (3, 4, 7), (3, 6, 7)}}),
    ("NEXT", {7: {(3, 4, 6, 7)}}),
    ("LAST", {7: {(3, 4, 6, 7)}}),
    ("MAX", {7: {(3, 4, 6, 7)}}),
    ("STRICT", {}),
])
def test_kleene_strategies(strategy: str, expected: dict[int, set[tuple[int, ...]]]) -> None:
    out = run(KLEENE_QUERY.format(strategy=strategy), TH)
    assert per_end(out) == expected
    for m in out:
        assert m.start_position == 3
        assert m.variables["x"] == (3,) and m.variables["z"] == (7,)
        assert m.variables["y"] == tuple(p for p in m.positions if p not in (3, 7))


# ---------------------------------------------------------------- where CORE C++ differs


def test_strategies_are_not_all() -> None:
    assert per_end(run(TH_QUERY.format(strategy="LAST"), TH)) != per_end(
        run(TH_QUERY.format(strategy="ALL"), TH))


def test_no_within_means_no_bound() -> None:
    ev = [{"type": "A", "ts": 0}, {"type": "B", "ts": 3600}]
    assert per_end(run("SELECT * FROM S WHERE A ; B", ev, time="ts")) == {1: {(0, 1)}}


def test_within_parts_add_up_and_fractions_are_exact() -> None:
    ev = [{"type": "A", "ts": 0}, {"type": "B", "ts": 90}, {"type": "B", "ts": 91}]
    out = run("SELECT * FROM S WHERE A ; B WITHIN 1 MINUTE 30 SECONDS", ev, time="ts")
    assert per_end(out) == {1: {(0, 1)}}
    ev = [{"type": "A", "ts": 0}, {"type": "B", "ts": 1.5}, {"type": "B", "ts": 1.75}]
    out = run("SELECT * FROM S WHERE A ; B WITHIN 1.5 SECONDS", ev, time="ts")
    assert per_end(out) == {1: {(0, 1)}}


def test_within_attr_is_inclusive() -> None:
    ev = [{"type": "A", "t": 10}, {"type": "B", "t": 12}, {"type": "B", "t": 13}]
    assert per_end(run("SELECT * FROM S WHERE A ; B WITHIN 2 [t]", ev)) == {1: {(0, 1)}}


def test_partition_by_composite_key() -> None:
    ev = stream("A B B B", a=[1, 1, 2, 1], b=[5, 6, 5, 5])
    for text in ("SELECT * FROM S WHERE A ; B PARTITION BY [a, b]",
                 "SELECT * FROM S WHERE A ; B PARTITION BY [a], [b]"):
        out = run(text, ev)
        assert per_end(out) == {3: {(0, 3)}}
        assert [m.partition for m in out] == [(1, 5)]


def test_outputs_form_a_set() -> None:
    ev = stream("A B")
    out = run("SELECT * FROM S WHERE (A AS x OR A AS y) ; B", ev)
    assert per_end(out) == {1: {(0, 1)}}
    assert len(out) == 1


def test_in_sets_and_negative_literals() -> None:
    ev = stream("A A A A", v=[-1, 0, 2, None])
    assert per_end(run("SELECT * FROM S WHERE A FILTER A[v IN {-1, 2}]", ev)) == {
        0: {(0,)}, 2: {(2,)}}
    assert per_end(run("SELECT * FROM S WHERE A FILTER A[v NOT IN {-1, 2}]", ev)) == {
        1: {(1,)}}
    assert per_end(run("SELECT * FROM S WHERE A FILTER A[v > -1]", ev)) == {
        1: {(1,)}, 2: {(2,)}}


def test_partition_within_events_counts_partition_positions() -> None:
    ev = stream("A B B", id=[1, 2, 1])
    out = run("SELECT * FROM S WHERE (A ; B) PARTITION BY [id] WITHIN 1 EVENTS", ev)
    assert per_end(out) == {2: {(0, 2)}}
    assert out[0].partition == (1,)


def test_select_list_keeps_a_match_spanning_exactly_the_window() -> None:
    ev = [{"type": "A", "ts": 0}, {"type": "B", "ts": 5}, {"type": "B", "ts": 6}]
    out = run("SELECT b FROM S WHERE A ; B AS b WITHIN 5 SECONDS", ev, time="ts")
    assert per_end(out) == {1: {(1,)}}
    assert (out[0].start_position, out[0].end_position) == (0, 1)


def test_alternatives_keep_every_match() -> None:
    out = run("SELECT * FROM S WHERE ((C OR (A+)) ; B) WITHIN 10 EVENTS", stream("C B A B"))
    assert per_end(out) == {1: {(0, 1)}, 3: {(0, 3), (2, 3)}}


def test_contiguous_iteration_on_the_right_of_a_sequence() -> None:
    out = run("SELECT * FROM S WHERE A ; (B:+)", stream("A B C B"))
    assert per_end(out) == {1: {(0, 1)}, 3: {(0, 3)}}


# ---------------------------------------------------------------- a few more clauses


def test_strategy_is_applied_before_within() -> None:
    # clause order: the strategy picks among all CEs ending at 2 ({0,2} for NEXT), then WITHIN
    # drops it; {1,2} does not come back
    ev = stream("A A B")
    assert per_end(run("SELECT NEXT * FROM S WHERE A ; B WITHIN 1 EVENTS", ev)) == {}
    assert per_end(run("SELECT LAST * FROM S WHERE A ; B WITHIN 1 EVENTS", ev)) == {2: {(1, 2)}}
    # MAX: {0,1,2} (outside the window) hides {1,2}
    ev = stream("A A B")
    assert per_end(run("SELECT MAX * FROM S WHERE A+ ; B WITHIN 1 EVENTS", ev)) == {}


def test_outputs_at_j_are_produced_when_j_is_read() -> None:
    ev = stream("A B C B")
    feeder = ceql.compile("SELECT * FROM S WHERE A ; B").evaluator()
    assert [m.positions for m in feeder.feed(ev[:2])] == [(0, 1)]
    assert [m.positions for m in feeder.feed(ev[2:3])] == []
    assert [m.positions for m in feeder.feed(ev[3:])] == [(0, 3)]


def test_out_of_order_times_are_an_error_naming_the_position() -> None:
    ev = [{"type": "A", "ts": 1}, {"type": "B", "ts": 3}, {"type": "B", "ts": 2}]
    with pytest.raises(ceql.CeqlInputError, match=r"^Event 2 is out of order"):
        run("SELECT * FROM S WHERE A ; B", ev, time="ts")


def test_consume_by_any_acts_across_partitions() -> None:
    ev = stream("A A B B", id=[1, 2, 2, 1])
    base = "SELECT * FROM S WHERE A ; B PARTITION BY [id] CONSUME BY "
    assert per_end(run(base + "ANY", ev)) == {2: {(1, 2)}}
    assert per_end(run(base + "PARTITION", ev)) == {2: {(1, 2)}, 3: {(0, 3)}}
    assert per_end(run(base + "NONE", ev)) == {2: {(1, 2)}, 3: {(0, 3)}}


def test_events_of_other_streams_take_no_position() -> None:
    ev = [{"type": "A", "stream": "S"}, {"type": "B", "stream": "T"}, {"type": "B"}]
    assert per_end(run("SELECT * FROM S WHERE A : B", ev)) == {2: {(0, 2)}}
    assert per_end(run("SELECT * FROM S, T WHERE A : B", ev)) == {1: {(0, 1)}}
    assert per_end(run("SELECT * FROM S, T WHERE A ; T>B", ev)) == {1: {(0, 1)}, 2: {(0, 2)}}
    assert per_end(run("SELECT * FROM S, T WHERE A ; S>B", ev)) == {2: {(0, 2)}}


def test_stream_qualified_names_filter_each_streams_events() -> None:
    """CORE's meaning of ``S>T[P]`` (its unit test stream_specifier): P of the T events from
    stream S, whichever T leaf binds them; an event without a stream is of every stream."""
    ev = [{"type": "BUY", "stream": "S1", "name": "MSFT"},
          {"type": "BUY", "stream": "S1", "name": "INTL"},
          {"type": "BUY", "stream": "S2", "name": "INTL"},
          {"type": "BUY", "stream": "S2", "name": "MSFT"},
          {"type": "BUY", "name": "MSFT"}]
    out = run("SELECT * FROM S1, S2 WHERE BUY "
              "FILTER S1>BUY[name = 'MSFT'] AND S2>BUY[name = 'INTL']", ev)
    assert per_end(out) == {0: {(0,)}, 2: {(2,)}}
    prices = [{"type": "BUY", "stream": "S1", "p": 5}, {"type": "BUY", "stream": "S2", "p": 1},
              {"type": "BUY", "stream": "S1", "p": 3}, {"type": "BUY", "stream": "S1", "p": 7}]
    out = run("SELECT S1>BUY FROM S1, S2 WHERE BUY ; BUY FILTER S1>BUY[p > PREV(p)]", prices)
    assert {(m.start_position, tuple(m.positions)) for m in out} == {
        (0, (0,)), (1, (2,)), (1, (3,)), (0, (0, 3)), (2, (2, 3))}


def test_a_negated_event_compared_with_a_stream_qualified_name_is_never_silently_wrong() -> None:
    """``S1>BUY`` read by a condition on a negated event: where WHERE writes no ``S1>BUY``, the
    BUY events of S1 of a plain BUY leaf (here after the NOT); where it writes ``S1>BUY``,
    that leaf's events only, so the plain BUY after the NOT
    is not read and the condition is evaluated."""
    ev = [{"type": "A"}, {"type": "B", "x": 1}, {"type": "BUY", "stream": "S1", "x": 5},
          {"type": "BUY", "stream": "S2", "x": 0}]
    text = "SELECT * FROM S1, S2 WHERE A ; NOT B AS n ; BUY FILTER n[x > `S1>BUY`.x]"
    assert per_end(run(text, ev)) == {2: {(0, 2)}}
    ev = [{"type": "BUY", "stream": "S1", "x": 2}, {"type": "B", "x": 3},
          {"type": "BUY", "stream": "S1", "x": 9}, {"type": "B", "x": 1},
          {"type": "BUY", "stream": "S2", "x": 0}]
    text = "SELECT * FROM S1, S2 WHERE S1>BUY ; NOT B AS n ; BUY FILTER n[x > `S1>BUY`.x]"
    # a B above the first BUY's x forbids the pair: 1 (3 > 2) lies between 0 and 2 or 4; 3
    # (1 > 9 fails) does not forbid 2 ; 4
    assert per_end(run(text, ev)) == {4: {(2, 4)}}


def test_count_distinct_three_different_countries() -> None:
    """COUNT(DISTINCT b.country): the distinct non-NULL values (SQL's); SUM and AVG too."""
    ev = [{"type": "B", "country": c, "x": x}
          for c, x in [("CL", 2), ("CL", 2), ("AR", 3), (None, 3), ("PE", 1)]]
    out = run("SELECT * FROM S WHERE (B AS b)+ FILTER [COUNT(DISTINCT b.country) >= 3] "
              "WITHIN 4 EVENTS", ev)
    assert {tuple(m.positions) for m in out} == {
        (0, 2, 4), (1, 2, 4), (0, 1, 2, 4), (0, 2, 3, 4), (1, 2, 3, 4), (0, 1, 2, 3, 4)}
    out = run("SELECT * FROM S WHERE (B AS b)+ FILTER [SUM(DISTINCT b.x) = 5] "
              "AND b[x > AVG(DISTINCT b.x) - 1] WITHIN 4 EVENTS", ev)
    # a 2 (0 or 1) and a 3 (2 or 3), no 1 (4): the average of {2, 3} is 2.5
    assert {tuple(m.positions) for m in out} == {
        (0, 2), (0, 3), (1, 2), (1, 3), (0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3), (0, 1, 2, 3)}


def test_prev_of_a_variable_with_at_most_one_event_never_rejects() -> None:
    """The first event of X is exempt from a predicate with PREV, its parts without PREV
    included; where X binds at most one event nothing is tested (valid, with a warning)."""
    ev = [{"type": "A", "price": 5}, {"type": "B", "price": 1}, {"type": "B", "price": 9}]
    with pytest.warns(ceql.VacuousConditionWarning):
        out = run("SELECT * FROM S WHERE A AS a ; B AS b "
                  "FILTER b[price > PREV(price) AND price > 100] WITHIN 5 EVENTS", ev)
    assert per_end(out) == {1: {(0, 1)}, 2: {(0, 2)}}


def test_datetime_times() -> None:
    t0 = dt.datetime(2024, 1, 2, 14, 30)
    ev = [{"type": "A", "ts": t0},
          {"type": "B", "ts": t0 + dt.timedelta(seconds=1, microseconds=500_000)},
          {"type": "B", "ts": t0 + dt.timedelta(seconds=1, microseconds=500_001)}]
    out = run("SELECT * FROM S WHERE A ; B WITHIN 1500 MILLISECONDS", ev, time="ts")
    assert per_end(out) == {1: {(0, 1)}}


def test_match_times_are_the_time_attribute_values() -> None:
    t0 = dt.datetime(2024, 1, 2, 14, 30)
    t1 = t0 + dt.timedelta(seconds=1)
    ev = [{"type": "A", "ts": t0}, {"type": "B", "ts": t1}]
    out = run("SELECT * FROM S WHERE A ; B", ev, time="ts")
    assert [(m.start_time, m.end_time) for m in out] == [(t0, t1)]
    ev = [{"type": "A", "ts": 10}, {"type": "B", "ts": 12.5}]
    out = run("SELECT * FROM S WHERE A ; B", ev, time="ts")
    assert [(m.start_time, m.end_time) for m in out] == [(10, 12.5)]


def test_an_edge_nots_condition_reads_a_stream_qualified_name_of_plain_leaves() -> None:
    """``S>C`` over a plain ``C`` leaf, read by a leading NOT's condition: the C events of S
    (an event without a stream belongs to every stream), though no match reports ``S>C``.
    The B at 0 (c = 0) differs from the C at 1 (c = 1): it forbids nothing."""
    ev = [{"type": "B", "c": 0}, {"type": "C", "c": 1}, {"type": "A", "c": 0}]
    for text, want in (
            ("SELECT * FROM S WHERE NOT B AS n ; C FILTER n[c = `S>C`.c] WITHIN 2 EVENTS",
             {1: {(1,)}}),
            ("SELECT * FROM S WHERE NOT B AS n ; (A AND (C FILTER C[PREV(a) >= 0])) "
             "FILTER n[c = `S>C`.c] WITHIN 2 EVENTS", {2: {(1, 2)}})):
        out = run(text, ev)
        assert per_end(out) == want
        assert all("S>C" not in m.variables for m in out)
    out = run("SELECT * FROM S WHERE NOT B AS n ; C FILTER n[c = `S>C`.c] WITHIN 2 EVENTS",
              [{"type": "B", "c": 1}, {"type": "C", "c": 1}])
    assert out == []  # equal values: the B forbids it
