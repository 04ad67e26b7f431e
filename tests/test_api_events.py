"""A match shows its times and its events' fields (issue 10): ``Match.events``,
``Match.to_dict(fields=True)``, the ``repr``, and an evaluator that keeps only the events a later
match can include."""

from __future__ import annotations

import datetime as dt
import pickle
from typing import Any

import pyarrow as pa
import pytest

import ceql
from ceql.errors import CeqlValidationError

T0 = dt.datetime(2024, 3, 1, 9, 30)
ROWS: list[dict[str, Any]] = [
    {"type": "A", "ts": T0, "price": 10}, {"type": "C", "ts": T0, "price": 11},
    {"type": "B", "ts": T0 + dt.timedelta(seconds=5), "price": 12},
]
Q = "SELECT * FROM S WHERE A AS a ; B AS b WITHIN 1 MINUTE"


def test_run_keeps_the_events_of_each_match() -> None:
    [m] = ceql.compile(Q).run(ROWS, time="ts")
    assert m.events == (ROWS[0], ROWS[2])
    assert m.events[0] is ROWS[0]  # the caller's own mappings
    assert m.timed


def test_an_evaluator_keeps_them_when_asked() -> None:
    q = ceql.compile(Q)
    [plain] = q.evaluator(time="ts").feed(ROWS)
    assert plain.events is None
    for batch in (ROWS, pa.Table.from_pylist(ROWS)):
        [m] = q.evaluator(time="ts", keep_events=True).feed(batch)
        assert m.events == (ROWS[0], ROWS[2])


def test_to_dict_with_fields() -> None:
    [m] = ceql.compile(Q).run(ROWS, time="ts")
    assert m.to_dict() == {"start": 0, "end": 2, "positions": [0, 2]}
    assert m.to_dict(fields=True) == {
        "start": 0, "end": 2, "positions": [0, 2],
        "start_time": "2024-03-01T09:30:00", "end_time": "2024-03-01T09:30:05",
        "events": [{"type": "A", "ts": "2024-03-01T09:30:00", "price": 10},
                   {"type": "B", "ts": "2024-03-01T09:30:05", "price": 12}]}
    untimed = ceql.compile("SELECT a FROM S WHERE A AS a ; B PARTITION BY [k]")
    [u] = untimed.run([{"type": "A", "k": 1}, {"type": "B", "k": 1}])
    assert u.to_dict(fields=True) == {"start": 0, "end": 1, "positions": [0],
                                      "partition": [1], "events": [{"type": "A", "k": 1}]}
    [bare] = ceql.compile(Q).evaluator(time="ts").feed(ROWS)
    with pytest.raises(CeqlValidationError) as info:
        bare.to_dict(fields=True)
    assert str(info.value) == (
        "to_dict(fields=True) needs the events of the match, which this evaluation did not "
        "keep: Query.run keeps them; an evaluator keeps them with "
        "Query.evaluator(keep_events=True).")


def test_repr_shows_times_when_there_are_some() -> None:
    [m] = ceql.compile(Q).run(ROWS, time="ts")
    assert repr(m) == ("Match([0, 2], positions=[0, 2], "
                       "time=[2024-03-01T09:30:00, 2024-03-01T09:30:05])")
    [n] = ceql.compile(Q.replace("1 MINUTE", "9 EVENTS")).run(ROWS)
    assert repr(n) == "Match([0, 2], positions=[0, 2])"
    [k] = ceql.compile(Q.replace("1 MINUTE", "9 EVENTS")).run(ROWS, time="price")
    assert repr(k) == "Match([0, 2], positions=[0, 2], time=[10, 12])"


def test_a_projection_keeps_events_and_positions_aligned() -> None:
    q = ceql.compile("SELECT b FROM S WHERE A AS a ; C ; B AS b WITHIN 1 MINUTE")
    [m] = q.run(ROWS, time="ts")
    assert (m.positions, m.events) == ((2,), (ROWS[2],))


def test_memory_follows_the_live_runs() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B WITHIN 5 EVENTS")
    rows_ev = q.evaluator(keep_events=True)
    arrow_ev = q.evaluator(keep_events=True)
    batch = [{"type": "A" if i % 3 else "B", "i": i} for i in range(1000)]
    table = pa.Table.from_pylist(batch)
    for _ in range(40):
        assert rows_ev.feed(batch)[-1].events is not None
        arrow_ev.feed(table)
        rows = rows_ev._engine.kept  # type: ignore[attr-defined]
        arrow = arrow_ev._engine.kept  # type: ignore[attr-defined]
        assert rows is not None and arrow is not None
        assert len(rows.rows) <= 2 * 1024 + 1000
        assert len(arrow.batches) <= 2 and len(arrow.rows) <= 2 * 1024 + 1000
    # events that move no run are never kept
    ev = q.evaluator(keep_events=True)
    ev.feed([{"type": "C"}] * 500)
    assert ev._engine.kept.rows == {}  # type: ignore[attr-defined]


def test_events_survive_a_snapshot() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A AS a ; B AS b WITHIN 9 EVENTS")
    for first in ([{"type": "A", "x": 1}, {"type": "C"}],
                  pa.Table.from_pylist([{"type": "A", "x": 1}, {"type": "C", "x": None}])):
        ev = q.evaluator(keep_events=True)
        ev.feed(first)
        for again in (q.restore(ev.snapshot()), pickle.loads(pickle.dumps(ev))):
            assert again.keep_events
            [m] = again.feed([{"type": "B", "x": 2}])
            assert m.events == ({"type": "A", "x": 1}, {"type": "B", "x": 2})
