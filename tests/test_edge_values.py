"""Edge values (issue 28, item 6): NaN partition keys are one key on every surface (SQL's
GROUP BY: NaN equals NaN), an implied key's NaN fails the equality it stands for, and
±inf times are refused like NaN."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import ceql
from reference import reference_matches

PARTITIONED = "SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 10 SECONDS"
IMPLIED = "SELECT * FROM S WHERE A ; B FILTER B[k = A.k] WITHIN 10 SECONDS"
EXPLICIT_EQ = "SELECT * FROM S WHERE A ; B FILTER B[k = A.k] PARTITION BY [k] WITHIN 10 SECONDS"


def _rows(a: Any, b: Any) -> list[dict[str, Any]]:
    return [{"type": "A", "k": a, "t": 1}, {"type": "B", "k": b, "t": 2}]


def _spans(matches: Any) -> list[tuple[int, int]]:
    return [(m.start_position, m.end_position) for m in matches]


def _by_rows(text: str, rows: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return _spans(ceql.compile(text).run(rows, time="t"))


def _by_arrow(text: str, rows: list[dict[str, Any]], split: bool) -> list[tuple[int, int]]:
    ev = ceql.compile(text).evaluator(time="t")
    batches = ([pa.RecordBatch.from_pylist(rows[:1]), pa.RecordBatch.from_pylist(rows[1:])]
               if split else [pa.RecordBatch.from_pylist(rows)])
    return _spans(m for rb in batches for m in ev.feed(rb))


NANS = {
    "one NaN object": (lambda: (lambda n: (n, n))(float("nan"))),
    "distinct NaN objects": (lambda: (float("nan"), float("nan"))),
    "NumPy NaN": (lambda: (np.float64("nan"), math.nan)),
}


@pytest.mark.parametrize("how", list(NANS))
def test_nan_partition_keys_are_one_key_on_rows(how: str) -> None:
    a, b = NANS[how]()
    assert _by_rows(PARTITIONED, _rows(a, b)) == [(0, 1)]


@pytest.mark.parametrize("split", [False, True])
def test_nan_partition_keys_are_one_key_on_arrow(split: bool) -> None:
    # batch by batch Arrow hands out a new NaN object per batch
    assert _by_arrow(PARTITIONED, _rows(math.nan, math.nan), split) == [(0, 1)]


def test_nan_key_partition_survives_a_snapshot() -> None:
    q = ceql.compile(PARTITIONED)
    ev = q.evaluator(time="t")
    assert ev.feed(_rows(math.nan, math.nan)[:1]) == []
    again = q.restore(ev.snapshot())
    assert _spans(again.feed([{"type": "B", "k": float("nan"), "t": 2}])) == [(0, 1)]


def test_zero_and_negative_zero_are_one_key_on_every_path() -> None:
    rows = [{"type": "A", "k": 0.0, "t": 1}, {"type": "A", "k": -0.0, "t": 2},
            {"type": "B", "k": 0.0, "t": 3}]
    want = [(0, 2), (1, 2)]
    assert sorted(_by_rows(PARTITIONED, rows)) == want
    assert sorted(_by_arrow(PARTITIONED, rows, split=False)) == want


@pytest.mark.parametrize("text", [IMPLIED, EXPLICIT_EQ])
def test_an_equality_on_nan_fails_whatever_the_plan(text: str) -> None:
    """``B[k = A.k]`` is unknown on NaN (NaN compares as NULL): no match, whether the
    equality became an implied key, sits under an explicit PARTITION BY, or is checked."""
    rows = _rows(math.nan, math.nan)
    assert _by_rows(text, rows) == []
    assert _by_arrow(text, rows, split=False) == []
    assert _by_arrow(text, rows, split=True) == []
    ref = reference_matches(ceql.compile(text).ast, rows, time="t")
    assert ref == []


def test_the_reference_groups_nan_with_nan() -> None:
    ref = reference_matches(ceql.compile(PARTITIONED).ast, _rows(math.nan, float("nan")),
                            time="t")
    assert [(m.start, m.end) for m in ref] == [(0, 1)]


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_infinite_times_are_refused_on_rows_and_arrow(bad: float) -> None:
    rows = [{"type": "A", "k": 1, "t": 1.0}, {"type": "B", "k": 1, "t": bad}]
    q = ceql.compile(PARTITIONED)
    shown = "nan" if math.isnan(bad) else str(bad)
    for feed in (lambda: list(q.run(rows, time="t")),
                 lambda: q.evaluator(time="t").feed(pa.RecordBatch.from_pylist(rows))):
        with pytest.raises(ceql.CeqlInputError) as err:
            feed()
        assert str(err.value).startswith(
            f"Event 1 has time {shown} in attribute 't': a time must be a finite number")


def test_an_infinite_first_time_is_refused() -> None:
    q = ceql.compile(PARTITIONED)
    with pytest.raises(ceql.CeqlInputError, match="finite number"):
        list(q.run([{"type": "A", "k": 1, "t": -math.inf}], time="t"))


@pytest.mark.parametrize("bad", [math.inf, -math.inf])
def test_infinite_window_values_are_refused(bad: float) -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B WITHIN 5 [w]")
    rows = [{"type": "A", "w": 1.0}, {"type": "B", "w": bad}]
    with pytest.raises(ceql.CeqlInputError, match="has no number in attribute 'w'"):
        list(q.run(rows))
    with pytest.raises(ceql.CeqlInputError, match="has no number in attribute 'w'"):
        q.evaluator().feed(pa.RecordBatch.from_pylist(rows))
