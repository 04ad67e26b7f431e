"""Whatever a caller passes, only :class:`ceql.CeqlError`s come out (issue 10, defect 2): every
public entry point fed events of every shape and value, and snapshots of every kind of bytes.

A caller's own object that raises (a mapping whose ``get`` fails, a generator that raises) is
the caller's error and passes through untouched; that is not fuzzed here.
"""

from __future__ import annotations

import collections
import datetime as dt
import decimal
import math
import pickle
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import ceql
from ceql.errors import CeqlInputError, CeqlTypeError
from ceql.runtime.snapshot import FORMAT, MAGIC, fingerprint
from strategies import PROFILE

QUERIES = [
    "SELECT * FROM S WHERE A ; B",
    "SELECT * FROM S WHERE A AS a ; B+ AS b FILTER a[x > 5] AND b[y = 'u'] PARTITION BY [k]",
    "SELECT * FROM S WHERE A AS a ; B AS b FILTER a[x * 2 IN RANGE(1, 9)] AND b[x IN {1, 2}] "
    "WITHIN 3 EVENTS",
    "SELECT * FROM S, T WHERE S>A ; T>B FILTER A[y LIKE '^a'] WITHIN 5 [w]",
    "SELECT NEXT * FROM S WHERE A ; B PARTITION BY [k] CONSUME BY ANY LIMIT 2",
    "SELECT MAX * FROM S WHERE (A OR B)+ AS r FILTER r[-x < y] WITHIN 2 SECONDS",
]

_odd: Any = object()
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.sampled_from([2**63, -(2**64), 10**400]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4),
    st.sampled_from(["A", "B", "S", "T", "u", "7", ""]), st.binary(max_size=3),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(),
                                                          max_size=2),
    st.sets(st.integers(), max_size=2), st.tuples(st.integers()),
    st.frozensets(st.integers(), max_size=2),
    st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)),
    st.datetimes(timezones=st.just(dt.UTC)), st.dates(), st.timedeltas(),
    st.decimals(allow_nan=True), st.sampled_from([np.int64(3), np.float64("nan"),
                                                  np.datetime64("2024-01-01"), _odd]),
)
KEYS = ["type", "stream", "x", "y", "k", "w", "t"]


@st.composite
def events(draw: st.DrawFn) -> Any:
    """One event: usually a mapping of some keys to anything, sometimes not a mapping."""
    shape = draw(st.integers(0, 19))
    if shape == 0:
        return draw(VALUES)
    if shape == 1:
        return [("type", "A")]
    d: dict[Any, Any] = {}
    for key in KEYS:
        if draw(st.booleans()):
            d[key] = draw(st.one_of(VALUES, st.sampled_from(["A", "B", "S", "T", 1, 2])))
    if shape == 2:
        d[draw(st.sampled_from([1, None, ("t",)]))] = 1
    if shape == 3:
        return types.MappingProxyType(d)
    if shape == 4:
        return collections.OrderedDict(d)
    return d


def only_ceql_errors(fn: Callable[[], Any]) -> None:
    """Run ``fn``; a failure must be a CeqlError."""
    try:
        fn()
    except ceql.CeqlError:
        pass


_ARROW_SAFE = (type(None), bool, int, float, str, bytes, dt.datetime, dt.date, dt.timedelta,
               list, dict)


def _arrow(rows: list[Any]) -> pa.Table | None:
    """The dict events as a table, when pyarrow takes them (pyarrow itself has crashed on some
    mixes of exotic values, e.g. decimals: only plain values go)."""
    plain = [r for r in rows if type(r) is dict and all(
        type(k) is str and type(v) in _ARROW_SAFE and (type(v) is not int or -2**63 <= v < 2**63)
        for k, v in r.items())]
    try:
        return pa.Table.from_pylist(plain)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None  # pyarrow's own refusal: nothing reaches ceql


@PROFILE
@given(text=st.sampled_from(QUERIES), rows=st.lists(events(), max_size=7),
       time=st.sampled_from([None, "t"]), cut=st.integers(0, 7))
def test_events_of_any_shape(text: str, rows: list[Any], time: str | None, cut: int) -> None:
    note(repr(rows))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = ceql.compile(text)
        only_ceql_errors(lambda: list(q.run(rows, time=time)))
        only_ceql_errors(lambda: list(q.run(rows, time=time, sort=True)))
        only_ceql_errors(lambda: list(q.run(iter(rows), time=time, time_format="%Y")))

        def feed_rows() -> None:
            ev = q.evaluator(time=time, keep_events=True)
            try:
                list(ev.iter_feed(rows[:cut]))
            finally:
                data = ev.snapshot()
            q.restore(data).feed(rows[cut:])
        only_ceql_errors(feed_rows)
        table = _arrow(rows)
        if table is not None:
            def feed_arrow() -> None:
                ev = q.evaluator(time=time, keep_events=True)
                try:
                    ev.feed(table.slice(0, cut))
                finally:
                    data = ev.snapshot()
                for rb in table.slice(cut).to_batches(max_chunksize=2):
                    q.restore(data).feed(rb)
            only_ceql_errors(feed_arrow)


@PROFILE
@given(data=st.one_of(st.binary(max_size=40), st.binary(max_size=40).map(lambda b: MAGIC + b)))
def test_restore_any_bytes(data: bytes) -> None:
    q = ceql.compile(QUERIES[1])
    with pytest.raises(CeqlInputError):
        q.restore(data)


PAYLOAD = {"labels": [], "nodes": [], "partitions": [], "offset": 0, "since_sweep": 0,
           "epoch": 0, "eps": None, "clock": (None, None, False, None, None),
           "options": (None, "type", "stream", "s")}


@PROFILE
@given(drop=st.sampled_from(sorted(PAYLOAD)), junk=st.one_of(VALUES, st.just("x")))
def test_restore_a_pickle_that_is_no_snapshot(drop: str, junk: Any) -> None:
    """A well-formed pickle with a key missing or of the wrong shape is a damaged snapshot."""
    q = ceql.compile(QUERIES[1])
    base = {"format": FORMAT, "fingerprint": fingerprint(q), **PAYLOAD}
    for payload in ({k: v for k, v in base.items() if k != drop}, {**base, drop: junk}):
        try:
            data = MAGIC + pickle.dumps(payload)
        except Exception:
            continue  # a value that does not pickle
        try:
            q.restore(data).feed([{"type": "A", "k": 1}, {"type": "B", "k": 1}])
        except ceql.CeqlError as exc:
            assert isinstance(exc, CeqlInputError)
    assert str(_error(lambda: q.restore(MAGIC + pickle.dumps({"format": 2})))) == (
        "The snapshot was taken from another query: restore it with the query whose evaluator "
        "took it.")
    assert str(_error(lambda: q.restore(MAGIC + pickle.dumps({"format": 7})))) == (
        "The snapshot has format 7; this ceql reads formats 1, 2, 3, 4, 5. Restore it with the "
        "ceql version that took it.")


def _error(fn: Callable[[], Any]) -> ceql.CeqlError:
    with pytest.raises(ceql.CeqlError) as info:
        fn()
    return info.value


# ---------------------------------------------------------------------- what the fuzzing found

@pytest.mark.parametrize(("option", "value", "text"), [
    ("time", 5, "time must be a string (an attribute name) or None, not int."),
    ("type_key", ["a"], "type_key must be a string (an attribute name), not list."),
    ("stream_key", None, "stream_key must be a string (an attribute name), not NoneType."),
    ("time_format", 1, "time_format must be a string (a strptime format) or None, not int."),
    ("keep_events", "yes", "keep_events must be True or False, not str."),
])
def test_options_of_the_wrong_type(option: str, value: Any, text: str) -> None:
    q = ceql.compile(QUERIES[0])
    assert str(_error(lambda: q.evaluator(**{option: value}))) == text
    assert isinstance(_error(lambda: q.evaluator(**{option: value})), CeqlTypeError)
    if option != "keep_events":
        assert str(_error(lambda: list(q.run([], **{option: value})))) == text


def test_an_integer_time_beyond_floats_with_a_float_one() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 5 [w]")
    rows = [{"type": "A", "k": 1, "w": 1e308}, {"type": "B", "k": 1, "w": 10**400}]
    assert str(_error(lambda: list(q.run(rows)))) == (
        "Event 1 ({'type': 'B', 'k': 1, 'w': 100000000000000000...0000000000000000000}): its "
        "'w' cannot be compared with the others: an integer beyond about 1.8e308 and a float "
        "do not subtract. Use numbers within the float range, or integers only.")
    timed = ceql.compile("SELECT * FROM S WHERE A ; B WITHIN 5 SECONDS")
    rows = [{"type": "A", "t": 1.5}, {"type": "B", "t": 10**400}]
    assert isinstance(_error(lambda: list(timed.run(rows, time="t"))), CeqlInputError)


def test_numpy_and_decimal_times_are_numbers() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B WITHIN 2 SECONDS")
    rows = [{"type": "A", "t": np.int64(1)}, {"type": "B", "t": decimal.Decimal("2.5")},
            {"type": "B", "t": np.float32(4)}]
    assert [(m.positions, m.end_time) for m in q.run(rows, time="t")] == [((0, 1), 2.5)]
    stamps = [{"type": "A", "t": np.datetime64("2024-01-01T00:00:00")},
              {"type": "B", "t": np.datetime64("2024-01-01T00:00:01")}]
    [m] = q.run(stamps, time="t")
    assert m.end_time == dt.datetime(2024, 1, 1, 0, 0, 1)


def test_numpy_window_attribute() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B WITHIN 5 [w]")
    rows = [{"type": "A", "w": np.int32(1)}, {"type": "B", "w": np.int64(3)}]
    assert [m.positions for m in q.run(rows)] == [(0, 1)]
    nan = [{"type": "A", "w": 1}, {"type": "B", "w": math.nan}]
    assert str(_error(lambda: list(q.run(nan)))) == (
        "Event 1 has no number in attribute 'w', which WITHIN measures the window on (got nan);"
        " the event: {'type': 'B', 'w': nan}.")
    table = pa.table({"type": ["A", "B"], "w": [1.0, math.nan]})
    assert str(_error(lambda: q.evaluator().feed(table))) == (
        "Event 1 has no number in attribute 'w', which WITHIN measures the window on; the "
        "event: {'type': 'B', 'w': nan}.")


def test_two_columns_of_one_name() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B WITHIN 5 [w]")
    table = pa.Table.from_arrays([pa.array(["A", "B"]), pa.array([1, 2]), pa.array([1, 2])],
                                 names=["type", "w", "w"])
    assert str(_error(lambda: q.evaluator().feed(table))) == (
        "The events have 2 columns named 'w', which WITHIN reads: rename or drop all but one.")
    timed = ceql.compile("SELECT * FROM S WHERE A ; B")
    table = table.rename_columns(["type", "t", "t"])
    assert str(_error(lambda: timed.evaluator(time="t").feed(table))) == (
        "The events have 2 columns named 't', which the time reads: rename or drop all but one.")


def test_a_dictionary_encoded_time_column() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B WITHIN 2 SECONDS")
    table = pa.table({"type": ["A", "B"], "t": pa.array([1, 2]).dictionary_encode()})
    assert [m.positions for m in q.evaluator(time="t").feed(table)] == [(0, 1)]


class DataFrame:
    """What pandas' DataFrame looks like to ceql: iterating gives the column names."""

    columns: ClassVar[list[str]] = ["type"]

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns)


def test_a_data_frame_is_named() -> None:
    q = ceql.compile(QUERIES[0])
    text = ("Events must be an iterable of mappings or a pyarrow RecordBatch/Table, not a "
            "DataFrame (iterating one gives its column names): pass "
            "pyarrow.Table.from_pandas(df) or df.to_dict('records').")
    assert str(_error(lambda: q.evaluator().feed(DataFrame()))) == text
    assert isinstance(_error(lambda: q.evaluator().feed(DataFrame())), CeqlTypeError)


def test_a_snapshot_that_holds_what_does_not_pickle() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B PARTITION BY [k]")
    ev = q.evaluator(keep_events=True)
    ev.feed([{"type": "A", "k": 1, "f": lambda: 1}])
    msg = str(_error(ev.snapshot))
    assert msg.startswith("Cannot save event 0 with the snapshot (it holds a value of type "
                          "builtins.function): ")
    assert msg.endswith("so they must be plain values (numbers, text, bytes, decimals, dates "
                        "and times, lists and dicts of those), or use keep_events=False.")
    plain = q.evaluator()
    plain.feed([{"type": "A", "k": _Unpicklable()}])
    assert str(_error(plain.snapshot)).startswith(
        "Cannot save the evaluation: it holds a value of type test_api_fuzz._Unpicklable (a "
        "partition key,")


class _Unpicklable:
    def __reduce__(self) -> Any:
        raise TypeError("no")

    def __hash__(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:
        return other is self
