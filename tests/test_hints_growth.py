"""A query with neither WITHIN nor PARTITION BY whose output can grow faster than its input
warns at compile time with the growth (output_growth), and the bounds it states hold."""

from __future__ import annotations

import math
import warnings

import pytest

import ceql
from ceql.analysis import output_growth
from ceql.errors import UnboundedOutputWarning
from ceql.frontends.ceql import parse

CAPS = ("To cap the output: WITHIN (e.g. WITHIN 10 SECONDS or WITHIN 100 EVENTS), PARTITION BY "
        "[key] (matches within one key), SELECT NEXT * or SELECT LAST * (at most one match per "
        "event), LIMIT n (at most n matches per event) or CONSUME BY ANY (later matches start "
        "after the last one's end).")


def test_warning_for_a_sequence_under_all() -> None:
    with pytest.warns(UnboundedOutputWarning) as record:
        ceql.compile("SELECT * FROM S WHERE A ; B")
    assert len(record) == 1
    assert str(record[0].message) == (
        "This query has neither WITHIN nor PARTITION BY: under SELECT ALL (the default) it can "
        "give up to n²/4 matches over n events (each match picks 2 of the events freely), and a "
        "match may start at any earlier event. " + CAPS)
    assert record[0].filename == __file__


def test_warning_for_an_iteration() -> None:
    with pytest.warns(UnboundedOutputWarning) as record:
        ceql.compile("SELECT MAX * FROM S WHERE (A ; B)+")
    assert str(record[0].message) == (
        "This query has neither WITHIN nor PARTITION BY: under SELECT MAX it can give "
        "exponentially many matches over n events (an iteration (+) can take any subset of its "
        "events), and a match may start at any earlier event. " + CAPS)


@pytest.mark.parametrize("text", [
    "SELECT * FROM S WHERE A ; B WITHIN 10 EVENTS",
    "SELECT * FROM S WHERE A ; B PARTITION BY [id]",
    "SELECT NEXT * FROM S WHERE A+ ; B",
    "SELECT LAST * FROM S WHERE A ; B",
    "SELECT * FROM S WHERE A ; B LIMIT 1",
    "SELECT STRICT * FROM S WHERE A ; B ; C",
    "SELECT MAX * FROM S WHERE A+",
    "SELECT MAX * FROM S WHERE A+ ; B",
    "SELECT * FROM S WHERE A : B",
    "SELECT * FROM S WHERE A OR B",
    "SELECT * FROM S WHERE A ; B CONSUME BY ANY",
])
def test_no_warning_where_growth_is_at_most_linear(text: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ceql.compile(text)


def test_warned_on_every_compile() -> None:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        ceql.compile("SELECT * FROM S WHERE A ; B ; A")
        ceql.compile("SELECT * FROM S WHERE A ; B ; A")
    assert [w.category for w in record] == [UnboundedOutputWarning] * 2


@pytest.mark.parametrize(("text", "degree", "bound"), [
    ("SELECT * FROM S WHERE A ; B", 2, "n²/4"),
    ("SELECT * FROM S WHERE A ; A", 2, "n²/2"),
    ("SELECT * FROM S WHERE A ; B ; C", 3, "n³/27"),
    ("SELECT * FROM S WHERE (A OR B) ; C", 2, "n²/4"),
    ("SELECT * FROM S WHERE (A ; B) : C", 2, "on the order of n²"),
    ("SELECT * FROM S WHERE A :+", 2, "on the order of n²"),
    ("SELECT * FROM S WHERE A+", None, "exponentially many"),
    ("SELECT * FROM S WHERE A : B+", None, "exponentially many"),
    ("SELECT STRICT * FROM S WHERE A+", 2, "n²/2"),
    ("SELECT NONE FROM S WHERE A+", 2, "n²/2"),
    ("SELECT MAX * FROM S WHERE B+ ; A+", 2, "on the order of n²"),
    ("SELECT MAX * FROM S WHERE A ; B+", 2, "on the order of n²"),
    ("SELECT * FROM S WHERE A ; B ; C CONSUME BY PARTITION", 2, "on the order of n²"),
    ("SELECT * FROM S WHERE A : B", 1, "n"),
    ("SELECT * FROM S WHERE A ; B LIMIT 3", 1, "3n"),
])
def test_output_growth(text: str, degree: int | None, bound: str) -> None:
    growth = output_growth(parse(text))
    assert (growth.degree, growth.bound) == (degree, bound)
    assert growth.linear == (degree is not None and degree <= 1)


def _count(text: str, types: list[str]) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = ceql.compile(text)
    return sum(1 for _ in q.run({"type": t} for t in types))


def test_the_bounds_are_reached() -> None:
    n = 12
    assert _count("SELECT * FROM S WHERE A ; B", ["A"] * 6 + ["B"] * 6) == n * n // 4
    assert _count("SELECT * FROM S WHERE A ; A", ["A"] * n) == math.comb(n, 2) <= n * n // 2
    assert _count("SELECT * FROM S WHERE A ; B ; C", ["A"] * 4 + ["B"] * 4 + ["C"] * 4) \
        == n ** 3 // 27
    assert _count("SELECT * FROM S WHERE A+", ["A"] * n) == 2 ** n - 1
    assert _count("SELECT STRICT * FROM S WHERE A+", ["A"] * n) == n * (n + 1) // 2
    # and the linear ones stay linear
    assert _count("SELECT MAX * FROM S WHERE A+", ["A"] * n) == n
    assert _count("SELECT MAX * FROM S WHERE A+ ; B", ["A", "B"] * 6) == 6
    assert _count("SELECT * FROM S WHERE A ; B CONSUME BY ANY", ["A"] * 6 + ["B"] * 6) == 6
