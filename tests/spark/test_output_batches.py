"""Output in batches bounded by rows and bytes (issue 28, item 1): 17 rows whose 2^15 - 1
matches each carry up to 15 rows of 4 kB once asked one batch of about a gigabyte and killed the
JVM; they now flow as batches of at most ``spark.ceql.output.maxBatchBytes``, and a match whose
one row alone is larger fails its task with a MatchCeqlError naming the query, the partition and
the setting."""

from __future__ import annotations

import json
import os
from itertools import pairwise
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql.types import LongType, StringType, StructField, StructType

import ceql
import ceql.spark
from ceql.constants import CONF_OUTPUT_MAX_BATCH_BYTES
from ceql.spark.stream.keystate import TIME_US, KeyState, stream_plan
from ceql.spark.udtf.batching import (
    MAX_RECORDS_CONF,
    MAX_SPARK_BYTES_CONF,
    BatchLimits,
    TooLarge,
    cuts,
    parse_bytes,
    row_bytes,
    shown_query,
)
from ceql.spark.udtf.call import CallInfo
from ceql.spark.udtf.ceql_plan import MatchSpec, plan_match
from ceql.spark.udtf.runner import MatchRunner

pytestmark = pytest.mark.spark

SCHEMA = StructType([StructField("type", StringType()), StructField("k", LongType()),
                     StructField("ts", LongType()), StructField("payload", StringType())])
ARROW = pa.schema([("type", pa.string()), ("k", pa.int64()), ("ts", pa.int64()),
                   ("payload", pa.string())])
QUERY = ("SELECT * FROM S WHERE A AS a ; B+ AS b ; C AS c PARTITION BY [k] "
         "WITHIN 100 SECONDS")
KB4 = "x" * 4096


def burst(bs: int, payload: str = KB4, k: int = 1, t0: int = 0) -> list[dict[str, Any]]:
    """One A, ``bs`` Bs carrying ``payload``, one C: 2^bs - 1 matches of ``QUERY``."""
    return ([{"type": "A", "k": k, "ts": t0, "payload": "a"}]
            + [{"type": "B", "k": k, "ts": t0 + i + 1, "payload": payload} for i in range(bs)]
            + [{"type": "C", "k": k, "ts": t0 + bs + 1, "payload": "c"}])


def spec_of(query: str = QUERY, **options: str) -> MatchSpec:
    return plan_match(SCHEMA, {"query": query, "time": "ts", **options}, CallInfo())


def engine_count(query: str, rows: list[dict[str, Any]]) -> int:
    """The number of matches, from the engine in pure Python."""
    return sum(1 for _ in ceql.compile(query).evaluator(time="ts").iter_feed(rows))


def run(spec: MatchSpec, rows: list[dict[str, Any]], limits: BatchLimits
        ) -> list[pa.RecordBatch]:
    runner = MatchRunner(spec)
    rb = pa.RecordBatch.from_pylist(rows, schema=ARROW)
    return [*runner.feed(rb, limits), *runner.close(limits)]


# ---------------------------------------------------------------- cutting


@given(st.lists(st.integers(0, 100), max_size=60), st.integers(1, 8), st.integers(1, 300))
def test_cuts_cover_the_rows_in_order_within_both_limits(sizes: list[int], rows: int,
                                                          budget: int) -> None:
    limits = BatchLimits(rows, budget)
    if any(s > budget for s in sizes):
        with pytest.raises(TooLarge) as err:
            cuts(sizes, limits)
        assert sizes[err.value.index] > budget  # the first such row
        assert all(s <= budget for s in sizes[:err.value.index])
        return
    got = cuts(sizes, limits)
    assert [i for a, b in got for i in range(a, b)] == list(range(len(sizes)))
    for a, b in got:
        assert 0 < b - a <= rows and sum(sizes[a:b]) <= budget
    for (a, b), (c, _) in pairwise(got):  # greedy: the next row did not fit
        assert b - a == rows or sum(sizes[a:c + 1]) > budget


def test_limits_read_sparks_and_ceqls_settings() -> None:
    conf = {MAX_RECORDS_CONF: "500", CONF_OUTPUT_MAX_BATCH_BYTES: "8m"}
    assert BatchLimits.read(conf.get) == BatchLimits(500, 8 << 20)
    assert BatchLimits.read({}.get) == BatchLimits(10_000, 64 << 20)
    assert BatchLimits.read({MAX_RECORDS_CONF: "0"}.get).rows == 2**31 - 1  # Spark: no cap
    smaller = {MAX_SPARK_BYTES_CONF: "1048576", CONF_OUTPUT_MAX_BATCH_BYTES: "1g"}
    assert BatchLimits.read(smaller.get).bytes == 1 << 20
    assert [parse_bytes(t) for t in ("512", "512k", " 2MB ", "1g")] == [
        512, 512 << 10, 2 << 20, 1 << 30]
    for bad in ("", "0", "-1", "big", "64 m b", "1.5g"):
        with pytest.raises(ceql.spark.MatchCeqlError, match=CONF_OUTPUT_MAX_BATCH_BYTES):
            parse_bytes(bad)


ARRAYS = {
    "int64": pa.array([1, None, 3], pa.int64()),
    "string": pa.array(["", "ab", None, "xyz" * 10]),
    "large_binary": pa.array([b"a", b"bcd", None], pa.large_binary()),
    "list<struct>": pa.array([[{"s": "ab", "n": 1}], [], None,
                              [{"s": "c", "n": 2}, {"s": "defg", "n": None}]]),
    "map": pa.array([[("k", "vv")], [], [("kk", "v"), ("a", "b")]],
                    pa.map_(pa.string(), pa.string())),
    "dictionary": pa.array(["aa", "b", "aa", None]).dictionary_encode(),
    "fixed_size_list": pa.array([[1, 2], [3, 4], [5, 6]], pa.list_(pa.int32(), 2)),
    "struct": pa.array([{"x": "ab", "y": [1, 2]}, {"x": None, "y": None}, {"x": "c", "y": []}]),
}


@pytest.mark.parametrize("name", ARRAYS)
def test_row_bytes_are_the_rows_own_whatever_the_slice(name: str) -> None:
    a = ARRAYS[name]
    sizes = row_bytes(a)
    assert sizes.dtype == np.int64 and len(sizes) == len(a) and (sizes >= 0).all()
    for i in range(len(a)):  # a row counts the same alone as within its array
        assert row_bytes(a.slice(i, 1)).tolist() == [sizes[i]]
    assert row_bytes(pa.chunked_array([a, a])).tolist() == sizes.tolist() * 2


def test_row_bytes_count_the_values() -> None:
    assert row_bytes(ARRAYS["string"]).tolist() == [4, 6, 4, 34]
    assert row_bytes(ARRAYS["int64"]).tolist() == [8, 8, 8]
    nested = row_bytes(ARRAYS["list<struct>"]).tolist()
    assert nested == [4 + (4 + 2 + 8), 4, 4, 4 + (4 + 1 + 8) + (4 + 4 + 8)]


# ---------------------------------------------------------------- the runner


def test_seventeen_rows_flow_in_bounded_batches_with_bounded_memory() -> None:
    """The issue's 17 rows: 32 767 matches of up to 60 kB each, about 1 GB in all; one batch
    asked that much at once. With an 8 MB budget every batch holds at most 8 MB and Arrow never
    holds more than a few batches' worth."""
    rows = burst(15)
    want = engine_count(QUERY, rows)
    assert want == 2**15 - 1
    limits = BatchLimits(10_000, 8 << 20)
    runner = MatchRunner(spec_of())
    rb = pa.RecordBatch.from_pylist(rows, schema=ARROW)
    before = pa.total_allocated_bytes()
    peak = count = batches = 0
    total = 0
    ids: set[int] = set()
    for b in runner.feed(rb, limits):
        peak = max(peak, pa.total_allocated_bytes() - before)
        assert b.nbytes <= limits.bytes
        count += b.num_rows
        total += b.nbytes
        batches += 1
        ids.update(b.column("match_id").to_pylist())
        del b
    assert count == want == len(ids)
    assert total > 900 << 20 and batches >= total // limits.bytes
    assert peak < 4 * limits.bytes  # not the ~1 GB of one batch


@pytest.mark.parametrize("rows_option", ["matches", "events"])
def test_bounded_batches_hold_exactly_the_rows_of_one_batch(rows_option: str) -> None:
    rows = burst(9, "y" * 1000) + burst(6, "z" * 3000, k=2, t0=20)
    spec = spec_of(rows=rows_option)
    whole = run(spec, rows, BatchLimits(2**31 - 1, 1 << 40))
    assert len(whole) == 1
    small = BatchLimits(7, 40_000)
    parts = run(spec, rows, small)
    assert len(parts) > 20
    for b in parts:
        assert b.num_rows <= small.rows and b.nbytes <= small.bytes
    assert pa.Table.from_batches(parts).equals(pa.Table.from_batches(whole))
    got = pa.Table.from_batches(parts)
    matches = len(set(got.column("match_id").to_pylist()))
    assert matches == engine_count(QUERY, rows[:11]) + engine_count(QUERY, rows[11:])


def test_one_match_larger_than_the_budget_fails_naming_query_partition_and_setting() -> None:
    rows = burst(15)
    with pytest.raises(ceql.spark.MatchCeqlError) as err:
        run(spec_of(), rows, BatchLimits(10_000, 16 << 10))
    message = str(err.value)
    assert message.startswith(f"MATCH_CEQL: a match of the query {QUERY!r} in partition "
                              "{'k': 1} (from 0 to 16, ")
    assert f"({CONF_OUTPUT_MAX_BATCH_BYTES} = 16 kB)" in message
    assert f"SET {CONF_OUTPUT_MAX_BATCH_BYTES}=1g" in message
    assert "rows => 'events'" in message
    # one row per event: only an event's own row can be too large
    assert len(run(spec_of(rows="events"), burst(5), BatchLimits(10_000, 16 << 10))) > 1
    with pytest.raises(ceql.spark.MatchCeqlError, match="one of its rows") as err:
        run(spec_of(rows="events"), burst(2, "x" * 20_000), BatchLimits(10_000, 16 << 10))
    assert "rows => 'events'" not in str(err.value)


def test_a_streams_key_releases_bounded_batches() -> None:
    spec = spec_of()
    plan = stream_plan(spec, "ALL", timestamp=False)
    ks = KeyState()
    rows = [{**r, TIME_US: r["ts"] * 10**6} for r in burst(10, "w" * 2000)]
    ks.accept(plan, pa.RecordBatch.from_pylist(rows), 0)
    limits = BatchLimits(100, 200_000)
    out = list(ks.release(plan, 60_000, limits))
    assert sum(b.num_rows for b in out) == engine_count(QUERY, burst(10, "w" * 2000)) == 1023
    assert len(out) > 10 and all(b.num_rows <= 100 and b.nbytes <= 200_000 for b in out)


# ---------------------------------------------------------------- through Spark

SPARK_SCHEMA = "type string, k long, ts long, payload string"


@pytest.fixture
def budget(spark: Any) -> Any:
    """Set ``spark.ceql.output.maxBatchBytes`` for one test."""
    def set_to(value: str) -> None:
        spark.conf.set(CONF_OUTPUT_MAX_BATCH_BYTES, value)

    yield set_to
    spark.conf.unset(CONF_OUTPUT_MAX_BATCH_BYTES)


def test_match_ceql_answers_the_seventeen_rows(spark: Any, budget: Any) -> None:
    """Before: one ~1 GB Arrow batch, OutOfDirectMemoryError, the session dead."""
    budget("8m")
    df = spark.createDataFrame(burst(15), SPARK_SCHEMA)
    got = ceql.spark.match(df, QUERY, time="ts").selectExpr(
        "count(*) AS n", "count(DISTINCT match_id) AS ids", "max(size(b)) AS most").collect()
    assert (got[0]["n"], got[0]["ids"], got[0]["most"]) == (2**15 - 1, 2**15 - 1, 15)
    assert spark.range(3).count() == 3  # the session lives on


def test_a_too_large_match_fails_its_task_with_ceqls_message(spark: Any, budget: Any) -> None:
    budget("16k")
    df = spark.createDataFrame(burst(6), SPARK_SCHEMA)
    with pytest.raises(Exception) as err:
        ceql.spark.match(df, QUERY, time="ts").collect()
    error = ceql.spark.unwrap(err.value)
    assert error is not None, str(err.value)
    message = str(error)
    assert message.startswith(f"MATCH_CEQL: a match of the query {QUERY!r} in partition "
                              "{'k': 1}")
    assert f"({CONF_OUTPUT_MAX_BATCH_BYTES} = 16 kB)" in message
    assert "Traceback" not in str(err.value)
    budget("nonsense")
    with pytest.raises(Exception) as err:
        ceql.spark.match(df, QUERY, time="ts").collect()
    assert f"{CONF_OUTPUT_MAX_BATCH_BYTES} is 'nonsense', which is not a size" in str(err.value)


def test_a_stream_answers_a_huge_burst_in_bounded_batches(spark: Any, budget: Any,
                                                           tmp_path: Any) -> None:
    """match_stream: the 2^12 - 1 matches of one micro-batch leave as bounded batches; the key's
    state is saved after them, and the next micro-batch (the row moving the watermark) goes on
    from it."""
    budget("1m")
    folder = tmp_path / "in"
    folder.mkdir()
    rows = [*burst(12), {"type": "Z", "k": 1, "ts": 10_000, "payload": ""}]
    for i, piece in enumerate((rows[:-1], rows[-1:])):
        path = folder / f"part-{i}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in piece), encoding="utf-8")
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
    df = spark.readStream.schema(SPARK_SCHEMA).option("maxFilesPerTrigger", 1).json(str(folder))
    out = ceql.spark.match(df, QUERY, time="ts", watermark="1 second")
    q = (out.writeStream.format("memory").queryName("burst_out").outputMode("append")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    q.awaitTermination()
    assert q.exception() is None
    got = spark.sql("SELECT count(*) AS n, count(DISTINCT match_id) AS ids FROM burst_out")
    assert tuple(got.collect()[0]) == (2**12 - 1, 2**12 - 1)


# ---------------------------------------------------------------- MATCH_SPASEQ

SPASEQ = ("PREFIX : <http://example/>\nSELECT ?h ?p ?w WITHIN 100 SECONDS\n"
          "FROM STREAM S1 <http://example/power>\nFROM STREAM S2 <http://example/weather>\n"
          "WHERE { SEQ (A ; B)\nDEFINE GPM A ON S1 { ?h :pow ?p . ?h :loc ?l . }\n"
          "DEFINE GPM B ON S2 { ?w :value ?v . ?w :loc ?l . } }")


def spaseq_events(n: int, size: int) -> list[dict[str, Any]]:
    """``n`` houses whose power is a literal of ``size`` characters, then ``n`` weathers at
    the same place: each house with the next weather."""
    ex = "@prefix : <http://example/> . "
    houses = [{"stream": "S1", "time": i,
               "graph": f'{ex}:H{i} :pow "{"p" * size}" . :H{i} :loc :L1 .'} for i in range(n)]
    weathers = [{"stream": "S2", "time": n + i, "graph": f"{ex}:W{i} :value :V . :W{i} :loc :L1 ."}
                for i in range(n)]
    return houses + weathers


def spaseq_run(events: list[dict[str, Any]], limits: BatchLimits) -> list[pa.RecordBatch]:
    from pyspark.sql.types import StructType as Struct

    from ceql.spark.udtf.spaseq_plan import plan_spaseq, spaseq_schema
    from ceql.spark.udtf.spaseq_runner import SpaseqRunner

    schema = Struct([StructField("stream", StringType()), StructField("time", LongType()),
                     StructField("graph", StringType())])
    spec = plan_spaseq(schema, {"query": SPASEQ}, CallInfo())
    runner = SpaseqRunner(spec, spaseq_schema(spec, schema), ())
    rb = pa.RecordBatch.from_pylist(events)
    return [*runner.feed(rb, limits), *runner.close(limits)]


def test_match_spaseq_output_is_bounded_and_unchanged() -> None:
    import ceql.spaseq

    events = spaseq_events(60, 2000)
    want = sum(1 for _ in ceql.spaseq.compile(SPASEQ).run(events))
    assert want == 60
    whole = spaseq_run(events, BatchLimits(2**31 - 1, 1 << 40))
    small = BatchLimits(7, 20_000)
    parts = spaseq_run(events, small)
    assert len(whole) == 1 and len(parts) >= want * 2000 // small.bytes
    assert all(b.num_rows <= small.rows and b.nbytes <= small.bytes for b in parts)
    assert pa.Table.from_batches(parts).equals(pa.Table.from_batches(whole))
    assert pa.Table.from_batches(parts).num_rows == want
    with pytest.raises(ceql.spark.MatchCeqlError) as err:
        spaseq_run(events, BatchLimits(50, 1000))
    assert str(err.value).startswith(
        f"MATCH_SPASEQ: a match of the query {shown_query(SPASEQ)!r} (from 0 to 60, 2 "
        "events) needs about 2.04 kB as one output row")
    assert f"({CONF_OUTPUT_MAX_BATCH_BYTES} = 1000 B)" in str(err.value)
