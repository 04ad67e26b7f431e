"""Leading and trailing NOT (SEMANTICS.md, "Correlation, conjunction and negation"): targeted
property tests against the brute-force reference (queries built from shapes that often match,
on streams dense in the types they name), the evaluator's progress API (``advance``,
``close``), snapshots taken while matches wait, and the messages of what is refused."""

from __future__ import annotations

import pickle
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

_BODIES = ["A", "A ; C", "A : C", "(A AS x)+", "A ; NOT B ; C", "(A AND C)", "(A OR C) ; A",
           "A ; (C AS y)+"]
_LEADS = ["", "NOT B ; ", "NOT (B AS n) ; ", "NOT (B OR C) ; ", "NOT S>B ; "]
_TRAILS = ["", " ; NOT B", " ; NOT (B AS m)", " ; NOT (B OR A)"]
_WINDOWS = ["WITHIN {k} EVENTS", "WITHIN {k} [ts]", "WITHIN {k} SECONDS"]


@st.composite
def edge_queries(draw: st.DrawFn) -> str:
    lead = draw(st.sampled_from(_LEADS))
    trail = draw(st.sampled_from(_TRAILS))
    if not lead and not trail:
        lead = "NOT B ; "
    body = draw(st.sampled_from(_BODIES))
    where = f"{lead}{body}{trail}"
    conds = []
    strategy = draw(st.sampled_from(["ALL", "ANY", "NEXT", "MAX", "STRICT", "LAST", "LAST"]))
    # conditions that read the match: judged complex event by complex event (ALL/ANY/STRICT)
    between = strategy in ("ALL", "ANY", "STRICT")
    if "AS n" in lead:
        conds.append(f"n[a >= {draw(st.integers(0, 3))}]")
        if between and draw(st.booleans()):
            conds.append(draw(st.sampled_from(["n[a > A.a]", "n[a + 1 >= MAX(A.a)]",
                                               "n[a = x.a]" if "AS x" in body else "n[a = A.a]"])))
    if "AS m" in trail:
        conds.append(f"m[a < {draw(st.integers(0, 3))}]")
        if between and draw(st.booleans()):
            conds.append(draw(st.sampled_from(["m[a <= A.a]", "m[a != COUNT(A)]",
                                               "m[g = A.g]"])))
    if "AS x" in body and draw(st.booleans()):
        conds.append(f"x[a != {draw(st.integers(0, 3))}]")
    text = f"SELECT {strategy} * FROM S WHERE {where}"
    if conds:
        text += " FILTER " + " AND ".join(conds)
    if draw(st.booleans()):
        text += " PARTITION BY [g]"
    text += " " + draw(st.sampled_from(_WINDOWS)).format(k=draw(st.integers(0, 4)))
    if not trail and draw(st.booleans()):
        text += " CONSUME BY " + draw(st.sampled_from(["ANY", "PARTITION"]))
    if draw(st.booleans()):
        text += f" LIMIT {draw(st.integers(0, 2))}"
    return text


@st.composite
def dense_streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    n = draw(st.integers(0, 12))
    ts = 0
    out = []
    for _ in range(n):
        ts += draw(st.integers(0, 2))
        e: dict[str, Any] = {"type": draw(st.sampled_from("AABBCC")), "ts": ts,
                             "a": draw(st.integers(0, 3)), "g": draw(st.integers(0, 1))}
        if draw(st.integers(0, 4)) == 0:
            e["stream"] = "U"
        out.append(e)
    return out


def _pieces(n: int, data: st.DataObject) -> list[tuple[int, int]]:
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=4), label="cuts"))
    bounds = [0, *cuts, n]
    return list(pairwise(bounds))


def _batch(events: list[dict[str, Any]], names: list[str]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({k: [e.get(k) for e in events] for k in names},
                                      schema=pa.schema([(k, pa.string() if k in (
                                          "type", "stream") else pa.int64()) for k in names]))


@PROFILE
@given(edge_queries(), dense_streams(), st.data())
def test_edges_equal_reference_in_every_feed(text: str, events: list[dict[str, Any]],
                                             data: st.DataObject) -> None:
    note(text)
    for i, e in enumerate(events):
        note(f"{i}: {e}")
    q = ceql.compile(text)
    ast = parse(text)
    time = "ts" if "SECONDS" in text else None
    ref = reference_matches(ast, events, time=time)
    whole = keys(q.run(events, time=time))
    note(f"reference: {[tuple(m) for m in ref]}\nengine: {whole}")
    check_against_reference(whole, ref, ast.limit)
    names = ["type", "ts", "a", "g", "stream"]
    pieces = _pieces(len(events), data)
    for arrow in (False, True):
        ev = q.evaluator(time=time)
        fed: list[Key] = []
        for a, b in pieces:
            chunk = events[a:b]
            out = keys(ev.feed(_batch(chunk, names) if arrow else chunk))
            assert all(k[0] < b for k in out)
            fed += out
        fed += keys(ev.close())
        note(f"arrow={arrow}: {fed}")
        assert fed == whole


@PROFILE
@given(edge_queries(), dense_streams(), st.integers(0, 12))
def test_snapshot_while_matches_wait(text: str, events: list[dict[str, Any]], cut: int) -> None:
    q = ceql.compile(text)
    time = "ts" if "SECONDS" in text else None
    whole = keys(q.run(events, time=time))
    ev = q.evaluator(time=time)
    got = keys(ev.feed(events[:cut]))
    ev2 = pickle.loads(pickle.dumps(ev))
    got += keys(ev2.feed(events[cut:])) + keys(ev2.close())
    assert got == whole


# ---------------------------------------------------------------- worked examples

ORDERS = [
    {"type": "ORDER", "id": 1, "t": 0}, {"type": "PAY", "id": 1, "t": 5},
    {"type": "ORDER", "id": 2, "t": 10}, {"type": "ORDER", "id": 3, "t": 20},
    {"type": "PAY", "id": 3, "t": 60}, {"type": "PAY", "id": 2, "t": 45},
]
UNPAID = ("SELECT * FROM S WHERE ORDER ; NOT PAY PARTITION BY [id] WITHIN 30 SECONDS")


def test_order_without_payment_waits_for_its_window() -> None:
    rows = sorted(ORDERS, key=lambda e: e["t"])
    q = ceql.compile(UNPAID)
    ev = q.evaluator(time="t")
    assert ev.feed(rows[:4]) == []  # order 2 (t=10) is not final before t > 40
    out = ev.feed(rows[4:5])  # PAY 2 at 45: too late for order 2, whose window passed
    assert [(m.partition, m.start_time) for m in out] == [((2,), 10)]
    # PAY 3 at 60: after order 3's window (20 + 30), whose match that time makes final
    assert [(m.partition, m.start_time) for m in ev.feed(rows[5:])] == [((3,), 20)]
    assert ev.close() == []
    assert [(m.partition, m.start_time) for m in q.run(rows, time="t")] == [((2,), 10),
                                                                           ((3,), 20)]


def test_advance_releases_what_time_made_final() -> None:
    q = ceql.compile(UNPAID)
    ev = q.evaluator(time="t")
    assert ev.feed([{"type": "ORDER", "id": 7, "t": 100}]) == []
    assert ev.advance(130) == []  # a PAY at 130 would still count
    assert [m.start_time for m in ev.advance(131)] == [100]
    assert ev.close() == []
    with pytest.raises(ceql.CeqlInputError, match=r"feed\(\) after close\(\)"):
        ev.feed([{"type": "ORDER", "id": 8, "t": 200}])
    with pytest.raises(ceql.CeqlInputError, match=r"advance\(\) after close\(\)"):
        ev.advance(300)


def test_advance_is_a_promise_later_events_keep() -> None:
    ev = ceql.compile(UNPAID).evaluator(time="t")
    ev.advance(50)
    with pytest.raises(ceql.CeqlInputError, match="out of order"):
        ev.feed([{"type": "ORDER", "id": 1, "t": 40}])


def test_advance_with_a_window_in_events_is_refused() -> None:
    ev = ceql.compile("SELECT * FROM S WHERE A ; NOT B WITHIN 3 EVENTS").evaluator()
    with pytest.raises(ceql.CeqlValidationError) as e:
        ev.advance(5)
    assert str(e.value) == (
        "advance() moves time on, but this query's window counts events (WITHIN 3 EVENTS): "
        "its waiting matches become final with the partition's next events, or at close().")


def test_leading_not_no_quote_before_a_trade() -> None:
    q = ceql.compile("SELECT * FROM S WHERE NOT QUOTE ; TRADE WITHIN 5 SECONDS")
    rows = [{"type": "QUOTE", "t": 0}, {"type": "TRADE", "t": 3}, {"type": "TRADE", "t": 6},
            {"type": "QUOTE", "t": 7}, {"type": "TRADE", "t": 13}]
    assert [m.start_time for m in q.run(rows, time="t")] == [6, 13]


def test_last_with_a_trailing_not_and_conditions_between_events_chooses_among_those_that_pass(
) -> None:
    """A at 0, 1, 2 rising, B at 3: LAST prefers {1,2} at 2, which the B at 3 kills (within
    3 events of 1); {0,2} (0 + 3 = 3: also killed) — nothing at 2. At 1 {0,1}: the B at 3 is
    within 3 events of 0: killed too. At 4 (A, x = 9) LAST prefers {2,4}: no B after 4."""
    text = "SELECT LAST * FROM S WHERE A AS a ; A AS b ; NOT B FILTER b[x > a.x] WITHIN 3 EVENTS"
    events = [{"type": "A", "x": 1}, {"type": "A", "x": 2}, {"type": "A", "x": 3},
              {"type": "B"}, {"type": "A", "x": 9}]
    q = ceql.compile(text)
    assert q.automaton()[1].edge_rank
    check_against_reference(keys(q.run(events)), reference_matches(parse(text), events), None)
    assert [(m.end_position, m.positions) for m in q.run(events)] == [(4, (2, 4))]


def test_last_with_a_trailing_not_waits_and_chooses_among_those_that_pass() -> None:
    q = ceql.compile("SELECT LAST * FROM S WHERE A ; C ; NOT B WITHIN 2 EVENTS")
    rows = [{"type": t} for t in "AACB"]
    # ending at 2: {0,2} and {1,2}; the B at 3 is within 2 events of the start 1 only, so
    # LAST's choice among all, {1,2}, fails and {0,2} is output — once the input has passed
    # the window of {1,2} (here: at the end)
    ev = q.evaluator()
    assert ev.feed(rows[:3]) == []
    assert ev.feed(rows[3:]) == []
    assert [m.positions for m in ev.close()] == [(0, 2)]
    ev = q.evaluator()
    assert [m.positions for m in ev.feed([*rows, {"type": "D"}])] == [(0, 2)]
    # without the B, {1,2} passes: final once the input ends
    ev = q.evaluator()
    assert ev.feed(rows[:3]) == []
    assert [m.positions for m in ev.close()] == [(1, 2)]
    for events in (rows, rows[:3]):
        check_against_reference(keys(q.run(events)),
                                reference_matches(parse("SELECT LAST * FROM S WHERE A ; C ; "
                                                        "NOT B WITHIN 2 EVENTS"), events), None)


_AABAAC = [{"type": t} for t in "AABAAC"]
_XZYBZC = [{"type": t} for t in ["X", "Z", "Y", "B", "Z", "C"]]


@pytest.mark.parametrize(("text", "events", "expected"), [
    # ending at 5: {0,5} {1,5} {3,5} {4,5}; the B at 2 forbids the starts 3 and 4, so LAST
    # chooses {1,5} among the two that pass (its choice among all, {4,5}, fails)
    ("SELECT LAST * FROM S WHERE NOT B ; A ; C WITHIN 5 EVENTS", _AABAAC, [(5, 1, (1, 5))]),
    # {0,5} starts outside the window (it passes: no β can be within WITHIN of 5 before 0)
    # but loses to {1,5}
    ("SELECT LAST * FROM S WHERE NOT B ; A ; C WITHIN 4 EVENTS", _AABAAC, [(5, 1, (1, 5))]),
    # A+: {0,1,5} is the last that passes (every set with 3 or 4 starts after the B)
    ("SELECT LAST * FROM S WHERE NOT B ; A+ ; C WITHIN 5 EVENTS", _AABAAC,
     [(5, 0, (0, 1, 3, 4, 5))]),
    # ending at 5: {0,2,5} (outside 4 events), {1,5}, {4,5} (the B at 3 forbids it); LAST
    # prefers {0,2,5} to {1,5} (2 is the largest position in one only): it starts outside
    # the window, so nothing — not {1,5}
    ("SELECT LAST * FROM S WHERE NOT B ; ((X ; Y ; C) OR (Z ; C)) WITHIN 4 EVENTS", _XZYBZC,
     []),
    ("SELECT LAST * FROM S WHERE NOT B ; ((X ; Y ; C) OR (Z ; C)) WITHIN 5 EVENTS", _XZYBZC,
     [(5, 0, (0, 2, 5))]),
    # LAST compares D before the projection: {0,2,5} wins, then shows only its C
    ("SELECT LAST C FROM S WHERE NOT B ; ((X ; Y ; C) OR (Z ; C)) WITHIN 5 EVENTS", _XZYBZC,
     [(5, 0, (5,))]),
])
def test_last_with_a_leading_not_chooses_among_the_complex_events_that_pass(
        text: str, events: list[dict[str, Any]],
        expected: list[tuple[int, int, tuple[int, ...]]]) -> None:
    q = ceql.compile(text)
    assert [(m.end_position, m.start_position, m.positions) for m in q.run(events)] == expected
    check_against_reference(keys(q.run(events)), reference_matches(parse(text), events), None)
    batch = pa.RecordBatch.from_pydict({"type": [e["type"] for e in events]})
    ev = q.evaluator()
    assert keys(ev.feed(batch) + ev.close()) == keys(q.run(events))


def test_last_with_a_leading_not_per_partition_and_in_time() -> None:
    rows = [{"type": t, "k": k, "t": i} for i, (t, k) in enumerate(
        [("A", 1), ("A", 2), ("A", 1), ("B", 1), ("A", 2), ("A", 1), ("C", 1), ("C", 2)])]
    q = ceql.compile("SELECT LAST * FROM S WHERE NOT B ; A ; C PARTITION BY [k] "
                     "WITHIN 10 SECONDS")
    # k=1: A 0, A 2, B 3, A 5, C 6 — the B forbids the start 5: {2,6}; k=2: no B: {4,7}
    assert [m.positions for m in q.run(rows, time="t")] == [(2, 6), (4, 7)]


_READ_DROPPED = [{"type": "B", "x": 1}, {"type": "A", "x": 1}, {"type": "A", "x": 2},
                 {"type": "C", "x": 0}, {"type": "B", "x": 2}, {"type": "C", "x": 5}]


@pytest.mark.parametrize(("where", "expected"), [
    # trailing: the B at 4 (x = 2) forbids only what starts with the A at 2 and ends before it
    ("A AS a ; C AS c ; NOT B AS n", [(3, 1, (3,)), (5, 2, (5,)), (5, 1, (5,))]),
    # leading: the B at 0 (x = 1) forbids what starts with the A at 1 (within 5 events)
    ("NOT B AS n ; A AS a ; C AS c", [(3, 2, (3,)), (5, 2, (5,))]),
])
def test_an_edge_condition_reads_a_variable_the_select_list_leaves_out(
        where: str, expected: list[tuple[int, int, tuple[int, ...]]]) -> None:
    text = f"SELECT c FROM S WHERE {where} FILTER n[x = a.x] WITHIN 5 EVENTS"
    q = ceql.compile(text)
    got = [(m.end_position, m.start_position, m.positions) for m in q.run(_READ_DROPPED)]
    assert got == expected
    assert all(m.variables == {"c": (m.positions[0],)} for m in q.run(_READ_DROPPED))
    ref = reference_matches(parse(text), _READ_DROPPED)
    check_against_reference(keys(q.run(_READ_DROPPED)), ref, None)


def test_an_edge_projection_gives_each_output_once() -> None:
    """Two complex events that differ only in a left-out variable are one output (and LIMIT
    counts outputs)."""
    rows = [{"type": "A", "x": 1}, {"type": "A", "x": 1}, {"type": "C", "x": 0},
            {"type": "B", "x": 2}]
    text = ("SELECT c FROM S WHERE (A AS a)+ ; C AS c ; NOT B AS n FILTER n[x = a.x] "
            "WITHIN 5 EVENTS")
    got = [(m.end_position, m.start_position, m.positions)
           for m in ceql.compile(text).run(rows)]
    # starts 0 ({0,2}, {0,1,2}) and 1 ({1,2}); the B at 3 has x = 2: nothing is forbidden
    assert got == [(2, 1, (2,)), (2, 0, (2,))]
    limited = ceql.compile(text + " LIMIT 1").run(rows)
    assert [(m.start_position, m.positions) for m in limited] == [(1, (2,))]


def test_keep_events_on_waiting_matches() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; NOT B WITHIN 2 EVENTS")
    ev = q.evaluator(keep_events=True)
    rows = [{"type": "A", "k": i} for i in range(5)]
    out = ev.feed(rows) + ev.close()
    assert [m.events[0]["k"] for m in out] == [0, 1, 2, 3, 4]


_VALUES = st.one_of(st.integers(-2, 2), st.sampled_from([None, "x", 0.5, float("inf"),
                                                          float("-inf"), True]))


@PROFILE
@given(st.sampled_from(["n[a > A.a]", "n[a >= A.a]", "n[A.a > a]", "n[a < A.a]",
                        "n[A.a <= n.a]"]),
       st.sampled_from(["(A AS x)+ ; NOT (B AS n)", "NOT (B AS n) ; A ; (A AS y)+",
                        "A ; NOT (B AS n)"]),
       st.lists(st.tuples(st.sampled_from("AABBC"), _VALUES), max_size=10))
def test_one_comparison_conditions_on_any_values(cond: str, where: str,
                                                 rows: list[tuple[str, Any]]) -> None:
    """The one-comparison check (extremes of a range) against the reference on NULLs,
    strings, booleans and infinities."""
    text = f"SELECT * FROM S WHERE {where} FILTER {cond} WITHIN 3 EVENTS"
    events = [{"type": t, "a": v} for t, v in rows]
    note(text)
    note(str(events))
    ref = reference_matches(parse(text), events)
    check_against_reference(keys(ceql.compile(text).run(events)), ref, None)


def test_explain_says_how_each_not_is_checked() -> None:
    text = ("SELECT * FROM S WHERE NOT D ; A AS a ; NOT (B AS n) ; C ; NOT E AS m "
            "FILTER n[v > a.v] AND m[w < a.w] WITHIN 5 EVENTS")
    shown = str(ceql.explain(text)).split("negation:\n")[1].splitlines()
    assert shown[5].startswith("lazy evaluation: not used")
    assert shown[:5] == [
        "  NOT between two elements: first chance — the gap's self-loop lets only events that "
        "are not β by, so a β event ends the runs waiting there",
        "    conditions reading earlier events (kept in the registers): a β event ends only the "
        "runs for which they hold (found through an index by the earlier value, then checked)",
        "  leading NOT: per complex event — the β events of its partition are kept within the "
        "window; it passes when none lies before its start within WITHIN of its end",
        "  trailing NOT: per complex event — it waits until the input passes its start + WITHIN "
        "(a later event, Evaluator.advance or close), unless a β event of its partition comes "
        "first",
        "    m[w < a.w] (line 1, column 92) — read on each complex event's own events",
    ]
    assert "negation:" not in str(ceql.explain("SELECT * FROM S WHERE A ; B"))


# ---------------------------------------------------------------- the golden cases

def test_golden_any_order_login_from_a_new_device_and_password_change() -> None:
    q = ceql.compile("SELECT * FROM S WHERE (LOGIN AS l AND PWCHANGE AS p) FILTER l[new = 1] "
                     "PARTITION BY [user] WITHIN 1 HOURS")
    rows = [{"type": "PWCHANGE", "user": "u1", "new": 0, "t": 0},
            {"type": "LOGIN", "user": "u1", "new": 1, "t": 1200},       # after the change
            {"type": "LOGIN", "user": "u2", "new": 1, "t": 1300},
            {"type": "LOGIN", "user": "u2", "new": 0, "t": 1400},       # a known device
            {"type": "PWCHANGE", "user": "u2", "new": 0, "t": 2000},    # after the login
            {"type": "PWCHANGE", "user": "u3", "new": 0, "t": 2100},
            {"type": "LOGIN", "user": "u3", "new": 1, "t": 6000}]       # too late
    got = [(m.partition, m.positions) for m in q.run(rows, time="t")]
    assert got == [(("u1",), (0, 1)), (("u2",), (2, 4))]


def test_golden_no_quote_update_between_two_trades() -> None:
    q = ceql.compile("SELECT * FROM S WHERE TRADE AS a ; NOT QUOTE ; TRADE AS b "
                     "PARTITION BY [sym] WITHIN 10 SECONDS")
    rows = [{"type": t, "sym": s, "t": i} for i, (t, s) in enumerate(
        [("TRADE", "X"), ("QUOTE", "Y"), ("TRADE", "X"), ("QUOTE", "X"), ("TRADE", "X"),
         ("TRADE", "Y")])]
    # X: 0 and 2 have only a quote of Y between them; 2 and 4 have a quote of X; 0 and 4 too
    assert [m.positions for m in q.run(rows, time="t")] == [(0, 2)]


_NEXT_READS = [{"type": "B", "x": 1}, {"type": "A", "x": 1}, {"type": "A", "x": 2},
               {"type": "C", "x": 0}]
_NEXT_OLD = [{"type": "A", "x": 1}, {"type": "B", "x": 1}, {"type": "A", "x": 2},
             {"type": "C", "x": 0}]


@pytest.mark.parametrize(("text", "events", "expected"), [
    # ending at 3: {1,3} (the B at 0 has x = a.x: forbidden) and {2,3} (it passes); NEXT's
    # choice among all, {1,3}, fails, so NEXT chooses {2,3}
    ("SELECT NEXT * FROM S WHERE NOT B AS n ; A AS a ; C AS c FILTER n[x = a.x] "
     "WITHIN 10 EVENTS", _NEXT_READS, [(3, 2, (2, 3))]),
    # NEXT compares D before the projection
    ("SELECT NEXT c FROM S WHERE NOT B AS n ; A AS a ; C AS c FILTER n[x = a.x] "
     "WITHIN 10 EVENTS", _NEXT_READS, [(3, 2, (3,))]),
    # the other way round: {1,3} passes and is NEXT's choice
    ("SELECT NEXT * FROM S WHERE NOT B AS n ; A AS a ; C AS c FILTER n[x != a.x] "
     "WITHIN 10 EVENTS", _NEXT_READS, [(3, 1, (1, 3))]),
    # {0,3} starts outside 2 events (and passes: no β is within the window before 0), so
    # NEXT chooses it and WITHIN drops it — not {2,3}
    ("SELECT NEXT * FROM S WHERE NOT B AS n ; A AS a ; C AS c FILTER n[x = a.x] "
     "WITHIN 2 EVENTS", _NEXT_OLD, []),
    ("SELECT NEXT * FROM S WHERE NOT B AS n ; A AS a ; C AS c FILTER n[x = a.x] "
     "WITHIN 3 EVENTS", _NEXT_OLD, [(3, 0, (0, 3))]),
])
def test_next_with_a_leading_not_reading_the_match_chooses_among_those_that_pass(
        text: str, events: list[dict[str, Any]],
        expected: list[tuple[int, int, tuple[int, ...]]]) -> None:
    q = ceql.compile(text)
    assert [(m.end_position, m.start_position, m.positions) for m in q.run(events)] == expected
    check_against_reference(keys(q.run(events)), reference_matches(parse(text), events), None)
    batch = pa.RecordBatch.from_pylist(events)
    ev = q.evaluator()
    assert keys(ev.feed(batch) + ev.close()) == keys(q.run(events))
    ev = q.evaluator()
    assert keys([m for e in events for m in ev.feed([e])] + ev.close()) == keys(q.run(events))


def test_next_with_a_leading_not_reading_an_iterated_variable_chooses_after_the_check() -> None:
    """``a`` under ``+``: the choice is made among those that pass (``edge_rank``). At 3 NEXT
    prefers {0,2,3} (earliest start, no B before it); at 6 it prefers {0,2,4,5,6}, out of
    the window: it passes, is the choice, and WITHIN drops it."""
    text = "SELECT NEXT * FROM S WHERE NOT B AS n ; (A AS a)+ ; C FILTER n[x = a.x] WITHIN 3 EVENTS"
    events = [{"type": "A", "x": 1}, {"type": "B", "x": 1}, {"type": "A", "x": 1},
              {"type": "C"}, {"type": "A", "x": 2}, {"type": "A", "x": 1}, {"type": "C"}]
    q = ceql.compile(text)
    assert q.automaton()[1].edge_rank
    check_against_reference(keys(q.run(events)), reference_matches(parse(text), events), None)
    assert [(m.end_position, m.positions) for m in q.run(events)] == [(3, (0, 2, 3))]


def test_explain_says_when_the_strategy_chooses_after_the_not() -> None:
    text = ("SELECT MAX * FROM S WHERE NOT H AS n ; T AS x ; T+ ; H AS y "
            "FILTER n[value > x.value] WITHIN 10 EVENTS")
    shown = str(ceql.explain(text))
    assert "strategy chooses among those that pass" in shown
    assert "the variables the NOT reads (x)" in shown
    assert "chooses among those that pass" not in str(ceql.explain(
        "SELECT MAX * FROM S WHERE NOT H AS n ; T AS x ; T+ ; H AS y "
        "FILTER n[value > 1] WITHIN 10 EVENTS"))
