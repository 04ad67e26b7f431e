"""A stream's keys against the batch runner, without Spark: random queries of every operator
family, rows arriving out of order within the watermark delay (some later than that), cut
into random micro-batches, each key's state saved as bytes between them (``_state_codec``),
as Spark's state store keeps it.

After every micro-batch the outputs so far must be exactly the batch answer over the in-time
rows the watermark passed (advanced to the watermark): nothing lost, nothing repeated, nothing
later than the watermark allows — and only keys with rows or a due timer are called, as Spark
calls them (issue 13, items 2, 4 and 6).
"""

from __future__ import annotations

import copyreg
import io
import pickle
import random
import sys
import types
import zlib
from collections.abc import Iterable
from dataclasses import replace
from fractions import Fraction
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import assume, given, note
from hypothesis import strategies as st
from pyspark.sql.types import LongType, StringType, StructField, StructType

import ceql
from ceql.frontends.ceql import format_query
from ceql.ir import nodes as A
from ceql.spark.stream.keystate import TIME_US, KeyState, StreamPlan, stream_plan, time_us_of
from ceql.spark.stream.state_codec import dump_state, load_state
from ceql.spark.udtf.call import CallInfo
from ceql.spark.udtf.ceql_plan import MatchSpec, plan_match
from ceql.spark.udtf.runner import MatchRunner
from ceql.spark.udtf.ties import TieWatch
from strategies import PROFILE, Case, cases

pytestmark = pytest.mark.spark

COLUMNS = ("seq", "type", "ts", "a", "b", "c", "s", "g", "h", "stream")
SCHEMA = StructType([StructField(c, StringType() if c in ("type", "s", "stream") else LongType())
                     for c in COLUMNS])
ARROW = pa.schema([(c, pa.string() if c in ("type", "s", "stream") else pa.int64())
                   for c in COLUMNS])
WINDOWS = (Fraction(1), Fraction(2), Fraction(3, 2), Fraction(4), Fraction(60))


def _streamable(q: A.Query, window: Fraction) -> A.Query:
    """``q`` with a window a stream accepts: in time (or kept in events)."""
    if q.within is None or q.within.kind != "events":
        q = replace(q, within=A.Within("time", window))
    return q


def _table(events: list[dict[str, Any]]) -> pa.Table:
    rows = [{c: (i if c == "seq" else e.get(c)) for c in COLUMNS} for i, e in enumerate(events)]
    return pa.Table.from_pylist(rows, schema=ARROW)


def _key_of(spec: MatchSpec, row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[c] for c in spec.partition) if spec.spark_partitioned else ()


def _rows(batches: Iterable[pa.RecordBatch]) -> list[dict[str, Any]]:
    return [r for b in batches for r in b.to_pylist()]


def _op_key(spec: MatchSpec, plan: StreamPlan, row: dict[str, Any]) -> tuple[Any, ...]:
    """The stream's group key of a row: its partition key, or its hash bucket."""
    key = _key_of(spec, row)
    return (zlib.crc32(repr(key).encode()) % plan.buckets,) if plan.buckets else key


def _by_partition(spec: MatchSpec, out: dict[tuple[Any, ...], list[dict[str, Any]]]
                  ) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """Output rows per partition key (their own columns), in order."""
    parts: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for rows in out.values():
        for r in rows:
            parts.setdefault(tuple(r[c] for c in spec.partition), []).append(r)
    return parts


def _batch_answer(spec: MatchSpec, plan: StreamPlan, table: pa.Table, until_us: int | None,
                  promised: dict[tuple[Any, ...], int] | None = None
                  ) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """The batch runners' output (one per key, as Spark's tasks) over ``table``'s rows before
    ``until_us`` (all rows when None, then the input ends), moved on to ``until_us`` — or, for
    the rows of a group key in ``promised``, to the later time given there."""
    table = table.sort_by([("ts", "ascending"), ("seq", "ascending")])
    us = time_us_of(plan, table.column("ts")).to_pylist()
    parts: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    ends: dict[tuple[Any, ...], int | None] = {}
    for row, t in zip(table.to_pylist(), us, strict=True):
        end = until_us
        if end is not None and promised:
            end = max(end, promised.get(_op_key(spec, plan, row), end))
        if end is None or t < end:
            key = _key_of(spec, row)
            parts.setdefault(key, []).append(row)
            ends[key] = end
    out: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for key, rows in parts.items():
        runner = MatchRunner(spec)
        got = list(runner.feed(pa.RecordBatch.from_pylist(rows, schema=ARROW)))
        end = ends[key]
        if end is None:
            got.extend(runner.close())
        elif plan.window_us is not None:
            got.extend(runner.advance(plan.time_value(end)))
        out[key] = _rows(got)
    return _by_partition(spec, out)


def _with_us(plan: StreamPlan, rb: pa.RecordBatch) -> pa.RecordBatch:
    return rb.append_column(TIME_US, time_us_of(plan, rb.column("ts")))


class _Operator:
    """Spark's transformWithStateInPandas as ceql uses it, modelled: a state value (bytes) and
    a set of event-time timers per key; a micro-batch calls the keys with rows, then fires every
    timer at or below the watermark (deleting it after its call, as PySpark does)."""

    def __init__(self, plan: StreamPlan) -> None:
        self.plan = plan
        self.states: dict[tuple[Any, ...], bytes] = {}
        self.timers: dict[tuple[Any, ...], set[int]] = {}
        self.late = 0

    def call(self, key: tuple[Any, ...], rows: pa.RecordBatch | None, w_ms: int,
             fired: int | None = None, seen_us: int | None = None) -> list[dict[str, Any]]:
        """One call for one key: restore, accept, release, reschedule, save (or, idle, drop
        the key's state and timers)."""
        plan = self.plan
        ks = load_state(self.states[key], plan) if key in self.states else KeyState(plan.buckets)
        if fired is not None:
            ks.fired(fired)
        if rows is not None:
            self.late += ks.accept(plan, _with_us(plan, rows), w_ms).num_rows
        if seen_us is not None:
            ks.saw(seen_us)
        out = _rows(ks.release(plan, w_ms))
        if ks.idle:
            self.states.pop(key, None)
            self.timers.pop(key, None)
            return out
        new = ks.reschedule(plan)
        timers = self.timers.setdefault(key, set())
        if new is not None:
            assert w_ms <= 0 or new > w_ms, "a timer at the watermark is deleted unfired"
            timers.add(new)
        if fired is not None:
            timers.discard(fired)
        assert timers == set(ks.timers)
        due = ks.wake_ms(plan)
        assert due is None or min(timers) <= due, "the key's next work has no timer"
        self.states[key] = dump_state(ks)
        return out

    def batch(self, rows: dict[tuple[Any, ...], pa.RecordBatch], w_ms: int,
              seen_us: int | None = None) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
        """A micro-batch: ``rows`` per key, Spark's watermark, and the newest time of a row of
        the micro-batch (µs: what the packer tells each key called with rows)."""
        got: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for key, rb in rows.items():
            got.setdefault(key, []).extend(self.call(key, rb, w_ms, seen_us=seen_us))
        expired = sorted(((t, k) for k, ts in self.timers.items() for t in ts if t <= w_ms),
                         key=lambda tk: tk[0])
        for t, key in expired:
            got.setdefault(key, []).extend(self.call(key, None, w_ms, fired=t))
        return got


def check_stream_equals_batch(case: Case, data: st.DataObject) -> None:
    q0, events, _ = case
    window = data.draw(st.sampled_from(WINDOWS), label="window")
    q = _streamable(q0, window)  # every drawn query is evaluated
    text = format_query(q)
    try:
        spec = plan_match(SCHEMA, {"query": text, "time": "ts", "tie_break": "seq"}, CallInfo())
    except ceql.CeqlError:  # what ceql refuses, or output columns that clash
        assume(False)
        raise
    note(text)
    buckets = data.draw(st.sampled_from([0, 0, 1, 3]), label="buckets")
    plan = stream_plan(spec, ceql.compile(text).ast.strategy, timestamp=False,
                       tie_break=("seq",), buckets=buckets)
    rnd = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    events = [dict(e) for e in events]
    if events and rnd.random() < 0.5:  # the same again later: the same matches, new ids
        end = events[-1]["ts"] + 100
        events = events + [{**e, "ts": e["ts"] + end} for e in events]
    gap = 0  # quiet spells longer than the window: keys go idle and start afresh
    for e in events:
        gap += rnd.choice([0, 0, 0, 0, 0, 0, 70])
        e["ts"] += gap
    table = _table(events)
    delay = data.draw(st.integers(0, 3), label="delay")  # seconds
    if data.draw(st.booleans(), label="only watermark"):  # keys released by their newest row
        plan = replace(plan, delay_ms=delay * 1000)
    # arrival: each row up to `delay` behind its time, now and then much more (late)
    arrival = [r["ts"] + rnd.choice([0, 0, 0, 0.5, delay, delay + 3]) for r in events]
    # rows arriving at once come in any order (a row exactly at the promised watermark may
    # follow the one promising it)
    ties = [rnd.random() for _ in events]
    order = sorted(range(len(events)), key=lambda i: (arrival[i], ties[i]))
    k = max(0, min(len(order) - 1, rnd.randint(0, 4)))
    cuts = sorted(rnd.sample(range(1, len(order)), k=k))
    pieces = [order[a:b] for a, b in zip([0, *cuts], [*cuts, len(order)], strict=True)]
    op = _Operator(plan)
    got: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    in_time: list[int] = []
    w_ms, max_ts = 0, None
    # per group key, the newest row (µs) of the micro-batches that called it with rows
    newest: dict[tuple[Any, ...], int] = {}
    for piece in [*pieces, []]:
        rows = table.take(pa.array(piece, pa.int64())) if piece else table.slice(0, 0)
        by_key: dict[tuple[Any, ...], list[int]] = {}
        for i, row in zip(piece, rows.to_pylist(), strict=True):
            by_key.setdefault(_op_key(spec, plan, row), []).append(i)
            if w_ms <= 0 or row["ts"] * 1000 >= w_ms:
                in_time.append(i)
        seen_us = max((events[i]["ts"] * 10**6 for i in piece), default=None)
        for k in by_key:
            assert seen_us is not None
            newest[k] = max(newest.get(k, seen_us), seen_us)
        batch = {k: table.take(pa.array(v, pa.int64())).to_batches()[0]
                 for k, v in by_key.items()}
        for key, out in op.batch(batch, w_ms, seen_us).items():
            got.setdefault(key, []).extend(out)
        # what Spark's watermark will be at least once these rows are seen (ms: Spark's unit)
        promised = ({k: (t // 1000 - plan.delay_ms) * 1000 for k, t in newest.items()
                     if t // 1000 - plan.delay_ms > 0} if plan.delay_ms is not None else None)
        want = _batch_answer(spec, plan, table.take(pa.array(in_time, pa.int64())),
                             w_ms * 1000 if w_ms > 0 else -(2**62), promised)
        assert _by_partition(spec, got) == want
        seen = [r["ts"] for i in piece for r in [events[i]]]
        if seen:
            max_ts = max(seen) if max_ts is None else max(max_ts, *seen)
        if max_ts is not None:
            w_ms = max(w_ms, (max_ts - delay) * 1000)
    # the stream goes on far beyond its last row: every timer fires, everything is final
    w_ms = (max_ts or 0) * 1000 + 10**9
    for key, out in op.batch({}, w_ms).items():
        got.setdefault(key, []).extend(out)
    assert op.late == len(events) - len(in_time)
    want = _batch_answer(spec, plan, table.take(pa.array(in_time, pa.int64())), w_ms * 1000)
    assert _by_partition(spec, got) == want
    if plan.window_us is not None:
        final = _batch_answer(spec, plan, table.take(pa.array(in_time, pa.int64())), None)
        assert _by_partition(spec, got) == final
    for b in op.states.values():
        assert load_state(b, plan).held is None
    if plan.window_us is not None and plan.drop_idle:  # idle past the window: nothing left
        assert op.states == {} and op.timers == {}


@PROFILE
@given(cases(mixed=False, conj_neg=True), st.data())
def test_stream_equals_batch_with_and_and_not(case: Case, data: st.DataObject) -> None:
    check_stream_equals_batch(case, data)


@PROFILE
@given(cases(mixed=False, correlated=True), st.data())
def test_stream_equals_batch_with_correlation(case: Case, data: st.DataObject) -> None:
    check_stream_equals_batch(case, data)


@PROFILE
@given(cases(mixed=False), st.data())
def test_stream_equals_batch(case: Case, data: st.DataObject) -> None:
    check_stream_equals_batch(case, data)


#: docs/spark.md's worked example: three micro-batches of (name, type, price, t)
WORKED_QUERY = ("SELECT * FROM S WHERE SELL AS s ; BUY AS b FILTER b[price > s.price] "
                "PARTITION BY [name] WITHIN 10 SECONDS")
WORKED_BATCHES = [
    [("A", "SELL", 10, 0), ("A", "BUY", 12, 3), ("B", "SELL", 5, 4)],
    [("A", "BUY", 11, 9), ("A", "SELL", 9, 2), ("B", "BUY", 6, 12)],
    [("A", "SELL", 8, 1), ("B", "BUY", 7, 18)],
]


def _worked(delay_ms: int | None, batches: list[list[tuple[Any, ...]]] = WORKED_BATCHES
            ) -> list[list[tuple[Any, ...]]]:
    """Per micro-batch: (key, s's time, b's time) of each match, (key, "late", n) of late rows;
    Spark's watermark before a batch is the newest time of the earlier ones less 5 s."""
    schema = StructType([StructField("name", StringType()), StructField("type", StringType()),
                         StructField("price", LongType()), StructField("t", LongType())])
    spec = plan_match(schema, {"query": WORKED_QUERY, "time": "t"}, CallInfo())
    plan = stream_plan(spec, "ALL", timestamp=False, delay_ms=delay_ms)
    states: dict[str, KeyState] = {}
    w_ms, newest, said = 0, 0, []
    for rows in batches:
        out: list[tuple[Any, ...]] = []
        for key in sorted({r[0] for r in rows}):
            ks = states.setdefault(key, KeyState())
            rb = pa.RecordBatch.from_pylist([
                {"name": n, "type": k, "price": p, "t": t, TIME_US: t * 10**6}
                for n, k, p, t in rows if n == key])
            late = ks.accept(plan, rb, w_ms)
            ks.saw(max(r[3] for r in rows) * 10**6)  # as the packer tells every key
            out += sorted((key, m["s"][0]["t"], m["b"][0]["t"]) for b in ks.release(plan, w_ms)
                          for m in b.select(["s", "b"]).to_pylist())
            if late.num_rows:
                out.append((key, "late", late.num_rows))
        said.append(out)
        newest = max(newest, *(r[3] * 1000 for r in rows))
        w_ms = max(w_ms, newest - 5000)
    return said


def test_worked_example_of_the_docs() -> None:
    """Keys are released by the micro-batch's newest row less the delay (watermark="5
    seconds"): in micro-batch 2 (newest row: B's at 12 s) A's rows before 7 s, the SELL at 2 s
    that arrived out of order among them; in micro-batch 3 (newest 18 s) A's BUY at 9 s and B's
    BUY at 12 s; the SELL at 1 s comes after Spark's watermark reached 7 s: late. Waiting for
    Spark's watermark instead (a watermark of the DataFrame's own) gives A's first matches a
    micro-batch later and the others not yet."""
    assert _worked(5000) == [
        [],
        [("A", 0, 3), ("A", 2, 3)],
        [("A", 0, 9), ("A", 2, 9), ("A", "late", 1), ("B", 4, 12)],
    ]
    assert _worked(None) == [
        [],
        [],
        [("A", 0, 3), ("A", 2, 3), ("A", "late", 1)],
    ]


def test_a_row_at_the_promised_time_waits() -> None:
    """B's row at 10 s promises Spark's watermark at 5 s (10 less the delay) from the next
    micro-batch on: rows before 5 s are complete, but a row at 5 s may still come in time —
    so A's BUY at 5 s waits, and the SELL at 5 s arriving next is evaluated, not late (the
    match needs a SELL dearer than the BUY: only the one at 0 s)."""
    batches = [
        [("A", "SELL", 10, 0), ("A", "BUY", 12, 5), ("B", "SELL", 1, 10)],
        [("A", "SELL", 9, 5), ("B", "BUY", 2, 11)],
        [("B", "SELL", 1, 20)],
    ]
    assert _worked(5000, batches) == [
        [],
        [("A", 0, 5)],
        [("B", 10, 11)],
    ]


def test_a_row_older_than_what_a_key_released_is_late_even_before_sparks_watermark() -> None:
    """With several watermarks in a query (a union of streams) Spark's is their minimum, which
    may lag the micro-batch's newest row less the delay: a row older than what the key has
    evaluated already is counted late, never evaluated out of order."""
    schema = StructType([StructField("name", StringType()), StructField("type", StringType()),
                         StructField("price", LongType()), StructField("t", LongType())])
    spec = plan_match(schema, {"query": WORKED_QUERY, "time": "t"}, CallInfo())
    plan = stream_plan(spec, "ALL", timestamp=False, delay_ms=5000)

    def rows(*trades: tuple[str, int, int]) -> pa.RecordBatch:
        return pa.RecordBatch.from_pylist([{"name": "A", "type": k, "price": p, "t": t,
                                            TIME_US: t * 10**6} for k, p, t in trades])

    ks = KeyState()
    assert ks.accept(plan, rows(("SELL", 10, 0), ("BUY", 12, 6)), 0).num_rows == 0
    ks.saw(10 * 10**6)
    assert list(ks.release(plan, 0)) == []  # the SELL at 0 s is evaluated, the BUY at 6 s waits
    late = ks.accept(plan, rows(("SELL", 9, 3), ("SELL", 8, 5)), 0)  # Spark's watermark: none
    assert late.to_pylist() == [{"name": "A", "type": "SELL", "price": 9, "t": 3}]
    assert ks.late == 1
    ks.saw(20 * 10**6)
    assert sorted((m["s"][0]["t"], m["b"][0]["t"]) for b in ks.release(plan, 0)
                  for m in b.select(["s", "b"]).to_pylist()) == [(0, 6), (5, 6)]


def test_timers_are_registered_only_when_the_next_work_comes_earlier() -> None:
    """A registered timer no later than the key's next work stays (it fires, and that call
    reschedules); one is added only when the work comes before every registered timer; a
    state pickled with the earlier single ``timer`` slot restores as one registered timer."""
    schema = StructType([StructField("name", StringType()), StructField("type", StringType()),
                         StructField("price", LongType()), StructField("t", LongType())])
    spec = plan_match(schema, {"query": WORKED_QUERY, "time": "t"}, CallInfo())
    plan = stream_plan(spec, "ALL", timestamp=False)
    ks = KeyState()

    def hold(t: int) -> None:
        ks.accept(plan, pa.RecordBatch.from_pylist(
            [{"name": "A", "type": "SELL", "price": 1, "t": t, TIME_US: t * 10**6}]), 0)

    hold(7)
    assert ks.reschedule(plan) == 7001 and ks.timers == (7001,)
    hold(9)  # later work: the timer at 7 s still comes first
    assert ks.reschedule(plan) is None and ks.timers == (7001,)
    hold(3)  # earlier work: a timer before the registered one
    assert ks.reschedule(plan) == 3001 and ks.timers == (3001, 7001)
    ks.fired(3001)
    assert ks.timers == (7001,)
    state = _slots(ks)
    state[KeyState.__slots__.index("timers")] = 7001
    assert load_state(_old_pickle(ks, {id(ks): tuple(state)}), plan).timers == (7001,)
    state[KeyState.__slots__.index("timers")] = None
    assert load_state(_old_pickle(ks, {id(ks): tuple(state)}), plan).timers == ()


class _OldPickler(pickle.Pickler):
    """Pickles the objects of ``states`` (by id) with the state given there, as an earlier
    ceql's ``__getstate__`` made them."""

    def __init__(self, f: Any, states: dict[int, Any]) -> None:
        super().__init__(f, protocol=5)
        self.states = states

    def reducer_override(self, obj: Any) -> Any:
        if id(obj) in self.states:
            return (copyreg.__newobj__, (type(obj),), self.states[id(obj)])  # type: ignore[attr-defined]
        return NotImplemented


def _old_pickle(ks: KeyState, states: dict[int, Any]) -> bytes:
    """``ks`` pickled as an earlier ceql's state store held it: with the state tuples of
    ``states``, its classes named by their modules of then (``ceql.spark._keystate``, …)."""
    classes = {KeyState: "ceql.spark._keystate", MatchRunner: "ceql.spark._runner",
               MatchSpec: "ceql.spark._spec", TieWatch: "ceql.spark._ties"}
    now = {cls: cls.__module__ for cls in classes}
    for cls, old in classes.items():
        module = types.ModuleType(old)
        setattr(module, cls.__name__, cls)
        sys.modules[old] = module
        cls.__module__ = old
    try:
        f = io.BytesIO()
        _OldPickler(f, states).dump(ks)
        return f.getvalue()
    finally:
        for cls, old in classes.items():
            del sys.modules[old]
            cls.__module__ = now[cls]


def _slots(ks: KeyState) -> list[Any]:
    """``ks``'s slots as a state tuple of ceql before key state format 1."""
    return [getattr(ks, k) for k in KeyState.__slots__]


def test_a_checkpoint_of_match_ordinals_goes_on() -> None:
    """A key's state pickled before issue 28 (its match ordinals beside the state, in the
    engine and in the key) is read, the ordinals dropped, and the key goes on: its later
    matches come with the ids a batch run gives them."""
    schema = StructType([StructField("name", StringType()), StructField("type", StringType()),
                         StructField("price", LongType()), StructField("t", LongType())])
    spec = plan_match(schema, {"query": WORKED_QUERY, "time": "t"}, CallInfo())
    plan = stream_plan(spec, "ALL", timestamp=False, delay_ms=0)
    rows = [{"name": "A", "type": "SELL", "price": 10, "t": 0},
            {"name": "A", "type": "BUY", "price": 12, "t": 3}]

    def batch(rs: list[dict[str, Any]]) -> pa.RecordBatch:
        return pa.RecordBatch.from_pylist([{**r, TIME_US: r["t"] * 10**6} for r in rs])

    ks = KeyState()
    ks.accept(plan, batch(rows[:1]), 0)
    ks.saw(2 * 10**6)
    assert list(ks.release(plan, 0)) == []
    assert ks.runner is not None
    runner_state = {k: v for k, v in vars(ks.runner).items() if k != "_sizes"}
    runner_state["_ordinals"] = {("A",): (1, 0)}  # as an earlier ceql pickled them
    old = _slots(ks)
    old.insert(6, {("A",): (1, 2)})  # KeyState's slots then: …, newest_us, ordinals, …
    restored = load_state(_old_pickle(ks, {id(ks): tuple(old), id(ks.runner): runner_state}),
                          plan)
    assert restored.runner is not None and "_ordinals" not in vars(restored.runner)
    restored.accept(plan, batch(rows[1:]), 0)
    restored.saw(9 * 10**6)
    got = [r for b in restored.release(plan, 0) for r in b.to_pylist()]
    runner = MatchRunner(spec)
    want = [r for b in runner.feed(pa.RecordBatch.from_pylist(rows)) for r in b.to_pylist()]
    assert want and got == want
