"""A stream key running MATCH_RECOGNIZE (ceql.spark.stream.keystate with
ceql.spark.stream.recognize), without Spark: random bodies (tests/mr_strategies.py's, made
streamable: WITHIN, ORDER BY ts ascending) over rows that arrive out of order within the
watermark's delay, now and then late, in random micro-batches, each key's state through the
state codec between calls and its timers fired as Spark fires them — the output, once the
stream ends, is the engine's batch run over the rows in time, each row once; the state's
round trip, and its refusals."""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
import zlib
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import assume, event, given, note, settings
from hypothesis import strategies as st
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

import ceql
from ceql.frontends.mr import ast as A
from ceql.frontends.mr import format_body, parse
from ceql.mr import MatchRecognizeQuery
from ceql.spark.errors import MatchCeqlError
from ceql.spark.stream.keystate import TIME_US, KeyState, StreamPlan, time_us_of
from ceql.spark.stream.recognize import RecognizeRunner, recognize_plan, stream_refusal
from ceql.spark.stream.state_codec import dump_state, load_state
from ceql.spark.udtf.batching import BatchLimits
from ceql.spark.udtf.call import CallInfo
from ceql.spark.udtf.mr_plan import MrSpec, plan_recognize
from ceql.spark.udtf.mr_runner import MrOutput
from ceql.spark.udtf.mr_split import Split
from mr_strategies import bodies

pytestmark = pytest.mark.spark

SCHEMA = StructType([StructField("seq", LongType()), StructField("k", LongType()),
                     StructField("ts", TimestampType()), StructField("x", LongType()),
                     StructField("y", StringType())])
ARROW = pa.schema([("seq", pa.int64()), ("k", pa.int64()), ("ts", pa.timestamp("us", "UTC")),
                   ("x", pa.int64()), ("y", pa.string())])
T0 = dt.datetime(2024, 1, 1, 9, 0, tzinfo=dt.UTC)
LIMITS = BatchLimits()


def _spec(body: A.MatchRecognize) -> MrSpec:
    """The plan of ``body`` with every expression left to the engine (no Spark to compute the
    row-local ones: the split is the Spark tests')."""
    text = format_body(body)
    spec = plan_recognize(SCHEMA, {"body": text, "tie_break": "seq"}, CallInfo())
    tree = parse(text)
    assert isinstance(tree, A.MatchRecognize)
    return dataclasses.replace(spec, split=Split(tree, ()))


def _streamable(body: A.MatchRecognize, within: int) -> A.MatchRecognize:
    order = (A.SortKey("ts", False, body.order_by[0].nulls_first),)
    return dataclasses.replace(body, order_by=order,
                               within=body.within or dt.timedelta(seconds=within))


def _with_next(body: A.MatchRecognize) -> A.MatchRecognize:
    """``body`` with a measure reading the row after: the last rows wait for the next one."""
    nxt = A.Measure(A.Navigation("NEXT", A.Column(None, "x"), 1), "nx")
    return dataclasses.replace(body, measures=(*body.measures, nxt))


def _rows(rnd: random.Random, n: int) -> list[dict[str, Any]]:
    out, t = [], 0
    for i in range(n):
        t += rnd.choice([0, 0, 1, 1, 2, 3, 9])
        out.append({"seq": i, "k": rnd.choice([1, 2, 3]), "ts": T0 + dt.timedelta(seconds=t),
                    "x": rnd.choice([None, 0, 1, 2, 3, 4, 5]),
                    "y": rnd.choice(["a", "b", "ab", "ba"])})
    return out


def _us(t: dt.datetime) -> int:
    return (t - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)


class _Operator:
    """transformWithStateInPandas modelled: per key a state value (bytes) and event-time
    timers; a micro-batch calls the keys with rows, then fires every timer at or below the
    watermark (deleted after its call)."""

    def __init__(self, plan: StreamPlan) -> None:
        self.plan = plan
        self.states: dict[Any, bytes] = {}
        self.timers: dict[Any, set[int]] = {}
        self.late = 0
        self.out: list[dict[str, Any]] = []

    def call(self, key: Any, rows: pa.RecordBatch | None, w_ms: int,
             fired: int | None = None) -> None:
        plan = self.plan
        ks = load_state(self.states[key], plan) if key in self.states else KeyState(plan.buckets)
        if fired is not None:
            ks.fired(fired)
        if rows is not None:
            rows = rows.append_column(TIME_US, time_us_of(plan, rows.column("ts")))
            self.late += ks.accept(plan, rows, w_ms).num_rows
        self.out += [r for b in ks.release(plan, w_ms, LIMITS) for r in b.to_pylist()]
        if ks.idle:  # only late rows came: nothing started
            assert ks.late
            self.states.pop(key, None)
            self.timers.pop(key, None)
            return
        new = ks.reschedule(plan)
        timers = self.timers.setdefault(key, set())
        if new is not None:
            assert w_ms <= 0 or new > w_ms, "a timer at the watermark is deleted unfired"
            timers.add(new)
        if fired is not None:
            timers.discard(fired)
        due = ks.wake_ms(plan)
        assert due is None or min(timers) <= due, "the key's next work has no timer"
        self.states[key] = dump_state(ks)

    def batch(self, rows: dict[Any, pa.RecordBatch], w_ms: int) -> None:
        for key, rb in rows.items():
            self.call(key, rb, w_ms)
        expired = sorted((t, k) for k, ts in self.timers.items() for t in ts if t <= w_ms)
        for t, key in expired:
            self.call(key, None, w_ms, fired=t)

    def close(self) -> int:
        """The replay ended (past every window): what waits for NEXT past the last rows (how
        many rows that gave)."""
        before = len(self.out)
        for data in self.states.values():
            ks = load_state(data, self.plan)
            assert ks.held is None
            assert isinstance(ks.runner, RecognizeRunner)
            self.out += [r for b in ks.runner.close(LIMITS) for r in b.to_pylist()]
        return len(self.out) - before


def _key(spec: MrSpec, buckets: int, row: dict[str, Any]) -> Any:
    key = tuple(row[c] for c in spec.partition)
    return zlib.crc32(repr(key).encode()) % buckets if buckets and spec.partition else key


def _batch(spec: MrSpec, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The engine's batch run over ``rows`` (Arrow's values), as the output's Arrow rows."""
    ordered = sorted(rows, key=lambda r: (r["ts"], r["seq"]))
    out = MatchRecognizeQuery(spec.split.body).run(ordered)
    return [r for b in MrOutput(spec).batches(out, LIMITS) for r in b.to_pylist()]


def _canon(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(repr(sorted(r.items())) for r in rows)


@settings(max_examples=30)
@given(body=bodies(), data=st.data())
def test_a_stream_of_random_bodies_gives_the_batch_rows(body: A.MatchRecognize,
                                                       data: st.DataObject) -> None:
    body = _streamable(body, data.draw(st.sampled_from([2, 5]), label="within"))
    if data.draw(st.integers(0, 3), label="NEXT") == 0:
        body = _with_next(body)
    try:
        spec = _spec(body)
    except ceql.CeqlError:  # output columns that clash, a measure Spark cannot type
        assume(False)
        raise
    assume(stream_refusal(spec) is None)  # PATTERN's $
    note(spec.text)
    rnd = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    rows = _rows(rnd, rnd.randint(0, 24))
    delay = data.draw(st.integers(0, 3), label="delay")  # seconds
    arrival = [_us(r["ts"]) + rnd.choice([0, 0, 0, 500_000, delay * 10**6, (delay + 4) * 10**6])
               for r in rows]
    order = sorted(range(len(rows)), key=lambda i: (arrival[i], rnd.random()))
    k = min(len(order) - 1, rnd.randint(0, 5)) if order else 0
    cuts = sorted(rnd.sample(range(1, len(order)), k=k)) if k > 0 else []
    pieces = [order[a:b] for a, b in zip([0, *cuts], [*cuts, len(order)], strict=True)]
    buckets = data.draw(st.sampled_from([0, 2]), label="buckets")
    plan = recognize_plan(spec, buckets=buckets)
    table = pa.Table.from_pylist(rows, schema=ARROW)
    arrow_rows = table.to_pylist()
    # Spark's watermark as each micro-batch starts: the newest time read before, less the delay
    marks, in_time, newest = [], [], None
    for piece in pieces:
        w_ms = max(0, newest // 1000 - delay * 1000) if newest is not None else 0
        marks.append(w_ms)
        in_time += [i for i in piece if w_ms <= 0 or _us(rows[i]["ts"]) >= w_ms * 1000]
        got = max((_us(rows[i]["ts"]) for i in piece), default=newest)
        newest = got if newest is None or got is None else max(newest, got)
    try:
        want = _batch(spec, [arrow_rows[i] for i in sorted(in_time)])
    except (ceql.CeqlError, MatchCeqlError):  # AFTER MATCH SKIP to a match's own first row
        assume(False)
        raise
    op = _Operator(plan)
    for piece, w_ms in zip(pieces, marks, strict=True):
        by_key: dict[Any, list[int]] = {}
        for i in piece:
            by_key.setdefault(_key(spec, buckets, arrow_rows[i]), []).append(i)
        op.batch({key: table.take(pa.array(ix, pa.int64())).to_batches()[0]
                  for key, ix in by_key.items()}, w_ms)
    op.batch({}, _us(T0) // 1000 + 86_400_000)  # a day on, past every window: timers fire
    ahead = MatchRecognizeQuery(spec.split.body).setup(tuple(ARROW.names)).ahead
    closing = op.close()
    assert ahead or not closing  # without NEXT, the watermark made every row final
    event(f"rows out: {'some' if want else 'none'}; NEXT: {bool(ahead)}")
    assert op.late == len(rows) - len(in_time)
    assert _canon(op.out) == _canon(want)


BODY = ("PARTITION BY k ORDER BY ts MEASURES MATCH_NUMBER() AS n, FIRST(A.seq) AS s, "
        "LAST(B.seq) AS e, COUNT(*) AS c ONE ROW PER MATCH PATTERN (A B+) "
        "WITHIN INTERVAL '5' SECOND DEFINE B AS B.x > PREV(B.x)")


def _batch_of(rows: list[dict[str, Any]]) -> pa.RecordBatch:
    rb = pa.RecordBatch.from_pylist(rows, schema=ARROW)
    return rb.append_column(TIME_US, pa.array([_us(r["ts"]) for r in rows], pa.int64()))


def test_the_state_round_trips_and_continues_exactly() -> None:
    """A key saved mid-match and read back gives what it would have given; MATCH_NUMBER goes
    on across the restart; the bytes are refused by another body's plan."""
    spec = plan_recognize(SCHEMA, {"body": BODY}, CallInfo())
    plan = recognize_plan(spec)
    rows = [{"seq": i, "k": 1, "ts": T0 + dt.timedelta(seconds=i), "x": x, "y": "a"}
            for i, x in enumerate([1, 2, 3, 1, 2, 5, 0, 4])]
    ks = KeyState()
    ks.accept(plan, _batch_of(rows[:5]), 0)
    first = [r for b in ks.release(plan, _us(rows[4]["ts"]) // 1000) for r in b.to_pylist()]
    assert first == [{"k": 1, "n": 1, "s": 0, "e": 2, "c": 3}]
    assert isinstance(ks.runner, RecognizeRunner) and ks.runner.waiting_until() is not None
    data = dump_state(ks)
    again = load_state(data, plan)
    assert dump_state(again) == data
    again.accept(plan, _batch_of(rows[5:]), 0)
    rest = [r for b in again.release(plan, _us(rows[-1]["ts"]) // 1000 + 60_000)
            for r in b.to_pylist()]
    assert rest == [{"k": 1, "n": 2, "s": 3, "e": 5, "c": 3},
                    {"k": 1, "n": 3, "s": 6, "e": 7, "c": 2}]
    other = plan_recognize(SCHEMA, {"body": BODY.replace("'5'", "'6'")}, CallInfo())
    with pytest.raises(MatchCeqlError, match=r"^MATCH_RECOGNIZE_TABLE: this checkpoint's key "
                       r"state cannot continue the query: This snapshot was taken by the "
                       r"evaluator of another MATCH_RECOGNIZE query"):
        load_state(data, recognize_plan(other))


def test_a_stream_refuses_what_it_cannot_run() -> None:
    def refusal(body: str) -> str | None:
        return stream_refusal(plan_recognize(SCHEMA, {"body": body}, CallInfo()))

    assert refusal(BODY) is None
    assert refusal(BODY.replace("WITHIN INTERVAL '5' SECOND ", "")) == (
        "over a stream the body needs WITHIN after PATTERN, or a match could wait for ever for "
        "its next row and the state grows without bound; add a window, e.g. PATTERN (A B+) "
        "WITHIN INTERVAL '10' MINUTE")
    assert refusal(BODY.replace("ORDER BY ts", "ORDER BY ts DESC")) == (
        "over a stream ORDER BY ts DESC cannot be: rows come as event time goes forward; "
        "write ORDER BY ts (ascending) first")
    assert refusal(BODY.replace("(A B+)", "(A B+ $)")) == (
        "over a stream a partition never ends, so PATTERN's $ (the partition's end) never "
        "matches; leave $ out")
    assert refusal("PARTITION BY k MEASURES COUNT(*) AS c PATTERN (A+) DEFINE A AS x > 0") == (
        "over a stream the body needs ORDER BY its event-time column (the one with the "
        "watermark), first and ascending: add ORDER BY ts")
