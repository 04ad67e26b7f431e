"""Times: a window in time needs a time attribute, messages show ISO times, the row and its
index, and string times are read with ``time_format`` (issue 10)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

import ceql
from ceql.errors import CeqlInputError, CeqlValidationError

T0 = dt.datetime(2024, 3, 1, 9, 30)


def message(kind: type[Exception], fn: Callable[[], Any]) -> str:
    with pytest.raises(kind) as info:
        fn()
    return str(info.value)


# ---------------------------------------------------------------------- WITHIN in time

@pytest.mark.parametrize("within", ["WITHIN 10 SECONDS", "WITHIN INTERVAL '10' SECOND",
                                    "WITHIN 1 MINUTE 30 SECONDS"])
def test_a_time_window_needs_a_time_attribute(within: str) -> None:
    q = ceql.compile(f"SELECT * FROM S WHERE A ; B {within}")
    text = (f"{within} needs event times: pass time='<attribute>' (the attribute holding each "
            "event's time). Without it, positions would count as seconds (the event at "
            "position 10 would come 10 seconds after the first), which is never what a time "
            "window means; for a window in events, write WITHIN n EVENTS.")
    assert message(CeqlValidationError, q.evaluator) == text
    assert message(CeqlValidationError, lambda: list(q.run([{"type": "A"}]))) == text
    rows = [{"type": "A", "t": 0}, {"type": "B", "t": 9}]
    assert [m.positions for m in q.run(rows, time="t")] == [(0, 1)]


def test_other_windows_need_no_time() -> None:
    for within in ("WITHIN 3 EVENTS", "WITHIN 3 [w]", ""):
        q = ceql.compile(f"SELECT * FROM S WHERE A ; B {within}")
        assert [m.positions for m in q.run([{"type": "A", "w": 0}, {"type": "B", "w": 1}])] == [
            (0, 1)]


# ---------------------------------------------------------------------- messages

def test_out_of_order_datetimes_in_iso_with_the_event() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B WITHIN 1 MINUTE")
    rows = [{"type": "A", "ts": T0, "note": None},
            {"type": "B", "ts": T0 - dt.timedelta(seconds=1),
                                      "note": "x" * 100}]
    text = ("Event 1 is out of order: 'ts' goes back from 2024-03-01T09:30:00 to "
            "2024-03-01T09:29:59 (the event: {'type': 'B', 'ts': 2024-03-01T09:29:59, 'note': "
            "'xxxxxxxxxxxxxxxxx...xxxxxxxxxxxxxxxxxx'}). Sort the events by time first "
            "(Query.run(..., sort=True) does it), or fix the data.")
    assert message(CeqlInputError, lambda: list(q.run(rows, time="ts"))) == text
    table = pa.Table.from_pylist(rows)
    assert message(CeqlInputError, lambda: q.evaluator(time="ts").feed(table)) == text


def test_a_wide_event_is_cut_short() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B")
    wide = {"type": "B", **{f"f{i}": i for i in range(12)}, "ts": 0}
    assert message(CeqlInputError, lambda: list(q.run([{"type": "A", "ts": 1}, wide],
                                                      time="ts"))) == (
        "Event 1 is out of order: 'ts' goes back from 1 to 0 (the event: {'type': 'B', 'f0': "
        "0, 'f1': 1, 'f2': 2, 'f3': 3, 'f4': 4, 'f5': 5, 'f6': 6, … (6 more)}). Sort the events "
        "by time first (Query.run(..., sort=True) does it), or fix the data.")


def test_null_is_not_missing() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B")
    rows: list[dict[str, Any]] = [{"type": "A", "ts": 1}, {"type": "B", "ts": None}]
    assert message(CeqlInputError, lambda: list(q.run(rows, time="ts"))) == (
        "Event 1 has no usable time: attribute 'ts' is NULL (None) in the event {'type': 'B', "
        "'ts': None}; every event needs a number or a timestamp there.")
    assert message(CeqlInputError, lambda: list(q.run([{"type": "A", "ts": True}],
                                                      time="ts"))) == (
        "Event 0 has no usable time: attribute 'ts' is True, a boolean, in the event {'type': "
        "'A', 'ts': True}; every event needs a number or a timestamp there.")


def test_arrow_names_the_row_at_fault_not_the_first() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B")
    times = [1, 2, 3, 4, 5, None, 7]
    table = pa.table({"type": ["A"] * 7, "ts": times})
    assert message(CeqlInputError, lambda: q.evaluator(time="ts").feed(table)) == (
        "Event 5 has no usable time: attribute 'ts' is NULL in the event {'type': 'A', 'ts': "
        "None}; every event needs a number or a timestamp there.")
    # a CSV reader makes a column text for one bad value: that value is named
    text = pa.table({"type": ["A"] * 7, "ts": ["1", "2", "3", "4", "5", "5,5", "7"]})
    ev = q.evaluator(time="ts")
    ev.feed(pa.table({"type": ["A"] * 3, "ts": [0, 0, 0]}))
    assert message(CeqlInputError, lambda: ev.feed(text)) == (
        "Event 8 has time '5,5' in column 'ts', which holds strings (string): pass "
        "time_format, the strptime format of these strings (e.g. time_format='%Y-%m-%d "
        "%H:%M:%S'), or give the reader a schema that reads the column as numbers or "
        "timestamps; the event: {'type': 'A', 'ts': '5,5'}.")
    digits = pa.table({"type": ["A", "A"], "ts": ["1", "2"]})
    assert message(CeqlInputError, lambda: q.evaluator(time="ts").feed(digits)) == (
        "Column 'ts', the time, holds numbers as strings (string, events 0 to 1): cast it to "
        "numbers (e.g. pyarrow.compute.cast(column, pyarrow.float64())) or give the reader a "
        "schema.")
    durations = pa.table({"type": ["A"], "ts": pa.array([1], pa.duration("s"))})
    assert message(CeqlInputError, lambda: q.evaluator(time="ts").feed(durations)) == (
        "Column 'ts', the time, has type duration[s] (events 0 to 0): use a number (seconds, "
        "or the time_unit given) or a timestamp/date column.")


# ---------------------------------------------------------------------- time_format

FMT = "%d/%m/%Y %H:%M"
DAYS = [{"type": "A", "ts": "01/03/2024 09:30"}, {"type": "B", "ts": "01/03/2024 09:31"},
        {"type": "B", "ts": "01/03/2024 10:31"}]


def _seen(matches: list[ceql.Match]) -> list[tuple[Any, ...]]:
    return [(m.positions, m.start_time, m.end_time) for m in matches]


def test_time_format_rows_and_arrow() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B WITHIN 5 MINUTES")
    want = [((0, 1), T0, T0 + dt.timedelta(minutes=1))]
    assert _seen(list(q.run(DAYS, time="ts", time_format=FMT))) == want
    table = pa.Table.from_pylist(DAYS)
    assert _seen(q.evaluator(time="ts", time_format=FMT).feed(table)) == want
    shuffled = [DAYS[2], DAYS[1], DAYS[0]]
    assert [(m.positions, m.start_time) for m in q.run(shuffled, time="ts", time_format=FMT,
                                                       sort=True)] == [((1, 2), T0)]
    # times already typed are read as they are
    typed = [{"type": "A", "ts": T0}, {"type": "B", "ts": T0}]
    assert len(list(q.run(typed, time="ts", time_format=FMT))) == 1
    assert len(q.evaluator(time="ts", time_format=FMT).feed(pa.Table.from_pylist(typed))) == 1


def test_a_string_that_does_not_match_the_format() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B WITHIN 5 MINUTES")
    rows = [*DAYS, *DAYS[2:] * 4, {"type": "B", "ts": "2024-03-01 10:40"}]
    assert message(CeqlInputError, lambda: list(q.run(rows, time="ts", time_format=FMT))) == (
        "Event 7 has time '2024-03-01 10:40' in attribute 'ts', which does not match "
        "time_format '%d/%m/%Y %H:%M' (time data '2024-03-01 10:40' does not match format "
        "'%d/%m/%Y %H:%M'); the event: {'type': 'B', 'ts': '2024-03-01 10:40'}.")
    table = pa.Table.from_pylist(rows)
    assert message(CeqlInputError,
                   lambda: q.evaluator(time="ts", time_format=FMT).feed(table)) == (
        "Event 7 has time '2024-03-01 10:40' in column 'ts', which does not match time_format "
        "'%d/%m/%Y %H:%M'; the event: {'type': 'B', 'ts': '2024-03-01 10:40'}.")


def test_time_format_is_saved_with_the_evaluation() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B WITHIN 5 MINUTES")
    ev = q.evaluator(time="ts", time_format=FMT)
    ev.feed(DAYS[:1])
    again = q.restore(ev.snapshot())
    assert again.time_format == FMT
    assert _seen(again.feed(DAYS[1:2])) == [((0, 1), T0, T0 + dt.timedelta(minutes=1))]


def test_strings_without_a_format_are_refused_as_before() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B")
    assert message(CeqlInputError, lambda: list(q.run(DAYS, time="ts"))) == (
        "Event 0 has time '01/03/2024 09:30' (str) in attribute 'ts': use a number (seconds, or "
        "the time_unit given) or a datetime, or pass time_format (the strptime format of these "
        "strings, e.g. time_format='%Y-%m-%d %H:%M:%S'); the event: {'type': 'A', 'ts': "
        "'01/03/2024 09:30'}.")


@pytest.mark.parametrize("zone", ["", "%z"])
def test_fractions_of_a_second_read_alike_by_rows_and_arrow(zone: str) -> None:
    # Arrow's strptime has no %f: such formats are read value by value on that path.
    fmt = "%Y-%m-%d %H:%M:%S.%f" + zone
    tail = "+0100" if zone else ""
    events = [{"type": "A", "ts": f"2026-11-29 10:01:02.250{tail}"},
              {"type": "B", "ts": f"2026-11-29 10:01:03.100{tail}"},
              {"type": "B", "ts": f"2026-11-29 10:01:03.300{tail}"}]
    q = ceql.compile("SELECT * FROM S WHERE A ; B WITHIN 1 SECONDS")
    rows = q.evaluator(time="ts", time_format=fmt).feed(events)
    table = q.evaluator(time="ts", time_format=fmt).feed(pa.Table.from_pylist(events))
    assert [m.positions for m in rows] == [m.positions for m in table] == [(0, 1)]
    assert [m.end_time for m in rows] == [m.end_time for m in table]
    assert rows[0].end_time - rows[0].start_time == dt.timedelta(microseconds=850_000)
    with pytest.raises(CeqlInputError, match=r"^Event 3 has time 'junk' in column 'ts', which "
                       r"does not match time_format '%Y-%m-%d %H:%M:%S\.%f"):
        q.evaluator(time="ts", time_format=fmt).feed(
            pa.Table.from_pylist([*events, {"type": "B", "ts": "junk"}]))
