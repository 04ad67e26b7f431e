"""Query.variables: the SELECT list, or the variables in pattern order without a type name
that only repeats an alias (output_variables)."""

from __future__ import annotations

import pytest

import ceql
from ceql.analysis import output_variables
from ceql.frontends.ceql import parse
from ceql.ir.walks import variable_leaves


@pytest.mark.parametrize(("where", "expected"), [
    ("SELL AS s", ("s",)),
    ("SELL AS s ; SELL", ("SELL", "s")),
    ("SELL AS msft ; SELL AS intel ; SELL AS amzn", ("SELL", "msft", "intel", "amzn")),
    ("login AS l ; cart AS c ; purchase AS p", ("l", "c", "p")),
    ("purchase AS p ; login AS l", ("p", "l")),
    ("(SELL OR BUY) AS t", ("SELL", "BUY", "t")),
    ("(A ; B) AS x ; C", ("A", "B", "x", "C")),
    ("A AS B ; B", ("A", "B")),
    ("(A AS x) AS y", ("x", "y")),
    ("S>A AS a ; T>A", ("A", "a")),
    ("(H AS h ; (T AS t)+ ; H AS k) FILTER t[id = 1]", ("H", "h", "t", "k")),
    ("Z ; Y ; X", ("Z", "Y", "X")),
])
def test_pattern_order_without_repeated_type_names(where: str, expected: tuple[str, ...]) -> None:
    text = f"SELECT * FROM S, T WHERE {where} WITHIN 5 EVENTS"
    assert output_variables(parse(text)) == expected
    assert ceql.compile(text).variables == expected


def test_select_list_is_kept_as_written() -> None:
    q = ceql.compile("SELECT c, SELL FROM S WHERE SELL AS a ; BUY AS c WITHIN 5 EVENTS")
    assert q.variables == ("c", "SELL")
    assert ceql.compile("SELECT NONE FROM S WHERE A ; B WITHIN 5 EVENTS").variables == ()


def test_the_dropped_type_name_holds_the_alias_events() -> None:
    # the rule's premise: a type name left out binds exactly what the alias binds
    q = ceql.compile("SELECT * FROM S WHERE (SELL AS s ; BUY) ; (SELL AS s)+ WITHIN 9 EVENTS")
    assert q.variables == ("s", "BUY")
    events = [{"type": t} for t in "SELL BUY SELL SELL".split()]
    # (matches report the same variables: SELL is not among them)
    ms = list(q.run(events))
    assert ms and all(list(m.variables) == ["s", "BUY"] for m in ms)
    full = ceql.compile("SELECT s, SELL, BUY FROM S WHERE (SELL AS s ; BUY) ; (SELL AS s)+ "
                        "WITHIN 9 EVENTS")
    for m in full.run(events):
        assert m.variables["SELL"] == m.variables["s"]


def test_variable_leaves() -> None:
    where = parse("SELECT * FROM S WHERE (A ; B) AS x ; A AS y").where
    assert variable_leaves(where) == {"A": frozenset({0, 2}), "B": frozenset({1}),
                                      "x": frozenset({0, 1}), "y": frozenset({2})}
    assert list(variable_leaves(where)) == ["A", "B", "x", "y"]
