"""Structured Streaming: the matches of a stream are the batch answer over the same rows, each
once, with the batch ``match_id``s — across operator families, restarts from a checkpoint,
late rows and the rate source (issue 13). The rows land as JSON files in a directory, as from
an object store, out of time order within the watermark delay."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

import ceql.spark
from ceql.spark import MatchCeqlError

pytestmark = pytest.mark.spark

SCHEMA = "seq long, type string, name string, price long, ts timestamp, t double"
T0 = dt.datetime(2026, 1, 5, 9, 30, tzinfo=dt.UTC)
DELAY = 3  # seconds: how far behind its time a row may land


def _events(n: int, seed: int) -> list[dict[str, Any]]:
    """Sales (S), buys (B) and cancels (C) of three tickers; some share a time."""
    rnd = random.Random(seed)
    out, t = [], 0.0
    for i in range(n):
        t += rnd.choice([0, 0.5, 1, 1, 2])
        out.append({"seq": i, "type": rnd.choice("SSBBC"), "name": rnd.choice(["A", "B", "C"]),
                    "price": rnd.randint(1, 9), "t": t})
    return out


def _ts(e: dict[str, Any]) -> str:
    return (T0 + dt.timedelta(seconds=e["t"])).isoformat().replace("+00:00", "Z")


def _line(e: dict[str, Any], fmt: str) -> str:
    if fmt == "csv":
        return ",".join(str(e[c]) if c != "ts" else _ts(e) for c in COLUMNS)
    return json.dumps({**e, "ts": _ts(e)})


COLUMNS = ("seq", "type", "name", "price", "ts", "t")


def _land(folder: Path, index: int, rows: list[dict[str, Any]], fmt: str = "json") -> None:
    """One file, written then renamed into place; files' times increase (the file source
    reads a trigger's files in modification time order)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"part-{index:03d}.{fmt}"
    tmp = folder / f".part-{index:03d}.tmp"
    tmp.write_text("".join(_line(e, fmt) + "\n" for e in rows), encoding="utf-8")
    os.utime(tmp, (1_700_000_000 + index, 1_700_000_000 + index))
    tmp.rename(path)


def _arrivals(events: list[dict[str, Any]], files: int, seed: int) -> list[list[dict[str, Any]]]:
    """The events in arrival order (each up to DELAY behind its time) cut into files, and a
    last file with a row far later (not in any query) that moves the watermark past the rest."""
    rnd = random.Random(seed)
    order = sorted(events, key=lambda e: (e["t"] + rnd.uniform(0, DELAY - 0.5), e["seq"]))
    size = -(-len(order) // files)
    pieces = [order[i:i + size] for i in range(0, len(order), size)]
    end = {"seq": 10**6, "type": "Z", "name": "Z", "price": 0, "t": events[-1]["t"] + 3600}
    return [*pieces, [end]]


def _rows(df: Any, columns: list[str]) -> list[tuple[Any, ...]]:
    return sorted(tuple(_plain(r[c]) for c in columns) for r in df.collect())


def _plain(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(tuple(sorted(x.asDict().items())) for x in v)
    return v


def _stream(spark: Any, folder: Path, query: str, tmp: Path, fmt: str = "json",
            own_watermark: bool = False, **options: Any) -> Any:
    """The matches of ``query`` over the files landing in ``folder``; the watermark given
    to match, or (``own_watermark``) set on the DataFrame."""
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).format(fmt) \
        .load(str(folder))
    if own_watermark:
        df = df.withWatermark("ts", options.pop("watermark"))
    return ceql.spark.match(df, query, tie_break="seq", **options)


def _table(spark: Any, folder: Path, fmt: str = "json") -> Any:
    return spark.read.schema(SCHEMA).format(fmt).load(str(folder))


def _drain(matches: Any, name: str, checkpoint: Path) -> Any:
    q = (matches.writeStream.format("memory").queryName(name).outputMode("append")
         .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    q.awaitTermination()
    return q


#: name: (query, options of match, test options: file format, watermark on the DataFrame)
QUERIES: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "correlation": ("SELECT * FROM S WHERE S AS s ; B AS b FILTER b[price > s.price] "
                    "PARTITION BY [name] WITHIN 6 SECONDS", {}, {}),
    "between_not_rows": ("SELECT * FROM S WHERE S AS s ; NOT C AS c ; B AS b "
                         "PARTITION BY [name] WITHIN 5 SECONDS", {"rows": "events"}, {}),
    "trailing_not_csv": ("SELECT * FROM S WHERE S AS s ; NOT B AS b PARTITION BY [name] "
                         "WITHIN 3 SECONDS", {}, {"fmt": "csv"}),
    "leading_not_or": ("SELECT * FROM S WHERE NOT C AS c ; S AS s ; (B OR C) AS t "
                       "PARTITION BY [name] WITHIN 3 SECONDS", {}, {"own_watermark": True}),
    "kleene_max": ("SELECT MAX * FROM S WHERE S AS s ; (B AS b)+ ; C AS c "
                   "PARTITION BY [name] WITHIN 8 SECONDS", {}, {}),
    "and_events_numeric": ("SELECT * FROM S WHERE (S AS s AND B AS b) ; C AS c "
                           "WITHIN 6 EVENTS", {"time": "t", "time_unit": "s"}, {}),
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_stream_equals_batch(spark: Any, tmp_path: Path, name: str) -> None:
    query, options, how = QUERIES[name]
    fmt = how.get("fmt", "json")
    events = _events(120, seed=len(name))
    for i, piece in enumerate(_arrivals(events, 4, seed=7)):
        _land(tmp_path / "in", i, piece, fmt)
    q = _drain(_stream(spark, tmp_path / "in", query, tmp_path, fmt,
                       how.get("own_watermark", False), watermark="3 seconds", **options),
               f"stream_{name}", tmp_path / "ck")
    assert q.exception() is None
    got = spark.table(f"stream_{name}")
    batch = ceql.spark.match(_table(spark, tmp_path / "in", fmt), query, tie_break="seq",
                             **options)
    columns = batch.columns
    want = _rows(batch, columns)
    assert want  # the query has matches on this data
    assert _rows(got, columns) == want
    late = sum(p["observedMetrics"]["ceql"]["late_rows"] for p in q.recentProgress
               if "ceql" in p.get("observedMetrics", {}))
    assert late == 0


@pytest.mark.parametrize("sink", ["foreachBatch", "parquet"])
def test_restart_from_checkpoint_gives_each_match_once(spark: Any, tmp_path: Path,
                                                       sink: str) -> None:
    """Stopped after two files and restarted from its checkpoint after two more: the Parquet
    written by the file sink, or by foreachBatch (overwritten by batch id, so a replayed batch
    counts once), holds exactly the batch answer."""
    query = QUERIES["trailing_not_csv"][0]
    files = _arrivals(_events(100, seed=11), 4, seed=3)
    out = tmp_path / "out"

    def write(batch: Any, batch_id: int) -> None:
        batch.write.mode("overwrite").parquet(str(out / f"batch_id={batch_id}"))

    def run() -> None:
        stream = _stream(spark, tmp_path / "in", query, tmp_path, watermark="3 seconds")
        writer = stream.writeStream.option("checkpointLocation", str(tmp_path / "ck"))
        writer = (writer.foreachBatch(write) if sink == "foreachBatch"
                  else writer.format("parquet").option("path", str(out)))
        q = writer.trigger(availableNow=True).start()
        q.awaitTermination()
        assert q.exception() is None

    for i in (0, 1):
        _land(tmp_path / "in", i, files[i])
    run()
    first = spark.read.parquet(str(out)).count()
    for i in range(2, len(files)):
        _land(tmp_path / "in", i, files[i])
    run()
    got = spark.read.parquet(str(out))
    got = got.drop("batch_id") if sink == "foreachBatch" else got
    batch = ceql.spark.match(_table(spark, tmp_path / "in"), query, tie_break="seq")
    assert 0 < first < batch.count()
    assert _rows(got, batch.columns) == _rows(batch, batch.columns)
    assert got.select("match_id").distinct().count() == got.count()


def test_late_rows_are_counted_and_routed_to_the_view(spark: Any, tmp_path: Path) -> None:
    query = QUERIES["correlation"][0]
    events = _events(80, seed=5)
    early, rest = events[:40], events[40:]
    old = [dict(e, seq=1000 + i) for i, e in enumerate(events[5:12])]  # long before the mark
    for i, piece in enumerate([early, old + rest[:20], rest[20:],
                               [{"seq": 10**6, "type": "Z", "name": "Z", "price": 0,
                                 "t": events[-1]["t"] + 3600}]]):
        _land(tmp_path / "in", i, piece)
    matches = _stream(spark, tmp_path / "in", query, tmp_path, watermark="3 seconds",
                      late_view="late_rows_seen")
    q = _drain(matches, "late_matches", tmp_path / "ck")
    late = sum(p["observedMetrics"]["ceql"]["late_rows"] for p in q.recentProgress
               if "ceql" in p.get("observedMetrics", {}))
    assert late == len(old)
    side = _drain(spark.table("late_rows_seen"), "late_side", tmp_path / "ck2")
    assert side.exception() is None
    assert sorted(r["seq"] for r in spark.table("late_side").collect()) == [e["seq"] for e in old]
    in_time = _table(spark, tmp_path / "in").where("seq < 1000 OR seq >= 1000000")
    batch = ceql.spark.match(in_time, query, tie_break="seq")
    assert _rows(spark.table("late_matches"), batch.columns) == _rows(batch, batch.columns)


def test_two_streams_in_one_query_count_late_rows_under_their_own_names(
        spark: Any, tmp_path: Path) -> None:
    """Two ceql streams unioned into one streaming query: observed metrics must have distinct
    names (Spark refuses two of one name), so ``metrics=`` names each stream's count."""
    events = _events(40, seed=9)
    old = [dict(e, seq=1000 + i) for i, e in enumerate(events[2:9])]  # 4 S, 1 B
    far = {"seq": 10**6, "type": "Z", "name": "Z", "price": 0, "t": events[-1]["t"] + 3600}
    for i, piece in enumerate([events[:30], old + events[30:], [far]]):
        _land(tmp_path / "in", i, piece)
    sales = _stream(spark, tmp_path / "in", "SELECT * FROM S WHERE S AS x ; S AS y "
                    "PARTITION BY [name] WITHIN 2 SECONDS", tmp_path, watermark="3 seconds",
                    metrics="ceql_sales")
    buys = _stream(spark, tmp_path / "in", "SELECT * FROM S WHERE B AS x ; B AS y "
                   "PARTITION BY [name] WITHIN 2 SECONDS", tmp_path, watermark="3 seconds",
                   metrics="ceql_buys")
    cols = ["match_id", "match_start", "match_end", "x", "y"]
    q = _drain(sales.select(*cols).unionByName(buys.select(*cols)), "two_streams",
               tmp_path / "ck")
    assert q.exception() is None
    seen = [p["observedMetrics"] for p in q.recentProgress if p.get("observedMetrics")]
    for name, late in (("ceql_sales", 4), ("ceql_buys", 1)):  # rows the query can use
        assert sum(m[name]["late_rows"] for m in seen if name in m) == late
    with pytest.raises(MatchCeqlError, match=r"^match: metrics names the stream's observed "
                       r"metrics \(late rows\), e\.g\. 'ceql_fraud'; got ''\.$"):
        _stream(spark, tmp_path / "in", "SELECT * FROM S WHERE S WITHIN 1 SECONDS", tmp_path,
                watermark="3 seconds", metrics="")


def test_rate_source(spark: Any, tmp_path: Path) -> None:
    """Spark's rate source (40 rows a batch, all of one time, 4 s apart): what the stream gave
    is the batch answer over the rows older than the newest row less the delay (both keys have
    rows in every batch, so each key's rows are complete up to there)."""
    from pyspark.sql import functions as F

    query = ("SELECT * FROM S WHERE S AS s ; B AS b FILTER b[price > s.price] "
             "PARTITION BY [name] WITHIN 2 SECONDS")
    src = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 40)
           .option("startTimestamp", 1_767_600_000_000).option("advanceMillisPerBatch", 4000)
           .load())

    def shaped(df: Any) -> Any:
        return df.select(F.col("value").alias("seq"), F.col("timestamp").alias("ts"),
                         F.when(F.col("value") % 3 == 0, "S").otherwise("B").alias("type"),
                         (F.col("value") % 2).cast("string").alias("name"),
                         ((F.col("value") * 7) % 10).alias("price"))

    q = (ceql.spark.match(shaped(src), query, watermark="1 second", tie_break="seq")
         .writeStream.format("memory").queryName("rate_out").outputMode("append")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="0 seconds")
         .start())
    try:
        while len(q.recentProgress) < 5:
            q.awaitTermination(0.5)
    finally:
        q.stop()
    rows = sum(p["numInputRows"] for p in q.recentProgress)
    # the rows it read (values 0…rows-1) older than the newest one less the delay
    seen = shaped(spark.range(rows).select(
        F.col("id").alias("value"),
        F.timestamp_micros(F.lit(1_767_600_000_000 * 1000)
                           + (F.col("id") / 40).cast("long") * 4_000_000).alias("timestamp")))
    newest = seen.agg(F.max("ts")).first()[0]
    seen = seen.where(F.col("ts") < F.lit(newest - dt.timedelta(seconds=1)))
    batch = ceql.spark.match(seen, query, tie_break="seq")
    assert rows >= 80
    assert _rows(spark.table("rate_out"), batch.columns) == _rows(batch, batch.columns)


# ---------------------------------------------------------------- errors


def _readstream(spark: Any, tmp_path: Path) -> Any:
    _land(tmp_path / "in", 0, _events(3, seed=1))
    return spark.readStream.schema(SCHEMA).json(str(tmp_path / "in"))


def test_stream_needs_within(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(MatchCeqlError, match=r"over a stream a query needs WITHIN"):
        ceql.spark.match(_readstream(spark, tmp_path), "SELECT * FROM S WHERE S ; B",
                         watermark="1 second")


def test_stream_refuses_attribute_window(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(MatchCeqlError) as e:
        ceql.spark.match(_readstream(spark, tmp_path),
                         "SELECT * FROM S WHERE S ; B WITHIN 3 [price]", watermark="1 second")
    assert str(e.value) == (
        "match: over a stream the window is in time or in events; WITHIN 3 [price] measures "
        "an attribute the watermark knows nothing of. Write WITHIN <n> SECONDS/MINUTES/... or "
        "WITHIN <n> EVENTS.")


def test_stream_needs_watermark(spark: Any, tmp_path: Path) -> None:
    df = _readstream(spark, tmp_path)
    with pytest.raises(MatchCeqlError) as e:
        ceql.spark.match(df, "SELECT * FROM S WHERE S ; B WITHIN 1 SECONDS")
    assert str(e.value) == (
        "match: a stream needs a watermark to know when its rows are complete: pass "
        "watermark='10 seconds' (how late a row may come), or call df.withWatermark('ts', "
        "'10 seconds') first.")
    marked = df.withColumn("other", df.ts).withWatermark("other", "1 second")
    with pytest.raises(MatchCeqlError, match=r"watermark is on 'other'"):
        ceql.spark.match(marked, "SELECT * FROM S WHERE S ; B WITHIN 1 SECONDS")
    # the DataFrame's own watermark on the time column is enough
    ceql.spark.match(df.withWatermark("ts", "1 second"),
                     "SELECT * FROM S WHERE S ; B WITHIN 1 SECONDS")


def test_stream_time_column_kinds(spark: Any, tmp_path: Path) -> None:
    df = _readstream(spark, tmp_path).withColumn("text", F_string("ts"))
    with pytest.raises(MatchCeqlError, match=r"'text' holds text. Convert it first, e.g. "):
        ceql.spark.match(df, "SELECT * FROM S WHERE S ; B WITHIN 1 SECONDS", time="text",
                         watermark="1 second")


def F_string(column: str) -> Any:
    from pyspark.sql import functions as F

    return F.col(column).cast("string")


def test_watermark_on_a_table_is_refused(spark: Any) -> None:
    df = spark.createDataFrame([(1, "S", dt.datetime(2026, 1, 1))], "seq long, type string, "
                               "ts timestamp")
    with pytest.raises(MatchCeqlError, match=r"^match: watermark, late_view, buckets and "
                       r"metrics are for streaming DataFrames \(spark\.readStream…\); a table "
                       r"is complete, so drop them\.$"):
        ceql.spark.match(df, "SELECT * FROM S WHERE S WITHIN 1 SECONDS", watermark="1 second")
    with pytest.raises(MatchCeqlError, match=r"match_stream reads a streaming DataFrame"):
        ceql.spark.match_stream(df, "SELECT * FROM S WHERE S WITHIN 1 SECONDS")


def test_stream_needs_rocksdb(spark: Any, tmp_path: Path) -> None:
    from ceql.spark.stream.operator import ROCKSDB_PROVIDER, STATE_STORE_PROVIDER

    df = _readstream(spark, tmp_path)
    spark.conf.set(STATE_STORE_PROVIDER, "org.apache.spark.sql.execution.streaming.state."
                   "HDFSBackedStateStoreProvider")
    try:
        with pytest.raises(MatchCeqlError) as e:
            ceql.spark.match(df, "SELECT * FROM S WHERE S WITHIN 1 SECONDS", watermark="1 s")
    finally:
        spark.conf.set(STATE_STORE_PROVIDER, ROCKSDB_PROVIDER)
    assert str(e.value) == (
        "match: a stream keeps each key's state in Spark's state store, and transformWithState "
        "needs the RocksDB one; set spark.conf.set('spark.sql.streaming.stateStore."
        "providerClass', 'org.apache.spark.sql.execution.streaming.state."
        "RocksDBStateStoreProvider') before starting the query (ceql.spark.local_session() "
        "does).")
