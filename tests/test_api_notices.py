"""Answers that are probably not the ones meant are warned of (issue 10): an event type or stream
of the query that no event carries (:class:`ceql.UnseenNameWarning`), and events that compare
a string with a number (:class:`ceql.ValueTypeWarning`)."""

from __future__ import annotations

import pickle
import warnings
from typing import Any

import pyarrow as pa
import pytest

import ceql
from ceql.runtime import NameSet, unseen_names_message
from ceql.runtime.notices import NAMES_CAP

FUNNEL = "SELECT * FROM S WHERE login AS l ; purchse AS p WITHIN 10 EVENTS"
CLICKS = [{"type": "login"}, {"type": "cart"}, {"type": "purchase"}]


def caught(fn: Any, kind: type[Warning] = ceql.ValueTypeWarning) -> list[warnings.WarningMessage]:
    """The warnings of ``kind`` that ``fn`` issues."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        fn()
    return [w for w in got if w.category is kind]


# ---------------------------------------------------------------------- names never seen

def test_run_warns_of_a_misspelt_type_at_the_callers_line() -> None:
    q = ceql.compile(FUNNEL)
    [w] = caught(lambda: list(q.run(CLICKS)), ceql.UnseenNameWarning)
    assert w.category is ceql.UnseenNameWarning
    assert str(w.message) == (
        "The query's event type 'purchse' never occurred in the 3 events; event types seen: "
        "'cart', 'login', 'purchase' (did you mean 'purchase'?). A misspelt name matches "
        "nothing: check it against the data.")
    assert w.filename == __file__


def test_no_warning_when_every_name_occurs_or_nothing_was_read() -> None:
    q = ceql.compile("SELECT * FROM S WHERE login ; cart WITHIN 10 EVENTS")
    assert caught(lambda: list(q.run(CLICKS)), ceql.UnseenNameWarning) == []
    assert caught(lambda: list(q.run([])), ceql.UnseenNameWarning) == []
    assert caught(lambda: list(ceql.compile(FUNNEL).run([])), ceql.UnseenNameWarning) == []


def test_the_evaluator_says_what_it_saw_rows_and_arrow() -> None:
    q = ceql.compile(FUNNEL)
    rows = q.evaluator()
    rows.feed(CLICKS)
    assert rows.unseen() == NameSet(("purchse",), ("S",))
    assert rows.seen() == NameSet(("cart", "login", "purchase"), ())
    for table in (pa.Table.from_pylist(CLICKS),
                  pa.table({"type": pa.array(["login", "cart", "purchase"]).dictionary_encode()})):
        ev = q.evaluator()
        ev.feed(table)
        assert (ev.unseen(), ev.seen()) == (rows.unseen(), rows.seen())


def test_looking_stops_once_every_name_occurred() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B WITHIN 10 EVENTS")
    ev = q.evaluator()
    ev.feed([{"type": "A"}, {"type": "C"}])
    assert ev.unseen().types == ("B",)
    ev.feed([{"type": "D"}, {"type": "B"}])
    ev.feed(pa.table({"type": ["E"]}))
    assert ev.unseen() == NameSet((), ("S",))
    # values are collected while a name is missing at the end of a batch, for messages
    assert ev.seen().types == ("A", "C")


def test_at_most_a_thousand_names_are_kept_but_every_query_name_is_noticed() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B WITHIN 10 EVENTS")
    rows, arrow = q.evaluator(), q.evaluator()
    many = [{"type": f"t{i}"} for i in range(NAMES_CAP + 500)]
    rows.feed(many)
    arrow.feed(pa.Table.from_pylist(many))
    for ev in (rows, arrow):
        assert len(ev.seen().types) == NAMES_CAP
        assert ev.unseen().types == ("A", "B")
    rows.feed([{"type": "B"}])
    arrow.feed(pa.table({"type": ["B"]}))
    assert rows.unseen().types == arrow.unseen().types == ("A",)


def test_streams_count_when_events_name_streams() -> None:
    q = ceql.compile("SELECT * FROM Clicks, Ordres WHERE A ; B WITHIN 10 EVENTS")
    named = [{"type": "A", "stream": "Clicks"}, {"type": "B", "stream": "Orders"}]
    [w] = caught(lambda: list(q.run(named)), ceql.UnseenNameWarning)
    # B's events are of a stream the query does not read: for the query, B never occurs
    assert str(w.message) == (
        "The query's event type 'B' never occurred in the 2 events; event types seen: 'A'. A "
        "misspelt name matches nothing: check it against the data. The query's stream "
        "'Ordres' never occurred in the 2 events; streams seen: 'Clicks', 'Orders' (did you "
        "mean 'Orders'?). A misspelt name matches nothing: check it against the data.")
    # without a stream attribute every event belongs to every stream: nothing to say
    assert caught(lambda: list(q.run([{"type": "A"}, {"type": "B"}])), ceql.UnseenNameWarning) == []
    ev = q.evaluator()
    ev.feed(pa.Table.from_pylist(named))
    assert ev.unseen() == NameSet(("B",), ("Ordres",))
    assert ev.seen() == NameSet(("A",), ("Clicks", "Orders"))


def test_the_message_for_many_names() -> None:
    seen = NameSet(tuple(f"type{i:02}" for i in range(14)), ())
    msg = unseen_names_message(NameSet(("typ03", "zzz"), ("S",)), seen, 1234)
    assert msg == (
        "The query's event types 'typ03', 'zzz' never occurred in the 1,234 events; event "
        "types seen: 'type00', 'type01', 'type02', 'type03', 'type04', 'type05', 'type06', "
        "'type07', 'type08', 'type09' and 4 more (did you mean 'type03' for 'typ03'?). A "
        "misspelt name "
        "matches nothing: check them against the data.")
    assert unseen_names_message(NameSet((), ("S",)), NameSet(("A",), ()), 5) is None
    assert unseen_names_message(NameSet(("A",), ()), NameSet((), ()), 0) is None
    assert unseen_names_message(NameSet(("A",), ()), NameSet((), ()), 2) == (
        "The query's event type 'A' never occurred in the 2 events; no event had an event "
        "type. A misspelt name matches nothing: check it against the data.")


def test_type_values_that_are_not_strings_are_listed() -> None:
    ev = ceql.compile(FUNNEL).evaluator()
    ev.feed(pa.table({"type": [1, 2, 2]}))
    ev.feed([{"type": [1]}, {"type": None}, {"type": 3.5}])
    assert ev.seen().types == (1, 2, 3.5)


def test_a_snapshot_remembers_what_was_seen() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B WITHIN 10 EVENTS")
    ev = q.evaluator()
    ev.feed([{"type": "A"}, {"type": "C"}])
    for again in (q.restore(ev.snapshot()), pickle.loads(pickle.dumps(ev))):
        assert again.unseen() == ev.unseen() == NameSet(("B",), ("S",))
        assert again.seen() == ev.seen()
        again.feed([{"type": "B"}])
        assert again.unseen() == NameSet((), ("S",))


# ---------------------------------------------------------------------- strings and numbers

THRESHOLD = "SELECT * FROM S WHERE A AS a ; B AS b FILTER a[x > 5] WITHIN 10 EVENTS"
TEXT_EVENTS: list[dict[str, Any]] = [
    {"type": "B", "x": "z"}, {"type": "A", "x": 1}, {"type": "A", "x": "7"},
    {"type": "B", "x": "8"}, {"type": "A", "x": "9"}]
SAID = ("A string and a number never compare (nor add up): the condition is unknown, so it "
        "does not hold, and such events silently match nothing.")
READ_AS_NUMBERS = ("If 'x' should hold numbers, read it as numbers: give the reader a schema, "
                   "or cast the column (float(...) on each event; pyarrow.compute.cast for "
                   "Arrow).")


def test_a_string_compared_with_a_number_rows() -> None:
    q = ceql.compile(THRESHOLD)
    [w] = caught(lambda: list(q.run(TEXT_EVENTS)))
    assert w.category is ceql.ValueTypeWarning
    assert w.filename == __file__
    # event 0 is a B: a[x > 5] never reads it, its string is no concern
    assert str(w.message) == (
        f"Event 2 compares a string with a number in `x > 5`: attribute 'x' is '7' (str). "
        f"{SAID} {READ_AS_NUMBERS} The event: {{'type': 'A', 'x': '7'}}. (Said once per "
        "evaluation.)")


def test_a_string_column_compared_with_a_number_arrow() -> None:
    q = ceql.compile(THRESHOLD)
    table = pa.table({"type": ["B", "B", "A", "A"], "x": ["z", None, None, "7"]})
    ev = q.evaluator()
    [w] = caught(lambda: ev.feed(table))
    assert w.filename == __file__
    assert str(w.message) == (
        f"Event 3 compares a string with a number in `x > 5`: attribute 'x' is '7' (str). "
        f"{SAID} {READ_AS_NUMBERS} The event: {{'type': 'A', 'x': '7'}}. (Said once per "
        "evaluation.)")
    assert caught(lambda: ev.feed(table)) == []  # once per evaluator
    rows = ceql.compile(THRESHOLD).evaluator()
    [r] = caught(lambda: rows.feed(table.to_pylist()))
    assert str(r.message) == str(w.message)


@pytest.mark.parametrize(("cond", "event", "says"), [
    ("a[x * 2 > 5]", {"type": "A", "x": "7"},
     "Event 0 does arithmetic on a string in `x * 2`: attribute 'x' is '7' (str)."),
    ("a[-x < 5]", {"type": "A", "x": "7"},
     "Event 0 does arithmetic on a string in `-x`: attribute 'x' is '7' (str)."),
    ("a[x IN {1, 2}]", {"type": "A", "x": "1"},
     "Event 0 compares a string with a number in `x IN {1, 2}`: attribute 'x' is '1' (str)."),
    ("a[x IN RANGE(1, 9)]", {"type": "A", "x": "3"},
     "Event 0 compares a string with a number in `x IN RANGE(1, 9)`: attribute 'x' is '3' "
     "(str)."),
    ("a[x < y]", {"type": "A", "x": "3", "y": 4},
     "Event 0 compares a string with a number in `x < y`: attribute 'x' is '3' (str); "
     "attribute 'y' is 4 (int)."),
])
def test_every_kind_of_mix_rows_and_arrow(cond: str, event: dict[str, Any], says: str) -> None:
    q = ceql.compile(f"SELECT * FROM S WHERE A AS a ; B FILTER {cond} WITHIN 9 EVENTS")
    [w] = caught(lambda: list(q.run([event])))
    assert str(w.message).startswith(says + " " + SAID), w.message
    [a] = caught(lambda: q.evaluator().feed(pa.Table.from_pylist([event])))
    assert str(a.message) == str(w.message)


def test_a_string_literal_against_numbers() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A AS a ; B FILTER a[x = '3'] WITHIN 9 EVENTS")
    [w] = caught(lambda: list(q.run([{"type": "A", "x": 3}])))
    assert str(w.message) == (
        f"Event 0 compares a string with a number in `x = '3'`: attribute 'x' is 3 (int). "
        f"{SAID} 'x' holds numbers here: compare it with a number (no quotes), or, if it "
        "should hold strings, give the reader a schema or cast the column (str(...)). The "
        "event: {'type': 'A', 'x': 3}. (Said once per evaluation.)")


def test_no_warning_for_numbers_nulls_and_other_types() -> None:
    q = ceql.compile(THRESHOLD)
    fine: list[dict[str, Any]] = [{"type": "A", "x": 6}, {"type": "A"}, {"type": "A", "x": None},
            {"type": "B", "x": "text"}, {"type": "A", "x": True}, {"type": "A", "x": b"7"}]
    assert caught(lambda: list(q.run(fine))) == []
    for table in (pa.table({"type": ["A", "A", "B"], "x": [6, None, None]}),
                  pa.table({"type": ["B", "C"], "x": ["text", "7"]}),
                  pa.table({"type": ["A"], "x": [b"7"]})):
        assert caught(lambda: q.evaluator().feed(table)) == []  # noqa: B023


def test_sorted_runs_name_the_callers_index() -> None:
    q = ceql.compile(THRESHOLD)
    rows = [{"type": "A", "x": "7", "t": 2}, {"type": "A", "x": 1, "t": 1}]
    [w] = caught(lambda: list(q.run(rows, time="t", sort=True)))
    assert str(w.message).startswith("Event 0 compares a string with a number")


def test_interleaved_evaluators_hear_of_their_own_events() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A AS a ; B FILTER a[x > 0]")
    one, two = q.evaluator(), q.evaluator()
    many = [{"type": "A", "x": 1}] * 3000 + [{"type": "B", "x": 2}]  # two chunks of matches
    clean = one.iter_feed(many)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        next(clean)
        two.feed([{"type": "A", "x": 1}, {"type": "A", "x": "7"}])
        list(clean)
        one.feed([{"type": "A", "x": "8"}])
    texts = [str(w.message).split(" compares")[0] for w in got
             if w.category is ceql.ValueTypeWarning]
    assert texts == ["Event 1", "Event 3001"]


def test_a_snapshot_remembers_the_warning_was_given() -> None:
    q = ceql.compile(THRESHOLD)
    ev = q.evaluator()
    assert len(caught(lambda: ev.feed([{"type": "A", "x": "7"}]))) == 1
    again = q.restore(ev.snapshot())
    assert caught(lambda: again.feed([{"type": "A", "x": "8"}])) == []
