"""The stream operator's per-key processor (ceql.spark.stream.operator.StreamProcessor) without
Spark: a fake state handle, packed rows as RowPacker makes them. A worker keeps each key's
state live between calls and decodes only when the state store hands back other bytes than it
saved — a retried micro-batch, a call that failed."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StructField, StructType, TimestampType

import ceql.spark.stream.operator as operator
from ceql.frontends.mr import parse
from ceql.spark.stream.keystate import TIME_US, time_us_of
from ceql.spark.stream.operator import RowPacker, StreamProcessor
from ceql.spark.stream.recognize import recognize_plan
from ceql.spark.udtf.call import CallInfo
from ceql.spark.udtf.mr_plan import plan_recognize
from ceql.spark.udtf.mr_split import Split

pytestmark = pytest.mark.spark

SCHEMA = StructType([StructField("seq", LongType()), StructField("k", LongType()),
                     StructField("ts", TimestampType()), StructField("x", LongType())])
ARROW = pa.schema([("seq", pa.int64()), ("k", pa.int64()), ("ts", pa.timestamp("us", "UTC")),
                   ("x", pa.int64())])
BODY = ("PARTITION BY k ORDER BY ts MEASURES A.x AS a, B.x AS b ONE ROW PER MATCH "
        "PATTERN (A B) WITHIN INTERVAL '10' SECOND DEFINE B AS B.x > A.x")
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


class _State:
    def __init__(self) -> None:
        self.value: bytes | None = None

    def get(self) -> tuple[bytes] | None:
        return None if self.value is None else (self.value,)

    def update(self, row: tuple[bytes]) -> None:
        self.value = row[0]

    def clear(self) -> None:
        self.value = None


class _Handle:
    def __init__(self) -> None:
        self.state = _State()

    def getValueState(self, name: str, schema: Any) -> _State:
        return self.state

    def registerTimer(self, ms: int) -> None:
        pass

    def deleteTimer(self, ms: int) -> None:
        pass


class _Timers:
    def __init__(self, watermark_ms: int) -> None:
        self.ms = watermark_ms

    def getCurrentWatermarkInMs(self) -> int:
        return self.ms


def _processor() -> tuple[StreamProcessor, _Handle, Any]:
    spec = plan_recognize(SCHEMA, {"body": BODY, "tie_break": "seq"}, CallInfo())
    spec = dataclasses.replace(spec, split=Split(parse(spec.text), ()))  # type: ignore[arg-type]
    plan = recognize_plan(spec)
    p = StreamProcessor(plan, ["k", "a", "b"], [])
    handle = _Handle()
    p.init(handle)
    return p, handle, plan


def _packed(plan: Any, rows: list[tuple[int, int]]) -> pd.DataFrame:
    """Rows (second, x) of key 1 as the operator receives them."""
    rb = pa.RecordBatch.from_pylist(
        [{"seq": i, "k": 1, "ts": T0 + dt.timedelta(seconds=s), "x": x}
         for i, (s, x) in enumerate(rows)], schema=ARROW)
    rb = rb.append_column(TIME_US, time_us_of(plan, rb.column("ts")))
    carried = rb.select(["k", *(c for c in (*plan.columns, TIME_US) if c != "k")])
    packed = next(RowPacker(["k"], TIME_US)(iter([carried])))
    return packed.to_pandas()


def _call(p: StreamProcessor, frame: pd.DataFrame, watermark_s: int) -> list[tuple[int, int]]:
    out = p.handleInputRows((1,), iter([frame]), _Timers(watermark_s * 1000 + int(
        T0.timestamp() * 1000)))
    return [(int(r.a), int(r.b)) for f in out for r in f.itertuples()]


def test_a_key_state_stays_live_and_a_retried_batch_decodes(monkeypatch: Any) -> None:
    p, handle, plan = _processor()
    decoded: list[bytes] = []
    real = operator.load_state

    def counting(data: bytes, plan: Any) -> Any:
        decoded.append(data)
        return real(data, plan)
    monkeypatch.setattr(operator, "load_state", counting)
    first = _packed(plan, [(0, 1), (1, 5), (2, 3)])
    second = _packed(plan, [(3, 9), (4, 2), (5, 7)])
    assert _call(p, first, 0) == []  # nothing before the watermark yet
    assert _call(p, second, 3) == [(1, 5)]  # rows before 3 s
    assert decoded == []  # the worker's own state came back: nothing decoded
    saved = handle.state.value
    assert saved is not None
    assert _call(p, _packed(plan, [(25, 0)]), 20) == [(3, 9), (2, 7)]
    # Spark retries that micro-batch: the store hands back the bytes before it
    handle.state.value = saved
    assert _call(p, _packed(plan, [(25, 0)]), 20) == [(3, 9), (2, 7)]
    assert decoded == [saved]


def test_a_call_that_fails_leaves_no_live_state(monkeypatch: Any) -> None:
    p, handle, plan = _processor()
    assert _call(p, _packed(plan, [(0, 1), (1, 5)]), 0) == []
    saved = handle.state.value

    def broken() -> Any:
        yield _packed(plan, [(2, 9)])
        raise RuntimeError("the task died")
    with pytest.raises(RuntimeError):
        list(p.handleInputRows((1,), broken(), _Timers(0)))
    decoded: list[bytes] = []
    real = operator.load_state
    monkeypatch.setattr(operator, "load_state",
                        lambda data, plan: decoded.append(data) or real(data, plan))
    handle.state.value = saved  # what the store kept: the failed call saved nothing
    assert _call(p, _packed(plan, [(2, 9)]), 2) == [(1, 5)]
    assert decoded == [saved]
