"""Property tests of lazy evaluation: it gives exactly the eager engine's matches, in the same
order and from the same batch, on random eligible queries (``tests/strategies.py``, with AND
and NOT between elements too) and on shapes with a rare event first, in the middle, last,
under AND, NOT, PARTITION BY, LIMIT and CONSUME BY; over random batch cuts (inside a window
too), windows in time and in an attribute, Arrow batches mixed with rows fed one by one, and
snapshots taken and restored in between."""

from __future__ import annotations

import datetime as dt
import pickle
from dataclasses import replace
from fractions import Fraction
from itertools import pairwise
from typing import Any

import pyarrow as pa
from hypothesis import assume, given, note
from hypothesis import strategies as st

import ceql
from ceql.frontends.ceql import format_query
from ceql.ir import formula_nodes
from ceql.ir import nodes as A
from strategies import PROFILE, TIME_WINDOWS, events_lists, queries

Key = tuple[int, int, tuple[int, ...], tuple[Any, ...], tuple[tuple[str, tuple[int, ...]], ...]]


def keys(matches: list[ceql.Match]) -> list[Key]:
    """``(end, start, positions, partition, variables)`` of each match, in output order."""
    return [(m.end_position, m.start_position, tuple(m.positions), tuple(m.partition),
             tuple(sorted((k, tuple(v)) for k, v in m.variables.items()))) for m in matches]


def arrow_table(events: list[dict[str, Any]]) -> pa.Table:
    """Every attribute as a column (missing → null)."""
    names = list(dict.fromkeys(k for e in events for k in e)) or ["type"]
    return pa.table({k: pa.array([e.get(k) for e in events]) for k in names})


def batches(table: pa.Table, cuts: list[int]) -> list[pa.RecordBatch]:
    n = table.num_rows
    return [pa.RecordBatch.from_arrays([c.combine_chunks() for c in table.slice(a, b - a).columns],
                                       names=table.column_names)
            for a, b in pairwise([0, *cuts, n])]


def per_batch(q: ceql.Query, parts: list[Any], time: str | None, lazy: bool | None,
              keep_events: bool = False) -> list[list[Key]]:
    ev = q.evaluator(time=time, lazy=lazy, keep_events=keep_events)
    return [keys(ev.feed(b)) for b in parts]


def check_lazy_equals_eager(text: str, events: list[dict[str, Any]], time: str | None,
                            cuts: list[int]) -> ceql.Evaluator:
    """Lazy (forced and planned) against eager, batch by batch; returns the forced one."""
    q = ceql.compile(text)
    table = arrow_table(events)
    parts = batches(table, cuts)
    eager = per_batch(q, parts, time, False)
    assert [k for b in eager for k in b] == keys(q.evaluator(time=time).feed(table))
    ev = q.evaluator(time=time, lazy=True)
    forced = [keys(ev.feed(b)) for b in parts]
    assert forced == eager
    assert per_batch(q, parts, time, None) == eager
    return ev


def _types(q: A.Query) -> tuple[str, ...]:
    return tuple(sorted({n.name for n in formula_nodes(q.where) if isinstance(n, A.EventType)}))


@st.composite
def eligible_cases(draw: st.DrawFn) -> tuple[str, list[dict[str, Any]], str | None]:
    """A random query made eligible where a draw is cheap to fix (strategy, window), a
    longer stream of its types, and the time option."""
    q = draw(queries(conj_neg=draw(st.booleans())))
    if draw(st.booleans()):
        within = A.Within("time", draw(st.sampled_from(TIME_WINDOWS)))
    else:
        within = A.Within("attr", Fraction(draw(st.integers(0, 4))), "ts")
    q = replace(q, strategy=draw(st.sampled_from(("ALL", "ANY"))), within=within)
    text = format_query(q)
    compiled = ceql.compile(text)  # every drawn query is evaluated
    assume(compiled.lazy_plan().eligible)
    types = _types(q) + (("D",) if draw(st.booleans()) else ())
    events = draw(events_lists(max_size=24, mixed=False, types=types))
    time = "ts" if within.kind == "time" else draw(st.sampled_from((None, "ts")))
    return text, events, time


@PROFILE
@given(eligible_cases(), st.data())
def test_lazy_equals_eager_on_random_queries(case: tuple[str, list[dict[str, Any]], str | None],
                                             data: st.DataObject) -> None:
    text, events, time = case
    note(text)
    cuts = data.draw(st.lists(st.integers(0, len(events)), max_size=6).map(sorted), label="cuts")
    check_lazy_equals_eager(text, events, time, cuts)


# ---------------------------------------------------------------- rare events, named shapes

SHAPES = {
    "rare last": "SELECT * FROM S WHERE A AS x ; B AS y ; C AS z FILTER x[a >= 1] {w}",
    "rare first": "SELECT * FROM S WHERE C AS z ; A AS x ; (B AS y)+ {w}",
    "rare middle": "SELECT * FROM S WHERE A AS x ; C AS z ; B AS y FILTER y[b <= 2] {w}",
    "and": "SELECT * FROM S WHERE (A AS x AND B AS y AND C AS z) {w}",
    "not between": "SELECT * FROM S WHERE A AS x ; NOT B AS n ; C AS z FILTER n[a = 1] {w}",
    "seq3 not": "SELECT * FROM S WHERE A AS x ; NOT B ; C AS z ; A AS v {w}",
    "or": "SELECT * FROM S WHERE (A AS x OR C AS z) ; B AS y ; C AS v {w}",
    "partition": "SELECT * FROM S WHERE A AS x ; B AS y ; C AS z PARTITION BY [g] {w}",
    "limit": "SELECT * FROM S WHERE (A AS x)+ ; C AS z {w} LIMIT 2",
    # (with a FILTER: a chain of bare types under CONSUME BY runs on the join engine)
    "consume any": "SELECT * FROM S WHERE A AS x ; B AS y ; C AS z FILTER y[b >= 0] "
                   "PARTITION BY [g] {w} CONSUME BY ANY",
    "consume partition": "SELECT * FROM S WHERE A AS x ; C AS z FILTER x[a >= 0] "
                         "PARTITION BY [g] {w} CONSUME BY PARTITION",
    "projection": "SELECT z, x FROM S WHERE A AS x ; B AS y ; C AS z {w}",
}


@st.composite
def rare_streams(draw: st.DrawFn, size: int = 120) -> list[dict[str, Any]]:
    """Mostly A and B, a few C (rare), D (no query's), time steps of 0 to 2."""
    n = draw(st.integers(size // 2, size))
    kinds = draw(st.lists(st.sampled_from("AAAAAABBBBBDDDC"), min_size=n, max_size=n))
    steps = draw(st.lists(st.sampled_from((0, 1, 1, 2)), min_size=n, max_size=n))
    out = []
    ts = 0
    for k, (t, step) in enumerate(zip(kinds, steps, strict=True)):
        ts += step
        out.append({"type": t, "ts": ts, "a": k % 3, "b": (k * 7) % 4, "g": (k // 3) % 2})
    return out


@PROFILE
@given(st.sampled_from(sorted(SHAPES)), st.sampled_from(("time", "attr")), rare_streams(),
       st.data())
def test_lazy_equals_eager_on_rare_shapes(shape: str, kind: str,
                                          events: list[dict[str, Any]],
                                          data: st.DataObject) -> None:
    width = data.draw(st.integers(0, 6), label="window")
    w = f"WITHIN {width} SECONDS" if kind == "time" else f"WITHIN {width} [ts]"
    text = SHAPES[shape].format(w=w)
    note(text)
    cuts = data.draw(st.lists(st.integers(0, len(events)), max_size=8).map(sorted),
                     label="cuts")
    ev = check_lazy_equals_eager(text, events, "ts" if kind == "time" else None, cuts)
    report = ev.lazy_report()
    assert report is not None


@PROFILE
@given(st.sampled_from(sorted(SHAPES)), rare_streams(60), st.data())
def test_lazy_with_rows_snapshots_and_events(shape: str, events: list[dict[str, Any]],
                                             data: st.DataObject) -> None:
    """Arrow batches mixed with rows fed one by one and with snapshots restored in between
    (held rows are fed first, and what went by unseen is assumed near), with their events."""
    text = SHAPES[shape].format(w=f"WITHIN {data.draw(st.integers(0, 5))} SECONDS")
    note(text)
    q = ceql.compile(text)
    cuts = data.draw(st.lists(st.integers(0, len(events)), max_size=8).map(sorted),
                     label="cuts")
    plan = data.draw(st.lists(st.sampled_from(("arrow", "arrow", "rows", "restore")),
                              min_size=len(cuts) + 1, max_size=len(cuts) + 1), label="plan")
    eager = q.evaluator(time="ts", lazy=False, keep_events=True)
    lazy = q.evaluator(time="ts", lazy=True, keep_events=True)
    for (a, b), how in zip(pairwise([0, *cuts, len(events)]), plan, strict=True):
        chunk: Any = events[a:b] if how == "rows" else arrow_table(events[a:b])
        if how == "restore":
            lazy = pickle.loads(pickle.dumps(lazy))
        want = eager.feed(chunk)
        got = lazy.feed(chunk)
        assert keys(got) == keys(want)
        assert [m.events for m in got] == [m.events for m in want]
        assert lazy.oldest_live_position() <= lazy.events_seen


@PROFILE
@given(st.sampled_from(sorted(SHAPES)), rare_streams(80), st.data())
def test_lazy_equals_eager_with_timestamps(shape: str, events: list[dict[str, Any]],
                                           data: st.DataObject) -> None:
    """A timestamp column (microsecond keys) and a window with a fraction of a second."""
    text = SHAPES[shape].format(w="WITHIN 2 SECONDS 500 MILLISECONDS")
    note(text)
    start = dt.datetime(2024, 1, 2, 14, 30, tzinfo=dt.UTC)
    stamped = [{**e, "ts": start + dt.timedelta(milliseconds=700 * e["ts"])} for e in events]
    cuts = data.draw(st.lists(st.integers(0, len(events)), max_size=8).map(sorted),
                     label="cuts")
    check_lazy_equals_eager(text, stamped, "ts", cuts)
