"""Saved state: an evaluation cut anywhere, saved, restored (in an automaton numbered afresh)
and continued gives exactly what one uninterrupted evaluation gives."""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import ceql
from ceql.frontends.ceql import format_query
from strategies import PROFILE, Case, cases

Full = tuple[int, int, tuple[int, ...], tuple[Any, ...], Any, Any, tuple[tuple[str, Any], ...]]


def full(m: ceql.Match) -> Full:
    """Everything a match reports."""
    return (m.end_position, m.start_position, tuple(m.positions), tuple(m.partition),
            m.start_time, m.end_time, tuple(sorted(m.variables.items())))


def _fresh(text: str, k: int) -> ceql.Query:
    # another max_states is another cached Query, so another automaton, numbered afresh
    return ceql.compile(text, max_states=ceql.DEFAULT_MAX_STATES + k)


def _pieces(events: Any, cuts: Sequence[int]) -> list[Any]:
    """``events`` (a list or an Arrow table) cut at ``cuts``."""
    n = len(events)
    points = sorted({min(c, n) for c in cuts})
    out, start = [], 0
    for p in [*points, n]:
        out.append(events.slice(start, p - start) if isinstance(events, pa.Table)
                   else events[start:p])
        start = p
    return out


def _check(case: Case, cuts: Sequence[int], arrow: bool, through_pickle: bool) -> None:
    q, rows, time = case
    text = format_query(q)
    note(f"query:\n{text}\nevents: {rows}\ntime={time!r} cuts={cuts}")
    # one schema for the whole stream (from_pylist alone would take the first row's keys)
    names = list(dict.fromkeys(k for r in rows for k in r))
    events: Any = pa.Table.from_pylist(rows, schema=pa.Table.from_pylist(
        [{k: r.get(k) for k in names} for r in rows]).schema) if arrow and rows else rows
    try:
        whole = ceql.compile(text).evaluator(time=time)
        want = [full(m) for m in whole.feed(events)]
    except ceql.CeqlInputError:
        return  # the stream itself is refused (e.g. time kinds mixed); nothing to continue
    got: list[Full] = []
    ev = ceql.compile(text).evaluator(time=time)
    for k, piece in enumerate(_pieces(events, cuts)):
        got += [full(m) for m in ev.feed(piece)]
        data = pickle.dumps(ev) if through_pickle else ev.snapshot()
        ev = pickle.loads(data) if through_pickle else _fresh(text, k + 1).restore(data)
    assert got == want
    assert ev.events_seen == len(rows)


@PROFILE
@given(cases(), st.lists(st.integers(0, 8), max_size=4), st.booleans())
def test_a_restored_evaluator_continues_exactly_rows(case: Case, cuts: list[int],
                                                      through_pickle: bool) -> None:
    _check(case, cuts, arrow=False, through_pickle=through_pickle)


@PROFILE
@given(cases(mixed=False), st.lists(st.integers(0, 8), max_size=4))
def test_a_restored_evaluator_continues_exactly_arrow(case: Case, cuts: list[int]) -> None:
    _check(case, cuts, arrow=True, through_pickle=False)


def test_snapshot_keeps_only_what_the_window_can_use() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 100 SECONDS")
    ev = q.evaluator(time="t")
    ev.feed([{"type": "A", "k": i, "t": i} for i in range(1000)])
    big = ev.snapshot()
    assert q.restore(big).live().partitions == 101  # t = 899 .. 999 can still match
    ev.feed([{"type": "C", "k": -1, "t": 5000}])  # everything before has left the window
    small = ev.snapshot()
    assert len(small) < len(big) / 10
    restored = q.restore(small)
    assert restored.live().partitions == 0
    assert restored.feed([{"type": "A", "k": 1, "t": 5001}, {"type": "B", "k": 1, "t": 5002}])


def test_long_chains_are_saved_without_recursion() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A : B:+ : C")  # one match, 20 002 events long
    ev = q.evaluator()
    ev.feed([{"type": "A"}] + [{"type": "B"}] * 20_000)
    restored = q.restore(ev.snapshot())
    (m,) = restored.feed([{"type": "C"}])
    assert m.positions == tuple(range(20_002))


def test_restore_refuses_what_it_cannot_continue() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B")
    other = ceql.compile("SELECT * FROM S WHERE A ; C")
    data = q.evaluator().snapshot()
    with pytest.raises(ceql.CeqlInputError) as e:
        other.restore(data)
    assert str(e.value) == ("The snapshot was taken from another query: restore it with the "
                            "query whose evaluator took it.")
    with pytest.raises(ceql.CeqlInputError, match=r"^Not a ceql snapshot: pass the bytes "):
        q.restore(b"hello")
    with pytest.raises(ceql.CeqlInputError, match=r"^The ceql snapshot is damaged"):
        q.restore(data[:-5])


def test_restore_keeps_the_options() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A ; B WITHIN 2 SECONDS")
    ev = q.evaluator(time="ts", type_key="kind", time_unit="ms")
    ev.feed([{"kind": "A", "ts": 0}])
    r = q.restore(ev.snapshot())
    assert (r.time, r.type_key, r.stream_key, r.time_unit) == ("ts", "kind", "stream", "ms")
    assert [m.positions for m in r.feed([{"kind": "B", "ts": 1500}])] == [(0, 1)]


_SHAPES = [
    "SELECT * FROM S WHERE A ; B WITHIN 3 EVENTS",
    "SELECT * FROM S WHERE A ; B+ ; C WITHIN 4 EVENTS",
    "SELECT * FROM S WHERE A ; B PARTITION BY [g] WITHIN 2 EVENTS",
    "SELECT * FROM S WHERE A ; B+ WITHIN 3 SECONDS",
    "SELECT * FROM S WHERE A ; B WITHIN 2 [a]",
    "SELECT * FROM S WHERE A : B:+ : C",
    "SELECT STRICT * FROM S WHERE A ; B",
    "SELECT NEXT * FROM S WHERE A ; B+ ; C",
    "SELECT LAST * FROM S WHERE (A OR B)+ ; C PARTITION BY [g]",
    "SELECT MAX * FROM S WHERE A ; B+ ; C WITHIN 6 EVENTS",
    "SELECT * FROM S WHERE A ; B PARTITION BY [g] CONSUME BY ANY",
    "SELECT * FROM S WHERE A ; B PARTITION BY [g] CONSUME BY PARTITION",
    "SELECT * FROM S WHERE A ; B+ LIMIT 2",
    "SELECT b FROM S WHERE (A AS x) ; (B AS b)+ FILTER b[a > 0]",
    # β events recorded in the registers of the runs waiting in a NOT's gap
    "SELECT * FROM S WHERE A AS x ; NOT B AS n ; C AS c FILTER n[a < c.a]",
    "SELECT NEXT * FROM S WHERE (A AS x ; NOT B AS n ; C AS c)+ FILTER n[a >= x.a] "
    "AND n[g = c.g] WITHIN 12 EVENTS",
]


@pytest.mark.parametrize("text", _SHAPES)
@pytest.mark.parametrize("arrow", [False, True])
def test_every_cut_of_every_shape(text: str, arrow: bool) -> None:
    import random

    rnd = random.Random(7)
    rows = [{"type": rnd.choice("AABBC"), "g": rnd.randint(0, 1), "a": i // 2, "ts": i // 2}
            for i in range(14)]
    time = "ts" if "SECONDS" in text else None
    whole: Any = pa.Table.from_pylist(rows) if arrow else rows
    want = [full(m) for m in ceql.compile(text).evaluator(time=time).feed(whole)]
    assert want, "the shape must produce matches on this stream"
    for cut in range(len(rows) + 1):
        for cut2 in (cut, min(cut + 3, len(rows))):
            ev = ceql.compile(text).evaluator(time=time)
            got = []
            for k, piece in enumerate(_pieces(whole, [cut, cut2])):
                got += [full(m) for m in ev.feed(piece)]
                ev = _fresh(text, 100 + k).restore(ev.snapshot())
            assert got == want, f"cut at {cut} and {cut2}"
