"""``Evaluator.oldest_live_position``: no later match reaches before it, and it moves on as soon
as the runs that held it die (what lets MATCH_CEQL forget rows, issue 9)."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, note

import ceql
from ceql.frontends.ceql import format_query
from strategies import PROFILE, Case, cases


def _events(n: int, weights: tuple[int, int, int], seed: int = 7) -> list[dict[str, Any]]:
    types = random.Random(seed).choices("ABC", weights=weights, k=n)
    return [{"type": t, "k": i % 3, "ts": i // 2} for i, t in enumerate(types)]


@PROFILE
@given(cases())
def test_no_later_match_reaches_before_the_oldest_live_position(case: Case) -> None:
    q, events, time = case
    text = format_query(q)
    note(text)
    ev = ceql.compile(text).evaluator(time=time)
    low = 0
    for i, e in enumerate(events):
        for m in ev.feed([e]):
            assert min((m.start_position, *m.positions)) >= low, (i, m, low)
        bound = ev.oldest_live_position()
        assert low <= bound <= ev.events_seen  # never decreases, never ahead of the input
        low = bound


@pytest.mark.parametrize("arrow", [False, True])
def test_it_follows_runs_that_die(arrow: bool) -> None:
    events = _events(6_000, (1, 1, 1))
    queries = {
        "SELECT * FROM S WHERE A : B": 1,  # at most the last event, an A, can start a run
        "SELECT STRICT * FROM S WHERE A ; B": 1,
        "SELECT * FROM S WHERE A ; B CONSUME BY PARTITION": None,
        "SELECT * FROM S WHERE A ; B PARTITION BY [k] CONSUME BY ANY": None,
    }
    for text, lag in queries.items():
        ev = ceql.compile(text).evaluator(time="ts")
        since_b = 0  # where runs may start after the last consuming match (an upper bound)
        for s in range(0, len(events), 250):
            chunk = events[s:s + 250]
            matched = ev.feed(pa.RecordBatch.from_pylist(chunk) if arrow else chunk)
            if matched:
                since_b = max(m.end_position for m in matched) + 1
            bound = ev.oldest_live_position()
            if lag is not None:
                assert bound >= ev.events_seen - lag, text
            else:  # no run is older than the first A after the last match
                first_a = next((i for i in range(since_b, ev.events_seen)
                                if events[i]["type"] == "A"), ev.events_seen)
                assert bound >= first_a, text


def test_it_stays_at_a_run_that_lives() -> None:
    events = [{"type": "C", "ts": 0}] * 3 + _events(5_000, (1, 1, 200))
    events[3] = {"type": "A", "ts": 0}
    ev = ceql.compile("SELECT * FROM S WHERE A ; B").evaluator(time="ts")
    for s in range(0, len(events), 500):
        ev.feed(events[s:s + 500])
        assert ev.oldest_live_position() == 3  # no window: the first A pairs with every later B


def test_a_window_bounds_it() -> None:
    ev = ceql.compile("SELECT * FROM S WHERE A ; B+ ; C WITHIN 20 EVENTS").evaluator(time="ts")
    events = _events(6_000, (1, 1, 1))
    for s in range(0, len(events), 500):
        ev.feed(events[s:s + 500])
        assert ev.oldest_live_position() >= ev.events_seen - 3 * 20
