"""A NOT between two elements whose conditions read earlier events of the match
(``A AS a ; NOT B AS n ; C FILTER n[price > a.price]``): the runs waiting in the gap hold what
the conditions read, and a β event ends those for which they all hold. Targeted property tests
against the brute-force reference (every strategy, windows, partitions, LIMIT, CONSUME BY, row
and Arrow feeds cut anywhere), worked examples, and what is refused, with its message."""

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


@pytest.mark.parametrize(("text", "message"), [
    ("SELECT * FROM S WHERE A AS a ; NOT B AS n ; C AS c FILTER n[x > c.x]",
     "n[…] reads c, whose events do not all come before the NOT: not evaluated yet; a "
     "condition on a negated event may read the variables of the elements before it (those a "
     "run waiting in the gap holds) (line 1, column 59)"),
    ("SELECT * FROM S WHERE (A AS a ; NOT B AS n ; C)+ FILTER n[x > a.x]",
     "n[…] reads other events, and its NOT stands under an iteration or a conjunction inside "
     "the FILTER: not evaluated yet; put the FILTER inside the iteration or the operand of "
     "AND (line 1, column 57)"),
    ("SELECT * FROM S WHERE (A AS a ; NOT B AS n ; C FILTER n[x > a.x]) AND D",
     "n[…] reads other events, and its NOT stands inside an operand of AND: not evaluated "
     "yet; conditions on that negated event may read only its own attributes there "
     "(line 1, column 55)"),
])
def test_what_is_not_evaluated_yet(text: str, message: str) -> None:
    with pytest.raises(ceql.CeqlValidationError) as e:
        ceql.compile(text).automaton()
    assert str(e.value) == message
