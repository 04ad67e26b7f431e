"""Nothing a caller passes escapes as a raw exception (issue 9, item 5).

Deep queries run at the default recursion limit, huge WITHIN amounts work, and wrong arguments,
events and columns get a :class:`ceql.CeqlError` that says what is wrong and where: these tests
check the exact messages.
"""

from __future__ import annotations

import datetime as dt
import math
import pickle
import sys
import threading
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import ceql
from ceql.analysis import relevance
from ceql.errors import CeqlInputError, CeqlSyntaxError, CeqlTypeError, CeqlValidationError
from ceql.ir import canonical_repr, recursion_for
from ceql.predicates import GAnd, GAtom, GNot, GOr, GTrue, programs
from ceql.runtime.times import exact

GOLDEN = Path(__file__).parent / "golden"
ROWS = [{"type": "A", "x": 1}, {"type": "A", "x": 2}]
NOT_A_MAPPING = ("is of type {}, not a mapping: give each event as a dict of its attributes, "
                 "e.g. {{'type': 'A', 'price': 10}}.")


def message(kind: type[Exception], fn: Callable[[], Any]) -> str:
    """The message of the ``kind`` error ``fn`` raises."""
    with pytest.raises(kind) as info:
        fn()
    return str(info.value)


def positions(matches: Any) -> list[tuple[int, ...]]:
    return [tuple(m.positions) for m in matches]


def anything(x: object) -> Any:
    """``x``, typed so that the type checker lets a test pass what callers should not."""
    return x


# ---------------------------------------------------------------------- deep queries

def _alternating(levels: int) -> str:
    """AND, OR and NOT NOT nested ``levels`` deep; true for x = 1 only (among 1 and 2)."""
    s = "x = 1"
    for i in range(levels):
        s = f"(NOT NOT ({s}) AND x < {i + 5})" if i % 2 else f"({s} OR x = -{i + 1})"
    return s


DEEP = {
    "not": "A[" + "NOT " * 500 + "x = 1]",
    "sum": "A[" + " + ".join(["x"] * 1000) + " = 1000]",
    "negation": "A[" + "- " * 1000 + "x = 1]",
    "constant": "A[x = " + " + ".join(["1"] * 1000) + " - 999]",
    "alternating": "A[" + _alternating(300) + "]",
}


@pytest.mark.parametrize("name", sorted(DEEP))
def test_deep_query_runs_at_the_default_recursion_limit(name: str) -> None:
    limit = sys.getrecursionlimit()
    text = "SELECT * FROM S WHERE A FILTER " + DEEP[name]
    q = ceql.compile(text)
    assert positions(q.run(ROWS)) == [(0,)]
    assert positions(q.evaluator().feed(pa.Table.from_pylist(ROWS))) == [(0,)]
    assert positions(q.run([{"kind": "A", "x": 1}], type_key="kind")) == [(0,)]
    ev = q.evaluator()
    assert ev.feed(ROWS[1:]) == []
    assert positions(q.restore(ev.snapshot()).feed(ROWS[:1])) == [(1,)]
    assert relevance(q) is not None
    assert "digraph" in ceql.explain(text, dot=True)
    assert sys.getrecursionlimit() == limit


EXPRESSIONS = ["x + y * 2 = 5", "-x - -y < 3", "x / y >= 0.5", "x % 3 = 1", "x - y * y != 0",
               "(x + 1) * (y - 2) > 0", "x + 1 IN {2, 3}", "x * 2 IN RANGE(y, y + 4)",
               "y = 1 + 2 * 3", "-(x) = -1", "x * 9223372036854775807 * 4 > 0", "x + y = y + x"]


@pytest.mark.parametrize("pred", EXPRESSIONS)
def test_stack_programs_agree_with_closures(pred: str, monkeypatch: pytest.MonkeyPatch) -> None:
    values = [0, 1, 2, -3, None, 2.5, float("nan")]
    rows = [{"type": "A", "x": x if not isinstance(x, float) else None, "y": y}
            for x in values for y in values]
    table = pa.Table.from_pylist(rows)
    text = f"SELECT * FROM S WHERE A FILTER A[{pred}]"
    closures = ceql.compile(text)
    want = positions(closures.run(rows))
    assert positions(closures.evaluator().feed(table)) == want
    monkeypatch.setattr(programs, "MAX_CLOSURE_DEPTH", 0)  # every expression a stack program
    stacked = ceql.compile(text, max_states=ceql.DEFAULT_MAX_STATES + 1)  # compiled afresh
    assert positions(stacked.run(rows)) == want
    assert positions(stacked.evaluator().feed(table)) == want


def test_guards_hash_and_compare_without_recursion() -> None:
    a: Any = GAtom(0)
    b: Any = GAtom(0)
    for _ in range(20_000):
        a, b = GNot(a), GNot(b)
    assert a == b and a is not b and hash(a) == hash(b)
    assert {a: 1}[b] == 1
    assert GNot(a) != a
    small = GAnd((GAtom(1), GOr((GNot(GAtom(2)), GTrue()))))
    copy = pickle.loads(pickle.dumps(small))
    assert copy == small and hash(copy) == hash(small)
    assert small != GOr(small.items) and small != "p1"


def test_canonical_repr_is_repr() -> None:
    texts = [p.read_text() for p in sorted(GOLDEN.glob("*/query.ceql"))]
    assert texts
    for text in texts:
        ast = ceql.compile(text).ast
        assert canonical_repr(ast) == repr(ast)


# ---------------------------------------------------------------------- WITHIN amounts

@pytest.mark.parametrize("unit", ["SECONDS", "MILLISECONDS"])
def test_within_beyond_the_float_range(unit: str) -> None:
    q = ceql.compile(f"SELECT * FROM S WHERE A ; B WITHIN {'9' * 400}.5 {unit}")
    rows = [{"type": "A", "t": 1}, {"type": "B", "t": 10**30}]
    assert positions(q.run(rows, time="t")) == [(0, 1)]
    floats = [{"type": "A", "t": -1e308}, {"type": "B", "t": 1e308}]
    assert positions(q.run(floats, time="t")) == [(0, 1)]
    table = pa.Table.from_pylist([{"type": "A", "t": 1.0}, {"type": "B", "t": 1e300}])
    assert positions(q.evaluator(time="t").feed(table)) == [(0, 1)]


def test_window_amounts_compare_exactly() -> None:
    assert exact(Fraction(5, 2)) == 2.5
    assert exact(Fraction(2**54 + 1, 2)) == 2**53  # past 2**53 floats are whole: floor is exact
    assert exact(Fraction(10**300)) == 10**300 and type(exact(Fraction(10**300))) is int
    assert exact(Fraction(10**400)) == math.inf  # farther than any two float keys


def test_within_events_names_the_amount_as_written() -> None:
    for amount in ["2.50", "9" * 400 + ".5"]:
        text = f"SELECT * FROM S WHERE A WITHIN {amount} EVENTS"
        msg = message(CeqlSyntaxError, lambda: ceql.compile(text))  # noqa: B023
        assert msg.startswith(f"WITHIN ... EVENTS needs a whole number of events, not {amount} ")


# ---------------------------------------------------------------------- run(sort=True)

def test_sort_refuses_a_time_it_cannot_order_naming_the_event() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B")
    rows: list[dict[str, Any]] = [{"type": "A", "t": 6}, {"type": "B", "t": "5"}]
    assert message(CeqlInputError, lambda: list(q.run(rows, time="t", sort=True))) == (
        "Event 1 has time '5' (str) in attribute 't': use a number (seconds, or the time_unit "
        "given) or a datetime, or pass time_format (the strptime format of these strings, e.g. "
        "time_format='%Y-%m-%d %H:%M:%S'); the event: {'type': 'B', 't': '5'}.")
    mixed: list[dict[str, Any]] = [{"type": "A", "t": 7},
                                   {"type": "B", "t": dt.datetime(2024, 1, 1)},
                                   {"type": "B", "t": 5}]
    assert message(CeqlInputError, lambda: list(q.run(mixed, time="t", sort=True))) == (
        "Event 1: time attribute 't' mixes timestamps and numbers; give every event the same "
        "kind of time value.")
    odd = anything([{"type": "A", "t": 1}, ("B", 2)])
    assert message(CeqlInputError, lambda: list(q.run(odd, time="t", sort=True))) == (
        "Event 1 " + NOT_A_MAPPING.format("tuple"))


def test_sort_says_that_evaluator_positions_are_in_time_order() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B")
    with pytest.raises(CeqlInputError) as info:
        list(q.run([{"type": "A"}, {"type": "B", "t": 2}], time="t", sort=True))
    assert str(info.value).startswith("Event 1 has no usable time")
    assert info.value.__notes__ == [
        "With sort=True, event positions in this message count the events in time order."]


# ---------------------------------------------------------------------- compile() arguments

@pytest.mark.parametrize("bad", [0, -5])
def test_max_states_below_one(bad: int) -> None:
    msg = message(CeqlValidationError,
                  lambda: ceql.compile("SELECT * FROM S WHERE A", max_states=bad))
    assert msg == (f"max_states must be at least 1, not {bad}: it caps the automaton states one "
                   "evaluation holds at once (default 10000).")


@pytest.mark.parametrize(("bad", "name"),
                         [("x", "str"), (None, "NoneType"), (1.5, "float"), (True, "bool")])
def test_max_states_of_the_wrong_type(bad: Any, name: str) -> None:
    msg = message(CeqlTypeError, lambda: ceql.compile("SELECT * FROM S WHERE A", max_states=bad))
    assert msg == f"max_states must be a whole number (an int), not {name}."


def test_max_states_takes_any_integer() -> None:
    assert ceql.compile("SELECT * FROM S WHERE A", max_states=anything(np.int64(7))).max_states == 7


def test_schema_of_the_wrong_type() -> None:
    assert message(CeqlTypeError, lambda: ceql.compile("SELECT * FROM S WHERE A", schema=123)) == (
        "Cannot read a schema from int: give a dict such as {'price': 'number', 'name': "
        "'string'}, a pyarrow schema or a Spark StructType")


def test_unknown_time_unit_is_a_value_error() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A")
    assert message(ValueError, lambda: q.evaluator(time_unit="h")) == (
        "Unknown time_unit 'h': use one of s, ms, us, ns.")
    assert message(CeqlTypeError, lambda: list(q.run([], time_unit=anything(["s"])))) == (
        "time_unit must be a string, one of s, ms, us, ns; not list.")


# ---------------------------------------------------------------------- Arrow time columns

def _feed_times(times: pa.Array) -> list[ceql.Match]:
    q = ceql.compile("SELECT * FROM S WHERE A ; B")
    table = pa.table({"type": ["A", "B"], "t": times})
    return q.evaluator(time="t").feed(table)


def test_time_zone_out_of_range() -> None:
    times = pa.array([1, 2], pa.timestamp("s", tz="+25:00"))
    assert message(CeqlInputError, lambda: _feed_times(times)) == (
        "Unknown time zone '+25:00' of time column 't': use an IANA name such as "
        "'Europe/Paris' or an offset from -23:59 to +23:59 such as '+01:00'.")


@pytest.mark.parametrize(("tz", "offset"), [("+05:30", 330), ("-0800", -480),
                                            ("Europe/Paris", 60), ("UTC", 0)])
def test_time_zones_arrow_names(tz: str, offset: int) -> None:
    [m] = _feed_times(pa.array([1, 2], pa.timestamp("s", tz=tz)))
    assert m.start_time.utcoffset() == dt.timedelta(minutes=offset)
    assert m.start_time == dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(("typ", "value"), [(pa.timestamp("s"), 2**62),
                                            (pa.timestamp("us"), 2**62),
                                            (pa.timestamp("ms", tz="UTC"), 2**62),
                                            (pa.date32(), 2**31 - 1),
                                            (pa.date64(), 2**62)])
def test_times_outside_what_datetimes_hold(typ: pa.DataType, value: int) -> None:
    assert message(CeqlInputError, lambda: _feed_times(pa.array([1, value], typ))) == (
        f"Event 1 has time {value} ({typ}) in column 't', outside the years 1 to 9999 that "
        "ceql can give back as datetimes.")
    assert message(CeqlInputError, lambda: _feed_times(pa.array([-value, 1], typ))) == (
        f"Event 0 has time {-value} ({typ}) in column 't', outside the years 1 to 9999 that "
        "ceql can give back as datetimes.")


def test_times_inside_the_range_still_read() -> None:
    [m] = _feed_times(pa.array([1001, 2999], pa.timestamp("ns")))  # truncated to microseconds
    assert (m.start_time, m.end_time) == (dt.datetime(1970, 1, 1, 0, 0, 0, 1),
                                          dt.datetime(1970, 1, 1, 0, 0, 0, 2))
    late = dt.datetime(9999, 12, 29)
    [m] = _feed_times(pa.array([dt.datetime(1, 1, 3), late], pa.timestamp("s")))
    assert m.end_time == late
    # only the rows that take part are read
    q = ceql.compile("SELECT * FROM S WHERE A ; B")
    table = pa.table({"type": ["A", "B", "A"], "stream": ["S", "S", "T"],
                      "t": pa.array([1, 2, 2**62], pa.timestamp("s"))})
    assert positions(q.evaluator(time="t").feed(table)) == [(0, 1)]


# ---------------------------------------------------------------------- nested columns

NESTED = [pa.array([{"a": 1}, {"a": 1}]), pa.array([[1], [1]]),
          pa.array([[("a", 1)], [("a", 1)]], pa.map_(pa.string(), pa.int64()))]


@pytest.mark.parametrize("col", NESTED, ids=lambda c: str(c.type))
def test_nested_partition_column(col: pa.Array) -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B PARTITION BY [k]")
    table = pa.table({"type": ["A", "B"], "k": col})
    assert message(CeqlInputError, lambda: q.evaluator().feed(table)) == (
        f"Column 'k', which PARTITION BY reads, has type {col.type} (events 0 to 1): a "
        "partition value must be a number, string, boolean or timestamp.")
    value = table.to_pylist()[0]["k"]
    assert message(CeqlInputError, lambda: list(q.run(table.to_pylist()))) == (
        f"Event 0 has {value!r} in partition attribute 'k': a partition value must be a "
        f"number, string, boolean or timestamp, not of type {type(value).__name__}.")


@pytest.mark.parametrize("col", NESTED, ids=lambda c: str(c.type))
def test_nested_stream_column(col: pa.Array) -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B")
    table = pa.table({"type": ["A", "B"], "stream": col})
    assert message(CeqlInputError, lambda: q.evaluator().feed(table)) == (
        f"Column 'stream', the stream of each event, has type {col.type} (events 0 to 1): a "
        "stream is a name (a string).")
    value = table.to_pylist()[0]["stream"]
    assert message(CeqlInputError, lambda: list(q.run(table.to_pylist()))) == (
        f"Event 0 has {value!r} in stream attribute 'stream': a stream is a name (a string), "
        f"not of type {type(value).__name__}.")


# ---------------------------------------------------------------------- events that are not events

Q = "SELECT * FROM S WHERE A ; B"
RUN_ERRORS: list[tuple[str, Callable[[ceql.Query], Any], type[Exception], str]] = [
    ("run(int)", lambda q: list(q.run(anything(5))), CeqlTypeError,
     "Query.run takes an iterable of mappings (e.g. a list of dicts), not int."),
    ("run(dict)", lambda q: list(q.run(anything({"type": "A"}))), CeqlTypeError,
     "Query.run takes an iterable of mappings (e.g. a list of dicts), not dict (one event? "
     "put it in a list)."),
    ("run([int])", lambda q: list(q.run(anything([5]))), CeqlInputError,
     "Event 0 " + NOT_A_MAPPING.format("int")),
    ("run([tuple])", lambda q: list(q.run(anything([{"type": "A"}, ("login", "a")]))),
     CeqlInputError, "Event 1 " + NOT_A_MAPPING.format("tuple")),
    ("feed(str)", lambda q: q.evaluator().feed("abc"), CeqlTypeError,
     "Events must be an iterable of mappings (e.g. a list of dicts) or a pyarrow "
     "RecordBatch/Table, not str."),
    ("feed(None)", lambda q: q.evaluator().feed(None), CeqlTypeError,
     "Events must be an iterable of mappings (e.g. a list of dicts) or a pyarrow "
     "RecordBatch/Table, not NoneType."),
    ("feed(dict)", lambda q: q.evaluator().feed({"type": "A"}), CeqlTypeError,
     "Events must be an iterable of mappings (e.g. a list of dicts) or a pyarrow "
     "RecordBatch/Table, not dict (one event? put it in a list)."),
    ("feed(generator)", lambda q: q.evaluator().feed(e for e in [{"type": "A"}, 7]),
     CeqlInputError, "Event 1 " + NOT_A_MAPPING.format("int")),
]


@pytest.mark.parametrize(("fn", "kind", "text"), [c[1:] for c in RUN_ERRORS],
                         ids=[c[0] for c in RUN_ERRORS])
def test_not_events(fn: Callable[[ceql.Query], Any], kind: type[Exception], text: str) -> None:
    q = ceql.compile(Q)
    assert message(kind, lambda: fn(q)) == text


def test_not_an_event_is_named_by_its_stream_position() -> None:
    ev = ceql.compile(Q).evaluator()
    ev.feed([{"type": "A"}, {"type": "C"}])
    assert message(CeqlInputError, lambda: ev.feed([{"type": "B"}, [("type", "B")]])) == (
        "Event 3 " + NOT_A_MAPPING.format("list"))


def test_unhashable_partition_and_stream_values() -> None:
    q = ceql.compile(Q + " PARTITION BY [k]")
    rows: list[dict[str, Any]] = [{"type": "A", "k": 1}, {"type": "B", "k": [1]}]
    assert message(CeqlInputError, lambda: list(q.run(rows))) == (
        "Event 1 has [1] in partition attribute 'k': a partition value must be a number, "
        "string, boolean or timestamp, not of type list.")
    assert message(CeqlInputError, lambda: q.evaluator().feed(e for e in rows)) == (
        "Event 1 has a stream or partition value that cannot be a key (unhashable type: "
        "'list'); use numbers, strings, booleans or timestamps there.")
    streams = [{"type": "A", "k": 1}, {"type": "B", "k": 1, "stream": ["S"]}]
    assert message(CeqlInputError, lambda: list(q.run(streams))) == (
        "Event 1 has ['S'] in stream attribute 'stream': a stream is a name (a string), not "
        "of type list.")
    # an event of a stream not in FROM is never read further
    assert list(q.run([{"type": "A", "stream": "T", "k": [1]}])) == []


# ---------------------------------------------------------------------- the recursion limit

def test_recursion_allowance_survives_interleaved_threads() -> None:
    base = sys.getrecursionlimit()
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, int] = {}

    def first() -> None:
        with recursion_for(100):
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def second() -> None:
        a_in.wait(10)
        with recursion_for(2000):
            b_in.set()
            a_out.wait(10)
            seen["inside"] = sys.getrecursionlimit()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen["inside"] >= 4 * 2000 + 1000  # the first leaving did not pull it down
    assert sys.getrecursionlimit() == base


def test_concurrent_deep_compiles_restore_the_limit() -> None:
    base = sys.getrecursionlimit()
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(4):
                text = "SELECT * FROM S WHERE " + "(" * 300 + "A" + f" ; B{k}_{i})" * 300
                ceql.compile(text)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sys.getrecursionlimit() == base


def test_a_limit_set_meanwhile_is_kept() -> None:
    base = sys.getrecursionlimit()
    try:
        with recursion_for(100):
            sys.setrecursionlimit(base + 777)
        assert sys.getrecursionlimit() == base + 777
    finally:
        sys.setrecursionlimit(base)


# ---------------------------------------------------------------------- pickling

def _stream() -> Iterator[dict[str, Any]]:
    for i in range(60):
        yield {"type": "ABC"[i % 3] if i % 7 else "B", "k": i % 4, "t": i}


def test_a_running_evaluator_pickles() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B+ ; C PARTITION BY [k] WITHIN 30 SECONDS")
    rows = list(_stream())
    whole = [(m.positions, m.start_time, m.partition) for m in q.evaluator(time="t").feed(rows)]
    for cut in (1, 17, 41):
        ev = q.evaluator(time="t")
        first = ev.feed(rows[:cut])
        copy = pickle.loads(pickle.dumps(ev))
        assert (copy.time, copy.events_seen) == ("t", cut)
        got = [*first, *copy.feed(rows[cut:])]
        assert [(m.positions, m.start_time, m.partition) for m in got] == whole
