"""Lazy evaluation: the mandatory elements of a formula, the region computation, rows held
across batches, the planner's refusals with their reasons, the option, the report and
``explain``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import ceql
from ceql.automata import CEA, Transition
from ceql.automata.mandatory import MAX_LEAVES, Mandatory
from ceql.display import mandatory_lines
from ceql.frontends.ceql import parse
from ceql.predicates import GTrue
from ceql.runtime.lazy import LazyReport, plan_lazy, region

# ---------------------------------------------------------------- mandatory elements


def elements(text: str) -> list[str]:
    """Each mandatory element of ``text`` as ``explain`` lists it (label: guard)."""
    atoms, cea = ceql.compile(text).automaton()
    return [line.strip() for line in mandatory_lines(cea.mandatory, atoms)]


def test_elements_of_a_sequence_carry_their_filters() -> None:
    assert elements("SELECT * FROM S WHERE SELL AS a ; BUY AS b ; BUY AS c "
                    "FILTER a[name = 'AAPL'] AND c[volume >= 5000] WITHIN 2 SECONDS") == [
        "a: type = 'SELL' AND name = 'AAPL'", "b: type = 'BUY'",
        "c: type = 'BUY' AND volume >= 5000"]


def test_elements_under_or_and_plus_and_not() -> None:
    # NOT C is no element; x's and y's atoms stand under OR, so neither is required
    assert elements("SELECT * FROM S WHERE (A AS x OR B AS y) ; NOT C ; (D+ AND E) "
                    "FILTER x[a > 1] OR y[a < 1] WITHIN 2 SECONDS") == [
        "x OR y: type = 'A' OR type = 'B'", "D: type = 'D'", "E: type = 'E'"]


def test_filter_or_keeps_what_both_sides_require() -> None:
    assert elements("SELECT * FROM S WHERE (A AS x ; B AS y) AS z "
                    "FILTER (x[a > 1] AND y[b = 2]) OR x[a < 0] OR z[c = 1] "
                    "WITHIN 2 SECONDS") == [
        "x: type = 'A' AND (a > 1 OR a < 0 OR c = 1)", "y: type = 'B'"]  # x[a < 0]: y free
    assert elements("SELECT * FROM S WHERE (A ; B) AS z FILTER z[a = 1] WITHIN 2 SECONDS") == [
        "z: type = 'A' AND a = 1", "z: type = 'B' AND a = 1"]


def test_elements_of_alternatives_are_their_unions() -> None:
    assert elements("SELECT * FROM S WHERE (A ; B) OR (C AND D) WITHIN 2 SECONDS") == [
        "A OR C: type = 'A' OR type = 'C'", "A OR D: type = 'A' OR type = 'D'",
        "B OR C: type = 'B' OR type = 'C'", "B OR D: type = 'B' OR type = 'D'"]


def test_a_negated_variable_is_no_element_and_adds_no_condition() -> None:
    assert elements("SELECT * FROM S WHERE A AS x ; NOT B AS n ; C "
                    "FILTER n[a = 1] AND x[b = 1] WITHIN 2 SECONDS") == [
        "x: type = 'A' AND b = 1", "C: type = 'C'"]


def test_too_many_leaves_give_no_element() -> None:
    ors = " OR ".join(f"T{k}" for k in range(MAX_LEAVES + 2))
    assert elements(f"SELECT * FROM S WHERE {ors} WITHIN 1 SECONDS") == []
    plan = ceql.compile(f"SELECT * FROM S WHERE {ors} WITHIN 1 SECONDS").lazy_plan()
    assert not plan.eligible and "no event condition" in plan.reason


# ---------------------------------------------------------------- regions


def test_region_checks_rarest_first_and_holds_the_tail() -> None:
    keys = np.arange(10)
    relevant = np.ones(10, dtype=bool)
    frequent = np.ones(10, dtype=bool)
    rare = np.zeros(10, dtype=bool)
    rare[5] = True
    r = region(keys, relevant, [frequent, rare], [None, None], 1, 9)
    assert r.order == (1, 0)
    assert r.feed.tolist() == [4, 5, 6]  # within 1 of the rare row; 6 is the last that can end
    assert r.held.tolist() == [8, 9]  # a later rare row may still come within 1


def test_region_uses_the_last_key_of_earlier_batches() -> None:
    keys = np.array([10, 11, 12, 20])
    ones = np.ones(4, dtype=bool)
    rare = np.zeros(4, dtype=bool)
    r = region(keys, ones, [ones, rare], [None, 9], 2, 20)
    assert r.feed.tolist() == [0, 1] and r.held.tolist() == [3]


def test_region_drops_rows_whose_matches_would_end_at_a_row_seen_already() -> None:
    # A at 0, B at 1, C at 2, eps 1: B is near all three but no row can end a match
    # (A and C are 2 apart); a later irrelevant row at 5 moves the horizon past B
    keys = np.array([0, 1, 2, 5])
    relevant = np.array([True, True, True, False])
    a, b, c = (np.array([k == i for k in range(4)]) for i in range(3))
    r = region(keys, relevant, [a, b, c], [None, None, None], 1, 5)
    assert r.feed.size == 0 and r.held.size == 0


def test_region_widens_float_windows_as_the_engine_rounds() -> None:
    # 15.3 - 6.8 <= 8.5 in floats, while 15.3 - 8.5 > 6.8
    assert 15.3 - 6.8 <= 8.5 and 15.3 - 8.5 > 6.8
    keys = np.array([6.8, 15.3])
    first, last = np.array([True, False]), np.array([False, True])
    r = region(keys, np.ones(2, dtype=bool), [first, last], [None, None], 8.5, 100.0)
    assert r.feed.tolist() == [0, 1]
    q = ceql.compile("SELECT * FROM S WHERE A ; C WITHIN 8.5 [ts]")
    table = pa.table({"type": ["A", "C"], "ts": [6.8, 15.3]})
    assert [m.positions for m in q.evaluator(lazy=True).feed(table)] == [(0, 1)]


def test_region_with_no_relevant_row() -> None:
    keys = np.arange(3)
    none = np.zeros(3, dtype=bool)
    r = region(keys, none, [none], [None], 1, 2)
    assert r.feed.size == 0 and r.held.size == 0


# ---------------------------------------------------------------- held rows

L = "SELECT * FROM S WHERE A AS x ; B AS y ; C AS z WITHIN 3 SECONDS"


def stream(types: str, start: int = 0) -> pa.Table:
    return pa.table({"type": list(types), "ts": list(range(start, start + len(types)))})


def test_rows_held_at_a_batch_end_meet_the_rare_row_of_the_next() -> None:
    ev = ceql.compile(L).evaluator(time="ts", lazy=True)
    assert ev.feed(stream("DDDDDDAB")) == []
    report = ev.lazy_report()
    assert report is not None and report.held == 2 and report.fed == 0
    assert ev.oldest_live_position() <= 6  # the held A is still to be fed
    out = ev.feed(stream("C", 8))
    assert [m.positions for m in out] == [(6, 7, 8)]
    report = ev.lazy_report()
    assert report is not None and report.fed == 3 and report.held == 0


def test_held_rows_are_dropped_once_the_window_has_passed() -> None:
    ev = ceql.compile(L).evaluator(time="ts", lazy=True)
    ev.feed(stream("DDDDDDAB"))
    assert ev.feed(stream("DDDDC", 8)) == []  # C at 12: A at 6 is 6 seconds before
    report = ev.lazy_report()
    # the A and B are dropped; the C is held (regions ignore the order of the elements)
    assert report is not None and report.fed == 0 and report.held == 1
    assert ev.oldest_live_position() == 12


def test_held_rows_go_first_when_rows_come_one_by_one() -> None:
    q = ceql.compile(L)
    ev = q.evaluator(time="ts", lazy=True)
    ev.feed(stream("DDDDDDAB"))
    out = ev.feed([{"type": "C", "ts": 8}])
    assert [m.positions for m in out] == [(6, 7, 8)]


def test_a_snapshot_keeps_held_rows() -> None:
    q = ceql.compile(L)
    ev = q.evaluator(time="ts", lazy=True)
    ev.feed(stream("DDDDDDAB"))
    again = q.restore(ev.snapshot())
    assert [m.positions for m in again.feed(stream("C", 8))] == [(6, 7, 8)]


def test_the_planner_feeds_a_busy_batch_whole() -> None:
    ev = ceql.compile(L).evaluator(time="ts")
    ev.feed(stream("ABCABCABCABC"))
    report = ev.lazy_report()
    assert report is not None and not report.lazy and report.fed == report.rows
    forced = ceql.compile(L).evaluator(time="ts", lazy=True)
    forced.feed(stream("ABCABCABCABC"))
    report = forced.lazy_report()
    assert report is not None and report.lazy and report.order == ("x", "y", "z")


def test_report_orders_elements_by_frequency() -> None:
    ev = ceql.compile(L).evaluator(time="ts", lazy=True)
    ev.feed(stream("AAAABBC" + "D" * 20))
    report = ev.lazy_report()
    assert isinstance(report, LazyReport)
    assert report.order == ("z", "y", "x") and report.counts == (1, 2, 4)
    assert 0 < report.active < 0.5


# ---------------------------------------------------------------- the planner and the option


@pytest.mark.parametrize(("text", "reason"), [
    ("SELECT * FROM S WHERE A ; B", "no WITHIN"),
    ("SELECT * FROM S WHERE A ; B WITHIN 3 EVENTS", "WITHIN n EVENTS"),
    ("SELECT NEXT * FROM S WHERE A ; B WITHIN 3 SECONDS", "SELECT NEXT"),
    ("SELECT STRICT * FROM S WHERE A ; B WITHIN 3 SECONDS", "STRICT counts"),
    ("SELECT * FROM S WHERE A : B WITHIN 3 SECONDS", "contiguity"),
    ("SELECT * FROM S WHERE A AS x ; B AS y FILTER y[a > x.a] WITHIN 3 SECONDS",
     "conditions between events"),
])
def test_the_planner_says_why_not(text: str, reason: str) -> None:
    q = ceql.compile(text)
    plan = q.lazy_plan()
    assert not plan.eligible and reason in plan.reason
    assert q.evaluator(time="ts", lazy=True).lazy_report() is None
    assert f"lazy evaluation: not used ({plan.reason})" in ceql.explain(q)


def test_the_planner_refuses_a_leading_or_trailing_not() -> None:
    cea = ceql.compile("SELECT * FROM S WHERE A ; C WITHIN 1 SECONDS").cea()
    for text in ("SELECT * FROM S WHERE NOT B ; A ; C WITHIN 1 SECONDS",
                 "SELECT * FROM S WHERE A ; C ; NOT B WITHIN 1 SECONDS"):
        plan = plan_lazy(parse(text), cea)
        assert not plan.eligible and plan.reason == "a leading or trailing NOT"


def test_the_planner_refuses_a_state_that_cannot_skip() -> None:
    tr = (Transition(0, GTrue(), True, True, frozenset({"A"}), 1),
          Transition(1, GTrue(), True, True, frozenset({"B"}), 2))
    cea = CEA(3, frozenset({2}), tr, mandatory=(Mandatory(GTrue(), "A"),))
    plan = plan_lazy(parse("SELECT * FROM S WHERE A ; B WITHIN 1 SECONDS"), cea)
    assert not plan.eligible and "cannot skip" in plan.reason


def test_lazy_option_is_checked() -> None:
    q = ceql.compile(L)
    with pytest.raises(ceql.CeqlTypeError, match="lazy must be True, False or None"):
        q.evaluator(time="ts", lazy="yes")  # type: ignore[arg-type]
    assert q.evaluator(time="ts", lazy=False).lazy_report() is None


def test_explain_shows_the_lazy_plan() -> None:
    text = str(ceql.explain("SELECT * FROM S WHERE SELL AS a ; BUY AS c "
                            "FILTER a[name = 'AAPL'] AND c[name = 'QQQ'] WITHIN 2 SECONDS"))
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("lazy evaluation"))
    assert "rarest first" in lines[at]
    assert lines[at + 1:at + 3] == ["  a: type = 'SELL' AND name = 'AAPL'",
                                    "  c: type = 'BUY' AND name = 'QQQ'"]


@pytest.mark.parametrize("eps", [float("inf"), 10**400, 10**20])
def test_region_with_windows_beyond_the_keys(eps: Any) -> None:
    keys = np.array([1.0, 1e300]) if eps != 10**20 else np.array([1, 10**18])
    first, last = np.array([True, False]), np.array([False, True])
    r = region(keys, np.ones(2, dtype=bool), [first, last], [None, None], eps, keys[-1])
    assert r.feed.tolist() == [0, 1]


def test_the_planner_feeds_a_sparse_batch_whole() -> None:
    q = ceql.compile(L)
    ev = q.evaluator(time="ts")
    ev.feed(stream("A" + "D" * 99))
    report = ev.lazy_report()
    assert report is not None and not report.lazy and report.relevant == 1
    forced = q.evaluator(time="ts", lazy=True)
    forced.feed(stream("A" + "D" * 99))
    report = forced.lazy_report()
    assert report is not None and report.lazy and report.fed == 0 and report.relevant == 1
