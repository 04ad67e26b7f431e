"""Values that used to give an empty answer without a word (issue 27, item 2): arithmetic on
times, times compared with what they cannot mean, misspelt attributes, and numbers held as text
compared with ``>``."""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pyarrow as pa
import pytest

import ceql
from ceql.errors import TypeClashError
from reference import reference_matches

T0 = dt.datetime(2020, 1, 1)
PAIR = [{"type": "A", "ts": T0, "amount": 5},
        {"type": "B", "ts": T0 + dt.timedelta(seconds=100), "amount": 7}]


def caught(fn: Callable[[], Any], kind: type[Warning]) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        fn()
    return [w for w in got if issubclass(w.category, kind)]


def rows_and_arrow(q: ceql.Query, rows: list[dict[str, Any]], **kw: Any) -> list[list[Any]]:
    """The positions of the matches on the rows, and on the same events as an Arrow table."""
    def positions(feed: Iterable[Any] | pa.Table) -> list[Any]:
        ev = q.evaluator(**kw)
        return sorted(m.positions for m in [*ev.feed(feed), *ev.close()])
    return [positions(rows), positions(pa.Table.from_pylist(rows))]


def both(query: str, rows: list[dict[str, Any]], **kw: Any) -> list[Any]:
    """Matches of ``query`` on rows and Arrow, which must agree, and with the reference."""
    q = ceql.compile(query)
    got_rows, got_arrow = rows_and_arrow(q, rows, **kw)
    assert got_rows == got_arrow
    ref = reference_matches(q.ast, rows, time=kw.get("time"))
    assert sorted(m.positions for m in ref) == got_rows
    return got_rows


# ---------------------------------------------------------------------- arithmetic on times

@pytest.mark.parametrize(("cond", "hit"), [
    ("b[ts - a.ts >= 60]", True),
    ("b[ts - a.ts >= 200]", False),
    ("b[ts - a.ts = 100]", True),
    ("b[ts - a.ts >= INTERVAL 1 MINUTE]", True),
    ("b[ts - a.ts > INTERVAL '90' SECOND]", True),
    ("b[ts - a.ts > INTERVAL 1 MINUTE 41 SECONDS]", False),
    ("b[ts - a.ts < 1.5 * 60 + 11]", True),
    ("b[ts >= a.ts + 60]", True),
    ("b[ts >= a.ts + 101]", False),
    ("b[ts - 100 = a.ts]", True),
    ("b[ts > a.ts + INTERVAL 1 MINUTE]", True),
    ("b[ts - INTERVAL 2 MINUTES > a.ts]", False),
    ("b[(ts - a.ts) / 60 > 1.5]", True),
    ("a[b.ts - ts IN RANGE(99.5, 100.5)]", True),
])
def test_the_difference_of_two_times_is_in_seconds(cond: str, hit: bool) -> None:
    q = f"SELECT * FROM S WHERE A AS a ; B AS b FILTER {cond}"
    assert both(q, PAIR, time="ts") == ([(0, 1)] if hit else [])
    got = ceql.compile(q).run(PAIR, time="ts")
    assert len(list(got)) == hit


def test_times_of_one_event_and_arrow_units() -> None:
    rows = [{"type": "A", "start": T0, "end": T0 + dt.timedelta(minutes=2)},
            {"type": "A", "start": T0, "end": T0 + dt.timedelta(seconds=30)}]
    assert both("SELECT * FROM S WHERE A FILTER A[end - start > 60]", rows) == [(0,)]
    for unit in ("s", "ms", "us", "ns"):
        table = pa.table({"type": ["A", "A"],
                          "start": pa.array([T0, T0], pa.timestamp(unit, "UTC")),
                          "end": pa.array([r["end"] for r in rows], pa.timestamp(unit, "UTC"))})
        ev = ceql.compile("SELECT * FROM S WHERE A FILTER A[end - start > 60]").evaluator()
        assert [m.positions for m in ev.feed(table)] == [(0,)]


def test_aggregates_over_times() -> None:
    rows = [{"type": "A", "ts": T0 + dt.timedelta(seconds=s)} for s in (0, 30, 90)]
    q = "SELECT * FROM S WHERE (A AS a)+ FILTER [MAX(a.ts) - MIN(a.ts) >= 90]"
    assert both(q, rows, time="ts") == [(0, 1, 2), (0, 2)]
    q = "SELECT * FROM S WHERE (A AS a)+ FILTER [LAST(a.ts) - FIRST(a.ts) > INTERVAL 1 MINUTE]"
    assert both(q, rows, time="ts") == [(0, 1, 2), (0, 2)]


def test_a_time_compares_with_an_iso_string() -> None:
    rows = [{**e, "type": "A"} for e in PAIR]
    q = "SELECT * FROM S WHERE A FILTER A[ts >= '2020-01-01 00:01:00']"
    assert both(q, rows) == [(1,)]
    assert both("SELECT * FROM S WHERE A FILTER A[ts < '2020-01-01T00:00:01']", rows) == [(0,)]
    q = "SELECT * FROM S WHERE A FILTER A[ts < '2020-01-01T00:00:01+00:00']"  # aware vs naive
    assert caught(lambda: both(q, rows), ceql.ValueTypeWarning)


def test_a_time_in_a_list_of_iso_strings() -> None:
    rows = [{**e, "type": "A"} for e in PAIR]
    q = "SELECT * FROM S WHERE A FILTER A[ts IN {'2020-01-01 00:01:40', '2021-01-01'}]"
    assert both(q, rows) == [(1,)]
    assert both("SELECT * FROM S WHERE A FILTER A[ts NOT IN {'2020-01-01'}]", rows) == [(1,)]
    q = "SELECT * FROM S WHERE A FILTER A[ts IN {'soon'}]"
    said = caught(lambda: both(q, rows), ceql.ValueTypeWarning)  # rows, then Arrow
    assert len(said) == 2
    assert all("compares a time with strings that write no time" in str(w.message)
               for w in said), said


def test_a_time_compared_with_a_number_is_warned_of() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A FILTER A[ts > 5]")
    for feed in (PAIR, pa.Table.from_pylist(PAIR)):
        [w] = caught(lambda feed=feed: q.evaluator().feed(feed), ceql.ValueTypeWarning)
        assert "compares a time with a number" in str(w.message), str(w.message)
    q = ceql.compile("SELECT * FROM S WHERE A FILTER A[ts > 'yesterday']")
    for feed in (PAIR, pa.Table.from_pylist(PAIR)):
        [w] = caught(lambda feed=feed: q.evaluator().feed(feed), ceql.ValueTypeWarning)
        assert "compares a time with a string" in str(w.message), str(w.message)


def test_a_time_difference_compared_with_a_string_is_warned_of() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A AS a ; B AS b FILTER b[ts - a.ts > '60']")
    [w] = caught(lambda: list(q.run(PAIR)), ceql.ValueTypeWarning)
    assert "compares a duration with a string" in str(w.message), str(w.message)


@pytest.mark.parametrize("cond", ["A[ts > 5]", "A[ts > 'yesterday']", "A[ts + ts > ts]",
                                  "A[ts - ts > ts]", "A[ts > INTERVAL 1 SECOND]"])
def test_with_a_schema_a_time_against_a_number_is_an_error(cond: str) -> None:
    with pytest.raises(TypeClashError):
        ceql.compile(f"SELECT * FROM S WHERE A FILTER {cond}", schema={"ts": "timestamp"})


@pytest.mark.parametrize("cond", ["A[ts > '2020-01-01']", "A[ts - ts > 5]", "A[ts + 5 > ts]",
                                  "A[ts - ts > INTERVAL 1 SECOND]"])
def test_with_a_schema_time_arithmetic_compiles(cond: str) -> None:
    ceql.compile(f"SELECT * FROM S WHERE A FILTER {cond}", schema={"ts": "timestamp"})


# ---------------------------------------------------------------------- misspelt attributes

def test_a_misspelt_attribute_is_warned_of_rows_and_arrow() -> None:
    rows = [{"type": "A", "amount": 5}, {"type": "B", "amount": 7}]
    q = ceql.compile("SELECT * FROM S WHERE A ; B FILTER A[ammount > 1]")
    [w] = caught(lambda: list(q.run(rows)), ceql.UnseenNameWarning)
    text = str(w.message)
    assert "attribute 'ammount' never occurred in the 2 events" in text, text
    assert "did you mean 'amount'?" in text, text
    ev = q.evaluator()
    ev.feed(pa.Table.from_pylist(rows))
    assert ev.unseen().attributes == ("ammount",)
    assert "amount" in ev.seen().attributes
    ok = ceql.compile("SELECT * FROM S WHERE A AS a ; B FILTER B[amount > a.amount]")
    assert caught(lambda: list(ok.run(rows)), ceql.UnseenNameWarning) == []


def test_a_misspelt_qualified_attribute_is_warned_of() -> None:
    rows = [{"type": "A", "amount": 5}, {"type": "B", "amount": 7}]
    q = ceql.compile("SELECT * FROM S WHERE A AS a ; B AS b FILTER b[amount > a.amout]")
    [w] = caught(lambda: list(q.run(rows)), ceql.UnseenNameWarning)
    assert "'amout'" in str(w.message) and "did you mean 'amount'?" in str(w.message)


# ---------------------------------------------------------------------- numbers held as text

def test_numbers_as_text_compared_between_variables_are_warned_of() -> None:
    rows = [{"type": "A", "amount": "10"}, {"type": "B", "amount": "9"}]
    q = ceql.compile("SELECT * FROM S WHERE A AS a ; B AS b FILTER b[amount < a.amount]")
    for feed in (rows, pa.Table.from_pylist(rows)):
        got: list[Any] = []
        [w] = caught(lambda feed=feed, got=got: got.extend(q.evaluator().feed(feed)),
                     ceql.ValueTypeWarning)
        assert got == []  # '9' < '10' is false as text
        assert "compared as text" in str(w.message), str(w.message)
        assert "'9' < '10'" in str(w.message), str(w.message)


def test_text_that_is_not_numbers_compares_without_a_word() -> None:
    rows: list[Mapping[str, Any]] = [{"type": "A", "name": "ann"}, {"type": "B", "name": "bob"}]
    q = ceql.compile("SELECT * FROM S WHERE A AS a ; B AS b FILTER b[name > a.name]")
    assert caught(lambda: list(q.run(rows)), ceql.ValueTypeWarning) == []


def test_with_a_schema_text_compared_between_variables_is_warned_of() -> None:
    text = "SELECT * FROM S WHERE A AS a ; B AS b FILTER b[amount > a.amount]"
    [w] = caught(lambda: ceql.compile(text, schema={"amount": "string"}),
                 ceql.ValueTypeWarning)
    assert "compared as text" in str(w.message), str(w.message)
    assert caught(lambda: ceql.compile(text, schema={"amount": "number"}),
                  ceql.ValueTypeWarning) == []


def test_a_misspelt_partition_key_is_warned_of_and_unread_batches_say_nothing() -> None:
    rows = [{"type": "A", "user": 1}, {"type": "B", "user": 1}]
    q = ceql.compile("SELECT * FROM S WHERE A ; B PARTITION BY [usr]")
    [w] = caught(lambda: list(q.run(rows)), ceql.UnseenNameWarning)
    assert "attribute 'usr' never occurred" in str(w.message)
    assert "did you mean 'user'?" in str(w.message)
    ev = q.evaluator()
    ev.feed(iter(rows))  # a batch that cannot be read twice: the search ends, nothing is said
    assert ev.unseen().attributes == ()
    ev = q.evaluator()
    ev.feed(rows)
    assert ev.unseen().attributes == ("usr",)
    restored = q.restore(ev.snapshot())
    assert restored.unseen().attributes == ()
