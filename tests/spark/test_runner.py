"""MatchRunner, driven without Spark: the rows it keeps stay bounded by the engine's live runs
for every query shape, dropping them changes no output, and ``bounds`` names the interval's
first and last rows (issue 9, item 2)."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

import ceql
import ceql.spark
from ceql.spark.udtf.base import partition_starts
from ceql.spark.udtf.call import CallInfo
from ceql.spark.udtf.ceql_plan import MatchSpec, plan_match
from ceql.spark.udtf.runner import MatchRunner

pytestmark = pytest.mark.spark

SCHEMA = StructType([StructField("seq", LongType()), StructField("type", StringType()),
                     StructField("k", LongType()), StructField("ts", DoubleType())])
ARROW = pa.schema([("seq", pa.int64()), ("type", pa.string()), ("k", pa.int64()),
                   ("ts", pa.float64())])


def events(n: int, weights: tuple[int, int, int], seed: int = 3) -> pa.Table:
    """``n`` events of types A, B, C; keys 0–3; two events a second."""
    types = random.Random(seed).choices("ABC", weights=weights, k=n)
    return pa.table({"seq": range(n), "type": types, "k": [(i // 5) % 4 for i in range(n)],
                     "ts": [float(i // 2) for i in range(n)]}, schema=ARROW)


def plan(query: str, **options: str) -> MatchSpec:
    return plan_match(SCHEMA, {"query": query, "time": "ts", **options}, CallInfo())


def batches(table: pa.Table, size: int) -> list[pa.RecordBatch]:
    return list(table.to_batches(max_chunksize=size))


def run_tasks(spec: MatchSpec, table: pa.Table, size: int) -> list[dict[str, Any]]:
    """What MATCH_CEQL's tasks output: one runner per partition key when Spark partitions."""
    if spec.spark_partitioned:
        parts = [table.filter(pc.equal(table["k"], k)) for k in range(4)]
    else:
        parts = [table]
    out: list[dict[str, Any]] = []
    for part in parts:
        runner = MatchRunner(spec)
        for b in batches(part, size):
            for rb in runner.feed(b):
                out.extend(rb.to_pylist())
    return out


# ---------------------------------------------------------------- rows retained

DYING = {
    "A : B": "SELECT * FROM S WHERE A : B",
    "STRICT": "SELECT STRICT * FROM S WHERE A ; B",
    "LAST": "SELECT LAST * FROM S WHERE A ; B",
    "consumed": "SELECT * FROM S WHERE A ; B CONSUME BY PARTITION",
    "consumed across keys": "SELECT * FROM S WHERE A ; B PARTITION BY [k] CONSUME BY ANY",
    "projected": "SELECT b FROM S WHERE A ; B AS b CONSUME BY PARTITION",
}


@pytest.mark.parametrize("rows", ["matches", "events"])
@pytest.mark.parametrize("query", DYING.values(), ids=DYING.keys())
def test_rows_retained_stay_bounded_without_within(query: str, rows: str) -> None:
    size = 500
    runner = MatchRunner(plan(query, rows=rows))
    found = 0
    for b in batches(events(60_000, (1, 1, 1)), size):
        found += sum(out.num_rows for out in runner.feed(b))
        assert runner.retained_rows <= 2 * size  # not the 60 000 rows of the partition
    assert found > 1_000


def test_rows_of_a_live_run_are_kept() -> None:
    table = events(20_000, (1, 1, 400), seed=5)
    first_a = table["type"].to_pylist().index("A")
    runner = MatchRunner(plan("SELECT * FROM S WHERE A ; B"))
    fed = 0
    for b in batches(table, 500):
        list(runner.feed(b))
        fed += b.num_rows
        assert runner.retained_rows >= fed - first_a  # it pairs with every later B


# ---------------------------------------------------------------- outputs stay exact

SHAPES = [
    "SELECT * FROM S WHERE A : B",
    "SELECT * FROM S WHERE A ; B+ ; C WITHIN 12 EVENTS",
    "SELECT b FROM S WHERE A AS a ; B AS b ; C AS c WITHIN 3 SECONDS",
    "SELECT LAST * FROM S WHERE A ; B",
    "SELECT NEXT * FROM S WHERE A AS x ; B+ AS y ; C AS z",
    "SELECT * FROM S WHERE A ; C AS z PARTITION BY [k]",
    "SELECT c FROM S WHERE A ; B ; C AS c PARTITION BY [k] CONSUME BY ANY",
    "SELECT b FROM S WHERE A ; B AS b CONSUME BY PARTITION",
]


def expected(query: str, table: pa.Table, partitioned: bool) -> list[tuple[Any, ...]]:
    """The engine over each key's rows (or all of them): per match, the interval's times and
    seqs, and each variable's seqs."""
    q = ceql.compile(query)
    keys = range(4) if partitioned else [None]
    out = []
    for k in keys:
        part = table if k is None else table.filter(pc.equal(table["k"], k))
        rows = part.to_pylist()
        for m in q.evaluator(time="ts").feed(part):
            s, e = rows[m.start_position], rows[m.end_position]
            out.append((s["ts"], e["ts"], s["seq"], e["seq"],
                        tuple(sorted((v, tuple(rows[p]["seq"] for p in ps))
                                     for v, ps in m.variables.items() if v in q.variables))))
    return sorted(out)


@pytest.mark.parametrize("size", [7, 23, 100])  # 7: row by row (SMALL_BATCH); 23: both
@pytest.mark.parametrize("query", SHAPES)
def test_outputs_are_the_engines_and_bounds_name_the_interval(query: str, size: int) -> None:
    table = events(1_200, (3, 2, 2))
    spec = plan(query, bounds="seq, ts")
    got = sorted((r["match_start"], r["match_end"], r["match_start_seq"], r["match_end_seq"],
                  tuple(sorted((v, tuple(e["seq"] for e in r[v]))
                               for v in spec.variables if r[v])))
                 for r in run_tasks(spec, table, size))
    assert got == expected(query, table, spec.spark_partitioned)
    assert got
    assert all(r["match_start_ts"] == r["match_start"] and r["match_end_ts"] == r["match_end"]
               for r in run_tasks(spec, table, size))


def test_bounds_columns_follow_match_end() -> None:
    spec = plan("SELECT b FROM S WHERE A ; B AS b PARTITION BY [k]", bounds="SEQ,seq , k")
    assert spec.bounds == ("seq", "k")
    assert spec.output_names == ("match_id", "k", "match_start", "match_end", "match_start_seq",
                                 "match_end_seq", "match_start_k", "match_end_k", "b")
    events_spec = plan("SELECT b FROM S WHERE A ; B AS b", bounds="seq", rows="events")
    assert events_spec.output_names[:6] == ("match_id", "match_start", "match_end",
                                            "match_start_seq", "match_end_seq", "variable")
    rows = run_tasks(events_spec, events(200, (1, 1, 1)), 50)
    assert rows and all(r["match_start_seq"] < r["seq"] == r["match_end_seq"] for r in rows)


def test_an_attribute_window_that_goes_back_names_sparks_order() -> None:
    # Spark sorts each partition by time (then tie_break): Python's sort=True is no advice here
    runner = MatchRunner(plan("SELECT * FROM S WHERE A ; B WITHIN 5 [seq]"))
    table = pa.table({"seq": [3, 1], "type": ["A", "B"], "k": [0, 0], "ts": [1.0, 2.0]},
                     schema=ARROW)
    with pytest.raises(ceql.spark.MatchCeqlError) as err:
        list(runner.feed(table.to_batches()[0]))
    message = str(err.value)
    assert "sort=True" not in message
    assert message.endswith(
        "MATCH_CEQL reads each partition in time order (ties by tie_break): fix the data so "
        "that it does not go back in that order.")


def test_a_waiting_match_keeps_its_rows_past_rows_of_other_streams() -> None:
    """A match waiting for a trailing NOT is reported with its events although a row of
    another stream (which moves no window) came later than its window: the runner must not
    drop the rows it starts with (an IndexError before)."""
    schema = StructType([StructField("type", StringType()), StructField("ts", LongType()),
                         StructField("stream", StringType())])
    spec = plan_match(schema, {"query": "SELECT * FROM S WHERE A AS x ; A AS y ; NOT A AS n "
                               "WITHIN 1 SECONDS", "time": "ts"}, CallInfo())
    rows = pa.table({"type": ["A", "A", "A"], "ts": [0, 1, 2], "stream": ["S", "S", "T"]})
    for cut in ([1, 2], [1, 1, 1], [3]):
        runner, at, got = MatchRunner(spec), 0, []
        for n in cut:
            got.extend(runner.feed(rows.slice(at, n).to_batches()[0]))
            at += n
        got.extend(runner.close())
        out = [r for b in got for r in b.to_pylist()]
        assert [(r["match_start"], r["match_end"]) for r in out] == [(0, 1)], cut


def test_partition_starts_groups_nan_with_nan() -> None:
    """Spark sorts a partition's NaN rows together and groups them as one key; the runner
    splitting a batch by key must not cut between them (issue 28, item 6)."""
    nan = float("nan")
    col = pa.array([1.0, nan, nan, None, None, 2.0, -0.0, 0.0], pa.float64())
    assert partition_starts([col]) == [1, 3, 5, 6]
    tagged = pa.array(["a", "a", "b", "b", "b", "b", "b", "b"])
    assert partition_starts([col, tagged]) == [1, 2, 3, 5, 6]
