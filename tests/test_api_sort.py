"""``Query.run(..., sort=True)``: every index a match reports is the caller's (issue 10,
defect 1)."""

from __future__ import annotations

import datetime as dt
import warnings
from typing import Any

from hypothesis import given, note
from hypothesis import strategies as st

import ceql
from strategies import PROFILE

FUNNEL = "SELECT * FROM S WHERE login AS l ; cart AS c ; purchase AS p"


def test_variables_name_the_events_they_bind() -> None:
    events = [{"type": "purchase", "ts": 30}, {"type": "login", "ts": 10},
              {"type": "cart", "ts": 20}]
    [m] = ceql.compile(FUNNEL).run(events, time="ts", sort=True)
    # (a type name that only repeats its alias is not reported: login AS l reports l)
    assert m.variables == {"l": (1,), "c": (2,), "p": (0,)}
    assert m.positions == (0, 1, 2)
    # start and end: the first and last events in time order, by their input indices
    assert (m.start_position, m.end_position) == (1, 0)
    assert (m.start_time, m.end_time) == (10, 30)
    assert m.events == tuple(events)


def test_datetimes_and_a_projection() -> None:
    t = dt.datetime(2024, 5, 1, 12)
    events = [{"type": "B", "ts": t + dt.timedelta(seconds=5)}, {"type": "C", "ts": t},
              {"type": "A", "ts": t - dt.timedelta(seconds=5)}]
    q = ceql.compile("SELECT a, b FROM S WHERE A AS a ; C ; B AS b WITHIN 20 SECONDS")
    [m] = q.run(events, time="ts", sort=True)
    assert m.variables == {"a": (2,), "b": (0,)}
    assert m.positions == (0, 2)
    assert m.events == (events[0], events[2])
    assert (m.start_position, m.end_position) == (2, 0)
    assert m.start_time == t - dt.timedelta(seconds=5) and m.end_time == events[0]["ts"]


QUERIES = [
    FUNNEL,
    "SELECT * FROM S WHERE A AS a ; (B OR C)+ AS bs ; A AS z WITHIN 6 EVENTS",
    "SELECT b FROM S WHERE A AS a ; B AS b FILTER a[x > 1] PARTITION BY [k]",
    "SELECT NEXT * FROM S WHERE (A OR B) AS x ; C AS y",
]
TYPES = ["login", "cart", "purchase", "A", "B", "C"]


def _report(m: ceql.Match) -> tuple[Any, ...]:
    return (m.start_position, m.end_position, m.positions, m.partition, m.start_time,
            m.end_time, tuple(sorted(m.variables.items())),
            tuple(tuple(sorted(e.items())) for e in m.events or ()))


@PROFILE
@given(text=st.sampled_from(QUERIES),
       rows=st.lists(st.fixed_dictionaries({"type": st.sampled_from(TYPES),
                                            "ts": st.integers(0, 6),
                                            "x": st.integers(0, 3),
                                            "k": st.integers(0, 1)}), max_size=9))
def test_sorting_is_running_the_sorted_list(text: str, rows: list[dict[str, Any]]) -> None:
    """Sorting is running the events in time order (stable), then renaming each index."""
    note(f"{text}\n{rows}")
    q = ceql.compile(text)
    order = sorted(range(len(rows)), key=lambda i: rows[i]["ts"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ceql.UnseenNameWarning)
        got = [_report(m) for m in q.run(rows, time="ts", sort=True)]
        presorted = list(q.run([rows[i] for i in order], time="ts"))
    want = []
    for m in presorted:
        events = m.events or ()
        moved = sorted(zip([order[p] for p in m.positions], m.events or (), strict=True))
        variables = {v: tuple(sorted(order[p] for p in ps)) for v, ps in m.variables.items()}
        want.append((order[m.start_position], order[m.end_position],
                     tuple(p for p, _ in moved), m.partition, m.start_time, m.end_time,
                     tuple(sorted(variables.items())),
                     tuple(tuple(sorted(e.items())) for _, e in moved)))
        assert len(events) == len(m.positions)
    assert got == want
    for r in got:
        assert r[4] <= r[5]  # start_time <= end_time, whatever the indices say
