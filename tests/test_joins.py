"""The join engine (``runtime/joins.py``): chains of single events with ``;`` (and ``:``),
conditions between events and a WITHIN, joined on whole columns — against the brute-force
reference, on rows, chunks of rows, Arrow tables cut anywhere and snapshots taken
mid-stream; which queries it runs; its state bounded by the window."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

import ceql
from ceql.frontends.ceql import format_query
from ceql.ir import nodes as A
from ceql.runtime import joins
from reference import reference_matches
from strategies import PROFILE, atom_preds
from test_contiguous import (
    _ATTRS,
    TYPES,
    VARS,
    _cut,
    _table,
    between,
    check_against_reference,
    streams,
)
from test_properties import keys

# ---------------------------------------------------------------- queries


@st.composite
def chains(draw: st.DrawFn, colons: bool = True) -> tuple[A.Formula, list[str]]:
    """A chain of 2 to 4 events joined by ``;`` (at least once) and ``:`` with unary filters
    on some elements (``colons``), or by ``;`` alone with elements of two types now and then;
    the names that bind events."""
    k = draw(st.integers(2, 4))
    gaps = [draw(st.sampled_from([True, True, False] if colons else [True]))
            for _ in range(k - 1)]
    if not any(gaps):
        gaps[draw(st.integers(0, k - 2))] = True
    names: list[str] = []
    parts: list[A.Formula] = []
    fresh = list(draw(st.permutations([*VARS, "w"])))
    for _ in range(k):
        t = draw(st.sampled_from(TYPES))
        f: A.Formula = A.EventType(t)
        if not colons and draw(st.integers(0, 3)) == 0:  # of two types: (A OR B) AS v
            f = A.Or(f, A.EventType(draw(st.sampled_from([u for u in TYPES if u != t]))))
            names.append(fresh.pop())
            parts.append(A.As(f, names[-1]))
            continue
        if draw(st.integers(0, 5)):
            # mostly a variable of its own (now and then one bound twice)
            v = fresh.pop() if draw(st.integers(0, 5)) else draw(st.sampled_from(VARS))
            f = A.As(f, v)
            names.append(v)
        else:
            names.append(t)
        if colons and draw(st.integers(0, 4)) == 0:
            f = A.Filter(f, A.FilterAtom(names[-1], draw(atom_preds())))
        parts.append(f)
    where = parts[0]
    for gap, p in zip(gaps, parts[1:], strict=True):
        where = A.Seq(where, p, contiguous=not gap)
    return where, names


@st.composite
def equality(draw: st.DrawFn, names: list[str]) -> A.FilterAtom:
    """``y[a = x.b]``: an equality between two variables' attributes (a join key)."""
    x = draw(st.sampled_from(names))
    y = draw(st.sampled_from([n for n in names if n != x] or names))
    return A.FilterAtom(y, A.Compare("=",
                                     A.Attr(draw(st.sampled_from(_ATTRS))),
                                     A.Attr(draw(st.sampled_from(_ATTRS)), var=x)))


@st.composite
def join_queries(draw: st.DrawFn) -> A.Query:
    """A query the join engine runs (mostly: a variable bound twice, a type name as a
    variable, ... are the chooser's to judge)."""
    where, names = draw(chains())
    conds: list[A.FilterExpr] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["eq", "eq", "between", "unary"]))
        if kind == "eq":
            conds.append(draw(equality(names)))
        else:
            head = draw(st.sampled_from(names))
            pred = draw(between(names)) if kind == "between" else draw(atom_preds())
            conds.append(A.FilterAtom(head, pred))
    cond = conds[0]
    for c in conds[1:]:
        cond = A.FilterAnd(cond, c)
    where = A.Filter(where, cond)
    within = draw(st.sampled_from([
        A.Within("events", Fraction(draw(st.integers(0, 5)))),
        A.Within("time", draw(st.sampled_from([Fraction(0), Fraction(1), Fraction(5, 2),
                                               Fraction(6)])))]))
    bound = sorted(set(names))
    select = draw(st.sampled_from([None, None, None, (), tuple(bound[:1]), tuple(bound[-1:])]))
    return A.Query(strategy=draw(st.sampled_from(["ALL", "ANY"])), select=select,
                   streams=("S",), where=where,
                   partition_by=draw(st.sampled_from([(), (), ("g",), ("g", "h")])),
                   within=within)


@st.composite
def consuming_queries(draw: st.DrawFn) -> A.Query:
    """A ``;`` chain without conditions between events: of bare types (the join engine's;
    under CONSUME BY ANY or PARTITION by the latest start of each end), or now and then with
    a unary filter (the tECS's)."""
    where, names = draw(chains(colons=False))
    if draw(st.integers(0, 3)) == 0:
        where = A.Filter(where, A.FilterAtom(draw(st.sampled_from(names)), draw(atom_preds())))
    within = draw(st.sampled_from([
        A.Within("events", Fraction(draw(st.integers(0, 5)))),
        A.Within("time", draw(st.sampled_from([Fraction(0), Fraction(1), Fraction(5, 2),
                                               Fraction(6)])))]))
    bound = sorted(set(names))
    consume = draw(st.sampled_from(["ANY", "PARTITION", "NONE"]))
    return A.Query(strategy=draw(st.sampled_from(["ALL", "ANY"])),
                   select=draw(st.sampled_from([None, None, (), tuple(bound[:1])])),
                   streams=("S",), where=where,
                   partition_by=draw(st.sampled_from(
                       [("g",), ("g", "h")] if consume == "PARTITION" else [(), ("g",)])),
                   within=within, consume=consume)


def queries() -> st.SearchStrategy[A.Query]:
    return st.one_of(join_queries(), consuming_queries())


def _compiled(q: A.Query) -> tuple[ceql.Query, str]:
    text = format_query(q)
    note(f"query:\n{text}")
    return ceql.compile(text), text


def _events(compiled: ceql.Query, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``events``, with booleans made text when the query has an implied partition key: the
    engines that run per implied key (not the join engine, which never does) group True with
    1 there, where the value model says they are not equal — a known fault, left to its own
    fix (ceql's notes, session 20)."""
    if compiled.implied_key() is None:
        return events
    return [{k: "true" if v is True else v for k, v in e.items()} for e in events]


def _ref(q: A.Query, events: list[dict[str, Any]], time: str | None) -> Any:
    note(f"events: {events}\ntime={time!r}")
    return reference_matches(q, events, time=time)


def _time(q: A.Query, data: st.DataObject) -> str | None:
    if q.within is not None and q.within.kind == "time":
        return "ts"
    return data.draw(st.sampled_from([None, "ts"]), label="time")


# ---------------------------------------------------------------- the engine equals the reference


@PROFILE
@given(queries(), st.data())
def test_rows_equal_reference(q: A.Query, data: st.DataObject) -> None:
    """Rows (``Query.run``) and in chunks, against the reference."""
    compiled, _ = _compiled(q)
    events = _events(compiled, data.draw(streams(arrow=False), label="events"))
    time = _time(q, data)
    ref = _ref(q, events, time)
    got = keys(compiled.run(events, time=time))
    check_against_reference(got, ref, None)
    ev = compiled.evaluator(time=time)
    fed = []
    for a, b in _cut(data, len(events)):
        out = keys(ev.feed(events[a:b]))
        assert all(a <= k[0] < b for k in out)
        fed += out
    assert fed == got


@PROFILE
@given(queries(), st.data())
def test_arrow_equals_reference(q: A.Query, data: st.DataObject) -> None:
    """An Arrow table whole and cut into batches anywhere, against the reference."""
    compiled, _ = _compiled(q)
    events = data.draw(streams(arrow=True), label="events")
    time = _time(q, data)
    table = _table(events)
    ref = _ref(q, events, time)
    got = keys(compiled.evaluator(time=time).feed(table))
    check_against_reference(got, ref, None)
    assert got == keys(compiled.run(events, time=time))
    ev = compiled.evaluator(time=time)
    fed = []
    for a, b in _cut(data, len(events)):
        out = keys(ev.feed(table.slice(a, b - a)))
        assert all(a <= k[0] < b for k in out)
        fed += out
    assert fed == got


def _full(m: ceql.Match) -> tuple[Any, ...]:
    return (m.key(), m.start_time, m.end_time, sorted(m.variables.items()))


@PROFILE
@given(queries(), st.data())
def test_snapshot_mid_stream(q: A.Query, data: st.DataObject) -> None:
    """Saved after any piece (rows or Arrow), restored, continued: as one evaluation, and the
    matches carry the same times and variables."""
    compiled, text = _compiled(q)
    arrow = data.draw(st.booleans(), label="arrow")
    events = _events(compiled, data.draw(streams(arrow=arrow), label="events"))
    time = _time(q, data)
    feed: Any = _table(events) if arrow else events
    want = [_full(m) for m in compiled.evaluator(time=time).feed(feed)]
    ev = compiled.evaluator(time=time)
    got: list[Any] = []
    for a, b in _cut(data, len(events)):
        piece = feed.slice(a, b - a) if arrow else feed[a:b]
        got += [_full(m) for m in ev.feed(piece)]
        ev = ceql.compile(text).restore(ev.snapshot())
    assert got == want


@PROFILE
@given(queries(), st.data())
def test_small_slices_and_row_batches(q: A.Query, data: st.DataObject) -> None:
    """Partial chains extended a few at a time, rows evaluated in batches of a few: the same
    matches in the same order."""
    compiled, _ = _compiled(q)
    events = data.draw(streams(arrow=False), label="events")
    time = _time(q, data)
    want = keys(compiled.run(events, time=time))
    slice_, rows = data.draw(st.integers(1, 3), label="slice"), data.draw(st.integers(1, 3))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(joins, "SLICE", slice_)
        mp.setattr(joins, "ROWS", rows)
        assert keys(compiled.run(events, time=time)) == want


# ---------------------------------------------------------------- what the generator draws


def test_generator_draws_joins() -> None:
    """The generator above draws queries the join engine is chosen for, of every length, with
    ``:`` among the ``;``, equality keys, windows of both kinds, partitions and SELECT
    lists."""
    seen: Counter[str] = Counter()

    @settings(max_examples=200, phases=[Phase.generate], database=None, deadline=None,
              derandomize=True, suppress_health_check=list(HealthCheck))
    @given(queries())
    def draw(q: A.Query) -> None:
        compiled = ceql.compile(format_query(q))
        seen["drawn"] += 1
        engine = compiled.engine()
        if engine.base != "join":
            return
        seen["join"] += 1
        text = format_query(q)
        seen[f"k={text.count(':') + text.count(';') + 1}"] += 1
        seen[":"] += ":" in text
        steps = compiled.evaluator(time="ts")._engine.steps  # what the engine keys on
        seen["equality key"] += any(s.keys for s in steps)
        assert q.within is not None
        seen[f"within {q.within.kind}"] += 1
        seen["partition"] += bool(q.partition_by)
        seen["select list"] += q.select is not None
        seen[q.strategy] += 1
        seen[f"consume {q.consume}"] += 1
        seen["OR element"] += " OR " in text

    draw()
    assert seen["join"] >= 0.5 * seen["drawn"], seen  # (the rest: the fallback engines)
    for what in ("k=2", "k=3", "k=4", ":", "equality key", "within events", "within time",
                 "partition", "select list", "ALL", "ANY", "consume NONE", "consume ANY",
                 "consume PARTITION", "OR element"):
        assert seen[what] >= 3, (what, seen)


# ---------------------------------------------------------------- which queries qualify

_PAIR = ("SELECT * FROM S WHERE SELL AS a ; BUY AS b FILTER b[price > a.price] "
         "PARTITION BY [name] WITHIN 10 SECONDS")
_CHAIN = ("SELECT * FROM S WHERE T AS a ; T AS b ; T AS c FILTER b[src = a.dst] AND "
          "c[src = b.dst] WITHIN 1 HOURS")


@pytest.mark.parametrize("text", [_PAIR, _CHAIN,
                                  "SELECT * FROM S WHERE A AS x : B AS y ; C AS z "
                                  "FILTER z[a > y.a] WITHIN 3 EVENTS",
                                  # the dense rows of CORE's workloads: chains of bare types
                                  "SELECT * FROM S WHERE A ; B ; B ; A WITHIN 8 EVENTS",
                                  "SELECT * FROM S WHERE A ; B ; A PARTITION BY [g] "
                                  "WITHIN 10 SECONDS CONSUME BY ANY",
                                  "SELECT * FROM S WHERE A ; B ; A PARTITION BY [g] "
                                  "WITHIN 10 SECONDS CONSUME BY PARTITION"])
def test_correlated_chains_run_as_joins(text: str) -> None:
    assert ceql.compile(text).engine().base == "join"
    assert "engine: a chain with ';' on whole columns" in str(ceql.explain(text))


@pytest.mark.parametrize("text", [
    "SELECT * FROM S WHERE A AS x ; B AS y FILTER y[a > x.a]",  # no WITHIN: unbounded
    "SELECT * FROM S WHERE A AS x ; B AS y FILTER y[a > x.a] WITHIN 3 [a]",
    "SELECT NEXT * FROM S WHERE A AS x ; B AS y FILTER y[a > x.a] WITHIN 3 EVENTS",
    "SELECT * FROM S WHERE A AS x ; B AS y FILTER y[a > x.a] WITHIN 3 EVENTS LIMIT 2",
    "SELECT * FROM S WHERE A AS x ; B AS y FILTER y[a > x.a] WITHIN 3 EVENTS CONSUME BY ANY",
    "SELECT * FROM S WHERE A AS x ; B+ AS y FILTER y[a > x.a] WITHIN 3 EVENTS",
    "SELECT * FROM S WHERE A AS x ; NOT C ; B AS y FILTER y[a > x.a] WITHIN 3 EVENTS",
    "SELECT * FROM S WHERE A AS x ; B AS y FILTER y[a > PREV(a)] WITHIN 3 EVENTS",
    # no condition between events and a FILTER: the tECS's prefilter
    "SELECT * FROM S WHERE A ; B FILTER A[a > 1] WITHIN 3 EVENTS",
    "SELECT * FROM S WHERE A ; B WITHIN 3 EVENTS LIMIT 1",
    "SELECT * FROM S WHERE A : B ; C WITHIN 3 EVENTS CONSUME BY ANY",  # (latest start: only ;)
    "SELECT * FROM S WHERE A AS x ; B AS y FILTER y[a > x.a] WITHIN 3 EVENTS CONSUME BY ANY",
])
def test_other_shapes_keep_their_engines(text: str) -> None:
    assert ceql.compile(text).engine().base != "join"


# ---------------------------------------------------------------- state, snapshots, errors


def test_carried_rows_are_bounded_by_the_window() -> None:
    """Only rows within the window of the newest row are kept, however long the stream, in
    time and in events (per partition)."""
    q = ceql.compile("SELECT * FROM S WHERE A AS x ; B AS y FILTER y[a > x.a] "
                     "PARTITION BY [g] WITHIN 5 SECONDS")
    ev = q.evaluator(time="ts")
    rows = [{"type": "A", "a": i, "g": i % 3, "ts": i} for i in range(1000)]
    ev.feed(rows[:500])
    ev.feed(pa.Table.from_pylist(rows[500:]))
    carry = ev._engine.carry
    assert carry is not None and 5 <= carry.pos.size <= 6
    q = ceql.compile("SELECT * FROM S WHERE A AS x ; B AS y FILTER y[a > x.a] "
                     "PARTITION BY [g] WITHIN 4 EVENTS")
    ev = q.evaluator()
    ev.feed(pa.Table.from_pylist(rows))
    ev.feed(rows)
    carry = ev._engine.carry
    assert carry is not None and carry.pos.size == 3 * 4  # (a later end is 4 positions on)
    assert set(ev._engine.counts) == {(0,), (1,), (2,)}
    ev.feed([{"type": "C", "g": g} for g in range(3) for _ in range(5)])
    assert ev._engine.carry is None and not ev._engine.counts


def test_a_batch_without_chain_rows_moves_time_on() -> None:
    """Rows of no element still age the carried ones out of a time window."""
    q = ceql.compile(_PAIR)
    ev = q.evaluator(time="ts")
    ev.feed([{"type": "SELL", "name": "X", "price": 1, "ts": 0}])
    assert ev._engine.carry is not None
    ev.feed([{"type": "HOLD", "name": "X", "ts": 100}])
    assert ev._engine.carry is None
    assert ev.feed([{"type": "BUY", "name": "X", "price": 2, "ts": 101}]) == []


def test_equality_join_across_batches_and_kinds() -> None:
    """The transfer chain: equality keys across batches, numbers equal across int and float,
    NULL and NaN never equal, texts; the same as the register runtime would give (the
    reference)."""
    rows = [
        {"type": "T", "src": 1, "dst": 2, "ts": 0},
        {"type": "T", "src": 2.0, "dst": "x", "ts": 1},
        {"type": "T", "src": 2, "dst": None, "ts": 2},
        {"type": "T", "src": "x", "dst": 1, "ts": 3},
        {"type": "T", "src": None, "dst": math.nan, "ts": 4},
        {"type": "T", "src": 1, "dst": 2, "ts": 5},
    ]
    q = ceql.compile(_CHAIN)
    ref = reference_matches(q.ast, rows, time="ts")
    got = keys(q.run(rows, time="ts"))
    check_against_reference(got, ref, None)
    assert [k[2] for k in got] == [(0, 1, 3), (1, 3, 5)]
    ev = q.evaluator(time="ts")
    assert [k for r in rows for k in keys(ev.feed([r]))] == got


def test_times_compare_with_iso_text_without_keys() -> None:
    """An equality between a time and ISO text is TRUE in the value model: the hash keys step
    aside and the condition decides."""
    import datetime as dt
    rows = [{"type": "A", "t": dt.datetime(2024, 1, 1), "ts": 0},
            {"type": "B", "t": "2024-01-01T00:00:00", "ts": 1}]
    q = ceql.compile("SELECT * FROM S WHERE A AS x ; B AS y FILTER y[t = x.t] WITHIN 5 EVENTS")
    assert q.engine().base == "join"
    assert [m.positions for m in q.run(rows, time="ts")] == [(0, 1)]


def test_old_snapshot_is_refused() -> None:
    """A snapshot the register runtime took of a query the join engine now runs: refused,
    not continued without its runs."""
    from ceql.runtime import snapshot as snap

    q = ceql.compile(_PAIR)
    ev = q.evaluator(time="ts")
    ev.feed([{"type": "SELL", "name": "X", "price": 1, "ts": 0}])
    data = ev.snapshot()
    assert data[len(snap.MAGIC):len(snap.MAGIC) + 2] == b"\x00\x05"
    payload = snap.options(q, data)[1]
    payload.pop("join")
    payload["partitions"] = [(("X",), 0, 1, [], ((), ()))]
    with pytest.raises(ceql.CeqlInputError, match="another engine"):
        q.evaluator(time="ts")._engine.load(payload)


def test_damaged_snapshot_rows() -> None:
    from ceql.runtime import snapshot as snap

    q = ceql.compile(_PAIR)
    ev = q.evaluator(time="ts")
    ev.feed([{"type": "SELL", "name": "X", "price": 1, "ts": 0}])
    payload = snap.options(q, ev.snapshot())[1]
    payload["join"]["rows"][0][0] = "zero"
    with pytest.raises(ceql.CeqlInputError, match="damaged"):
        q.evaluator(time="ts")._engine.load(payload)


def test_a_refused_row_leaves_the_rows_before_it_evaluated() -> None:
    """A row out of time order is refused; the rows before it in the same call were read, so
    they take part in later matches, as with the other engines."""
    q = ceql.compile(_PAIR)
    ev = q.evaluator(time="ts")
    with pytest.raises(ceql.CeqlInputError, match="order"):
        ev.feed([{"type": "SELL", "name": "X", "price": 1, "ts": 5},
                 {"type": "BUY", "name": "X", "price": 2, "ts": 6},
                 {"type": "BUY", "name": "X", "price": 3, "ts": 1}])
    got = ev.feed([{"type": "BUY", "name": "X", "price": 4, "ts": 7}])
    assert [m.positions for m in got] == [(0, 3)]


def test_kept_events() -> None:
    """With ``keep_events`` a match whose first event came in an earlier batch carries it."""
    q = ceql.compile(_PAIR)
    rows = [{"type": "SELL", "name": "X", "price": 1, "ts": 0},
            {"type": "BUY", "name": "X", "price": 2, "ts": 1}]
    ev = q.evaluator(time="ts", keep_events=True)
    assert ev.feed(pa.Table.from_pylist(rows[:1])) == []
    (m,) = ev.feed(pa.Table.from_pylist(rows[1:]))
    assert [e["price"] for e in m.events] == [1, 2]


@pytest.mark.parametrize("columns", [
    {"src": pa.array(["a", "b", "a", None, "b", "a"]),
     "dst": pa.array(["b", "a", "b", "a", None, "b"], pa.large_string())},
    {"src": pa.array([1, 2, 1, None, 2, 1], pa.int32()),
     "dst": pa.array([2.0, 1.0, 2.0, float("nan"), -0.0, 2.0])},
    {"src": pa.array([0, 2, 0, 2**53 + 1, 2, 1]),
     "dst": pa.array([2.0, -0.0, 2.0**53, 1.0, None, 2.0])},
    {"src": pa.array([True, False, True, None, False, True]),
     "dst": pa.array([False, True, False, True, None, False])},
    {"src": pa.array([1, 0, 1, 1, 0, 1]),
     "dst": pa.array([False, True, False, True, None, False])},
])
def test_arrow_equality_keys_equal_rows(columns: dict[str, pa.Array]) -> None:
    """Equality keys on Arrow columns (texts of two types, integers against floats with
    NaN and -0.0, integers beyond 2**53, booleans, booleans against integers), one batch
    and one row at a time: the matches rows give (which the tests above hold to the
    reference)."""
    table = pa.table({"type": ["T"] * 6, "ts": list(range(6)), **columns})
    q = ceql.compile(_CHAIN.replace("1 HOURS", "10 SECONDS"))
    rows = table.to_pylist()
    want = keys(q.run(rows, time="ts"))
    check_against_reference(want, reference_matches(q.ast, rows, time="ts"), None)
    assert keys(q.evaluator(time="ts").feed(table)) == want
    ev = q.evaluator(time="ts")
    assert [k for j in range(6) for k in keys(ev.feed(table.slice(j, 1)))] == want


def test_a_snapshot_the_register_runs_took_continues_on_them() -> None:
    """A snapshot taken before the join engine ran the query (by the register runs: what
    ``chains=False`` builds) is restored onto the register runs, and continues exactly."""
    q = ceql.compile(_PAIR)
    rows = [{"type": t, "name": "X", "price": p, "ts": ts}
            for t, p, ts in [("SELL", 1, 0), ("BUY", 2, 1), ("SELL", 3, 2), ("BUY", 4, 3),
                             ("BUY", 0, 4), ("BUY", 5, 30)]]
    want = keys(q.run(rows, time="ts"))
    old = ceql.Evaluator(q, time="ts", chains=False)
    assert type(old._engine).__name__ == "RegisterEngine"
    got = keys(old.feed(rows[:3]))
    restored = q.restore(old.snapshot())
    assert type(restored._engine).__name__ == "RegisterEngine"
    got += keys(restored.feed(rows[3:]))
    assert got == want and len(want) == 3
    fresh = q.restore(q.evaluator(time="ts").snapshot())  # the join engine's own: onto it
    assert type(fresh._engine).__name__ == "JoinEngine"
