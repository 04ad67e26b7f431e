"""A NOT between two elements whose conditions read other events of the match: earlier ones
(``A AS a ; NOT B AS n ; C FILTER n[price > a.price]``: the runs waiting in the gap hold what
the conditions read, and a β event ends those for which they all hold), later ones, every
iteration's (the NOT under ``+`` inside the FILTER) or another operand of AND's (the β events of
the gap are recorded, and judged when the valuation completes), written in ``n[…]`` or in
another variable's brackets. Targeted property tests against the brute-force reference (every
strategy, windows, partitions, LIMIT, CONSUME BY, row and Arrow feeds cut anywhere) and worked
examples, OpenCEP's ``SEQ(a, NOT(b), c) WHERE b.open < c.open`` among them."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import ceql
from ceql.frontends.ceql import parse
from reference import reference_matches
from strategies import PROFILE
from test_properties import Key, check_against_reference, keys

# (WHERE, the negated names whose conditions go in the FILTER after it (None: the FILTER is
# in the shape, ``{cond}``), the positive variables the conditions may read)
_SHAPES = [
    ("A AS a ; NOT (B AS n) ; C AS c", "n", "a c"),
    ("(A AS a)+ ; NOT (B AS n) ; C AS c", "n", "a c"),
    ("A AS a ; C ; NOT (B AS n) ; (C AS c)+", "n", "a c"),
    ("(A AS a ; NOT (B AS n) ; C AS c FILTER {cond})+", None, "a c"),
    ("A AS a ; NOT (B AS n) ; C AS c ; NOT (B AS m) ; A", "n m", "a c"),
    ("(A AS a OR C AS a) ; NOT (B AS n) ; A", "n", "a"),
    # the NOT under an iteration inside the FILTER: every iteration's a and c are read
    ("(A AS a ; NOT (B AS n) ; C AS c)+", "n", "a c"),
    # inside an operand of AND: d's event may come before, inside or after the gap
    ("(A AS a ; NOT (B AS n) ; C AS c) AND A AS d", "n", "a c d"),
    ("(A AS a ; NOT (B AS n) ; C AS c FILTER {cond}) AND C AS d", None, "a c"),
    # two FILTERs around the NOT: one β event must satisfy the conditions of both
    ("((A AS a ; NOT (B AS n) ; C AS c) FILTER {cond}) ; A AS d", "n", "a c d"),
]
_CONDS = ["{n}[v > {o}.v]", "{n}[v = {o}.v]", "{n}[v >= MAX({o}.v)]", "{n}[v != COUNT({o})]",
          "{n}[g = {o}.g AND v > 0]", "{n}[{o}.v < v + 1]",
          # in the other variable's brackets: a condition on n all the same
          "{o}[v > {n}.v]", "{o}[v - 1 <= {n}.v AND g = {n}.g]",
          # several conditions between events on one NOT: an index finds the runs through
          # one of them (an equality first), every one decides
          "{n}[v > {o}.v] AND {n}[v < {o}.v + 2]", "{n}[v <= {o}.v] AND {n}[g = {o}.g]"]


@st.composite
def _cond(draw: st.DrawFn, n: str, variables: str) -> str:
    other = draw(st.sampled_from(variables.split()))
    return draw(st.sampled_from(_CONDS)).format(n=n, o=other)


@st.composite
def between_queries(draw: st.DrawFn) -> str:
    shape, names, variables = draw(st.sampled_from(_SHAPES))
    if "{cond}" in shape:
        inner = variables if names is None else "a c"
        shape = shape.format(cond=draw(_cond("n", inner)))
    if names is None:
        where = shape
    else:
        conds = [draw(_cond(n, variables)) for n in names.split()]
        if draw(st.booleans()):
            conds.append(f"n[v >= {draw(st.integers(0, 2))}]")
        where = f"{shape} FILTER {' AND '.join(conds)}"
    strategy = draw(st.sampled_from(["ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT"]))
    text = f"SELECT {strategy} * FROM S WHERE {where}"
    if draw(st.booleans()):
        text += " PARTITION BY [g]"
    if draw(st.booleans()):
        text += f" WITHIN {draw(st.integers(1, 6))} EVENTS"
    if draw(st.booleans()):
        text += " CONSUME BY " + draw(st.sampled_from(["ANY", "PARTITION"]))
    if draw(st.booleans()):
        text += f" LIMIT {draw(st.integers(1, 2))}"
    return text


@st.composite
def streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    return [{"type": draw(st.sampled_from("AABBC")), "v": draw(st.sampled_from([0, 1, 2, 3, None])),
             "g": draw(st.integers(0, 1))} for _ in range(draw(st.integers(0, 11)))]


@PROFILE
@given(between_queries(), streams(), st.data())
def test_between_not_with_conditions_equals_reference(
        text: str, events: list[dict[str, Any]], data: st.DataObject) -> None:
    note(text)
    for i, e in enumerate(events):
        note(f"{i}: {e}")
    q = ceql.compile(text)
    ast = parse(text)
    ref = reference_matches(ast, events)
    whole = keys(q.run(events))
    note(f"reference: {[tuple(m) for m in ref]}\nengine: {whole}")
    check_against_reference(whole, ref, ast.limit)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(events)), max_size=4), label="cuts"))
    names = ["type", "v", "g"]
    schema = pa.schema([("type", pa.string()), ("v", pa.int64()), ("g", pa.int64())])
    for arrow in (False, True):
        ev = q.evaluator()
        fed: list[Key] = []
        for a, b in pairwise([0, *cuts, len(events)]):
            chunk = events[a:b]
            batch: Any = chunk
            if arrow:
                batch = pa.RecordBatch.from_pydict({k: [e.get(k) for e in chunk] for k in names},
                                                   schema=schema)
            fed += keys(ev.feed(batch))
        assert fed == whole


_SEVERAL = [  # a NOT with several conditions between events: one of them finds the runs
    "A AS a ; NOT (B AS n) ; C AS c FILTER n[v > a.v] AND n[v < a.v + 2]",
    "A AS a ; NOT (B AS n) ; C AS c FILTER n[v <= a.v] AND n[g = a.g]",
    "A AS a ; NOT (B AS n) ; C AS c FILTER n[v >= a.v] AND n[g != a.g]",
    "(A AS a)+ ; NOT (B AS n) ; C AS c FILTER n[v > a.v] AND n[g = a.g] PARTITION BY [g]",
]


@PROFILE
@given(st.sampled_from(_SEVERAL), st.sampled_from(["ALL", "NEXT", "MAX"]), streams())
def test_a_not_with_several_conditions_equals_reference(
        where: str, strategy: str, events: list[dict[str, Any]]) -> None:
    text = f"SELECT {strategy} * FROM S WHERE {where} WITHIN 8 EVENTS"
    note(text)
    q = ceql.compile(text)
    ast = parse(text)
    check_against_reference(keys(q.run(events)), reference_matches(ast, events), ast.limit)


def test_a_not_with_several_conditions_ends_a_run_only_when_all_hold() -> None:
    # the B's price is above the A's (the condition its index finds runs by) but not below
    # the A's plus 2: the run lives, and the C completes it
    q = ceql.compile("SELECT * FROM S WHERE A AS a ; NOT (B AS n) ; C AS c "
                     "FILTER n[v > a.v] AND n[v < a.v + 2] WITHIN 5 EVENTS")
    events = [{"type": "A", "v": 0}, {"type": "B", "v": 3}, {"type": "C", "v": 0},
              {"type": "B", "v": 1}, {"type": "C", "v": 0}]
    assert [m.positions for m in q.run(events)] == [(0, 2)]


# ---------------------------------------------------------------- worked examples

TRADES = [{"type": t, "price": p, "name": n} for t, p, n in [
    ("SELL", 10, "X"), ("BUY", 9, "X"), ("BUY", 12, "Y"), ("BUY", 11, "X"), ("SELL", 20, "X"),
    ("BUY", 15, "X"), ("BUY", 30, "X")]]


def test_a_sale_then_a_purchase_with_no_higher_purchase_in_between() -> None:
    q = ceql.compile("SELECT * FROM S WHERE SELL AS s ; NOT (BUY AS n) ; BUY AS b "
                     "FILTER n[price > s.price] AND b[price > s.price] PARTITION BY [name]")
    got = [m.positions for m in q.run(TRADES)]
    # the sale at 0 (10): BUY 11 at 3 has nothing above 10 before it; BUY 15 and 30 come
    # after BUY 11 > 10. The sale at 4 (20): BUY 30 at 6 comes after BUY 15 < 20.
    assert got == [(0, 3), (4, 6)]


def _run(text: str, events: list[dict[str, Any]]) -> list[tuple[int, ...]]:
    """The engine's matches, checked against the reference."""
    got = [m.positions for m in ceql.compile(text).run(events)]
    ref = reference_matches(parse(text), events)
    assert sorted(got) == sorted(r.positions for r in ref)
    return got


OPENCEP = [{"type": t, "open": o} for t, o in [
    ("A", 5), ("B", 3), ("C", 4), ("A", 1), ("B", 9), ("C", 4), ("C", 10)]]


@pytest.mark.parametrize("strategy", ["ALL", "NEXT", "LAST", "MAX", "ANY"])
def test_opencep_a_not_b_c_where_b_open_below_c_open(strategy: str) -> None:
    # OpenCEP's SEQ(a, NOT(b), c) WHERE b.open < c.open: the condition reads c, bound after
    # the NOT. From the A at 0 the B at 1 (3) is below every later C (4, 4, 10): nothing. From
    # the A at 3 the B at 4 (9) is not below the C at 5 (4), but is below the C at 6 (10).
    text = (f"SELECT {strategy} * FROM S WHERE A AS a ; NOT B AS n ; C AS c "
            "FILTER n[open < c.open]")
    assert _run(text, OPENCEP) == [(3, 5)]
    # written in c's brackets, it is the same condition
    other = text.replace("n[open < c.open]", "c[open > n.open]")
    assert _run(other, OPENCEP) == [(3, 5)]


def test_opencep_keeps_the_smallest_open_of_the_gap() -> None:
    # a B at 9 then a B at 3 in one gap: the 3 decides (below the C's 4)
    events = [{"type": t, "open": o} for t, o in [("A", 0), ("B", 9), ("B", 3), ("C", 4),
                                                   ("B", 5), ("C", 6)]]
    text = "SELECT * FROM S WHERE A AS a ; NOT B AS n ; C AS c FILTER n[open < c.open]"
    assert _run(text, events) == []
    # after a positive B: with it at 1 the gap holds the B at 2 (3 < 4, < 6); at 2, the gap
    # to C at 3 is empty and to C at 5 holds B 5 (< 6); at 4, the gap to C at 5 is empty
    assert _run(text.replace("A AS a ;", "A AS a ; B ;"), events) == [(0, 2, 3), (0, 4, 5)]


def test_a_not_under_an_iteration_reads_every_iteration() -> None:
    # n[x > a.x] with the other variables as in the valuation at the FILTER: one iteration
    # (0, 2) has the B (2) above its only a (1): it fails; two iterations {0,2 | 3,4} read
    # both a's (1 and 2), and the B is not above 2: it passes. (3, 4) has an empty gap.
    events = [{"type": "A", "x": 1}, {"type": "B", "x": 2}, {"type": "C"},
              {"type": "A", "x": 2}, {"type": "C"}]
    text = "SELECT * FROM S WHERE (A AS a ; NOT B AS n ; C AS c)+ FILTER n[x > a.x]"
    assert sorted(_run(text, events)) == [(0, 2, 3, 4), (3, 4)]


def test_a_not_in_an_operand_of_and_reads_the_other_operand() -> None:
    # the gap (1..2) holds B x1; d at 2 (x1) makes it forbidden, d at 4 (x2) does not
    events = [{"type": "A"}, {"type": "B", "x": 1}, {"type": "D", "x": 1}, {"type": "C"},
              {"type": "D", "x": 2}]
    text = ("SELECT * FROM S WHERE (A AS a ; NOT B AS n ; C AS c) AND D AS d "
            "FILTER n[x = d.x]")
    assert _run(text, events) == [(0, 3, 4)]


def test_a_filter_inside_an_operand_of_and() -> None:
    # the D of the other operand may fall in the gap; the B at 5 (x 5 > 1) ends the runs
    # spanning it, the B at 2 (x 0) does not
    events = [{"type": t, "x": x} for t, x in [("A", 1), ("D", 0), ("B", 0), ("C", 0),
                                                ("A", 1), ("B", 5), ("D", 0), ("C", 0)]]
    text = ("SELECT * FROM S WHERE (A AS a ; NOT B AS n ; C AS c FILTER n[x > a.x]) AND D")
    assert _run(text, events) == [(0, 1, 3), (0, 3, 6)]


def test_one_beta_event_must_satisfy_the_conditions_of_every_filter() -> None:
    # B at 1 satisfies the inner condition (x 1 > 0) but not the outer (y 1 = 2); B at 2 the
    # outer but not the inner: neither forbids the match
    events = [{"type": "A", "x": 0}, {"type": "B", "x": 1, "y": 1},
              {"type": "B", "x": 0, "y": 2}, {"type": "C"}, {"type": "D", "y": 2}]
    text = ("SELECT * FROM S WHERE ((A AS a ; NOT B AS n ; C AS c) FILTER n[x > a.x]) ; "
            "D AS d FILTER n[y = d.y]")
    assert _run(text, events) == [(0, 3, 4)]
    events[2]["x"] = 1  # now B at 2 satisfies both
    assert _run(text, events) == []


def test_a_negated_variable_in_a_condition_with_prev() -> None:
    # a[x > PREV(x) AND x > n.x]: required of the a's with a previous one, n bound to the B;
    # a single a has none (vacuous: the B forbids), {0, 1} has 2 > 1 but not 2 > 2
    events = [{"type": "A", "x": 1}, {"type": "A", "x": 2}, {"type": "B", "x": 2},
              {"type": "C"}]
    text = ("SELECT * FROM S WHERE (A AS a)+ ; NOT B AS n ; C AS c "
            "FILTER a[x > PREV(x) AND x > n.x]")
    assert _run(text, events) == [(0, 1, 3)]
    events[2]["x"] = 1
    assert _run(text, events) == []


def test_explain_names_the_deferred_plan() -> None:
    text = "SELECT * FROM S WHERE A AS a ; NOT B AS n ; C AS c FILTER n[open < c.open]"
    assert "the gap's β events are recorded in the registers" in str(ceql.explain(text))
