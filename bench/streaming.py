#!/usr/bin/env python3
"""Structured Streaming (issue 13 item 7): a P3-shape query per ticker streamed from files.

Usage (from the repository root)::

    .venv/bin/python bench/streaming.py [--events 1000000,10000000] [--files 20,5]
        [--queries p3,wide] [--no-floor] [--latency-events 200000] [--latency-files 20]
        [--stream-partitions CORES] [--batch-partitions 4] [--buckets 16]

* throughput: the anchor stock stream (``bench/engine.py``'s generator) written as ``--files``
  Parquet files (several counts: several micro-batch sizes), all landed first, read with
  ``maxFilesPerTrigger=1`` and ``trigger(availableNow=True)``; MATCH_CEQL over the same rows as a
  table in the same session (``noop`` sink, run twice: the second, warm run is the figure). The
  stream's rate is its steady state — rows over the micro-batches after the first, which starts
  the state store and Python workers — and the ratio is that rate over the warm batch rate;
  the state store's rows and memory at the end. ``p3`` is selective (1 % of the rows reach the
  engine); ``wide`` lets every sale through (half the rows);
* floor (``--no-floor`` skips it): the same stream through a transformWithStateInPandas that
  evaluates nothing but makes a key's state calls — what a micro-batch costs in Spark itself;
* latency: ``--latency-events`` rows cut into files of equal event-time spans, landed one a
  span of wall-clock time apart (event time runs at wall speed), ``trigger(processingTime=
  "1 second")``, watermark 1 s: for every alert, the time from the landing of the file holding
  its last event to the end of the batch that wrote it (p50, p99, max); with the floor, the
  same for Spark's own event-time operator (a windowed count of P3's large trades, final once
  the watermark passes the window: what any operator waiting for the watermark pays here).

The stream's matches must lie between the table's answers over the rows before Spark's last
watermark and before the newest row less the delay (keys are released by the newest row of
the micro-batches that call them), or the row says DIFFER.
Prints JSON lines and writes them to ``bench/out/streaming-<date-time>.jsonl``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spark as sb

OUT = Path(__file__).resolve().parent / "out"
#: P3's shape per ticker: a large sale, then two large purchases, the second dearer
QUERY = ("SELECT * FROM S WHERE SELL AS a ; BUY AS b ; BUY AS c FILTER a[volume > 9900] AND "
         "b[volume > 9900] AND c[volume > 9900] AND c[price > b.price] PARTITION BY [name] "
         "WITHIN 1 SECONDS")
#: an unselective query: every sale reaches the engine (half the rows), few matches
WIDE = ("SELECT * FROM S WHERE SELL AS a ; BUY AS b FILTER b[volume > 9990] AND "
        "b[price > a.price] PARTITION BY [name] WITHIN 1 SECONDS")
QUERIES = {"p3": QUERY, "wide": WIDE}
SCHEMA = "type string, id long, name string, volume long, price double, ts long"
SCHEMA_COLUMNS = ("type", "id", "name", "volume", "price", "ts")
OPTIONS: dict[str, Any] = {"time": "ts", "time_unit": "us", "tie_break": "id"}
SHUFFLE = "spark.sql.shuffle.partitions"
BUCKETS = [16]  # ceql's state entries of a stream (--buckets; ceql's default)


def split(events: int, files: int, folder: Path) -> list[Path]:
    """The stream's rows in ``files`` Parquet files of equal event-time spans (not landed)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(sb.ensure_parquet(events, 1))
    ts = table.column("ts")
    lo, hi = pc.min(ts).as_py(), pc.max(ts).as_py() + 1
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for k in range(files):
        a, b = lo + (hi - lo) * k // files, lo + (hi - lo) * (k + 1) // files
        part = table.filter(pc.and_(pc.greater_equal(ts, a), pc.less(ts, b)))
        path = folder / f"part-{k:04d}.parquet"
        pq.write_table(part, path)
        out.append(path)
    return out


def land(path: Path, folder: Path, index: int) -> None:
    target = folder / path.name
    shutil.copy(path, folder / f".{path.name}.tmp")
    os.utime(folder / f".{path.name}.tmp", (1_700_000_000 + index,) * 2)
    (folder / f".{path.name}.tmp").rename(target)


def fingerprint(df: Any) -> tuple[int, int]:
    from pyspark.sql import functions as F

    row = df.agg(F.count("*").alias("n"),
                 F.sum(F.col("match_id") % 1_000_000_007).alias("s")).collect()[0]
    return int(row["n"]), int(row["s"] or 0)


def batch_seconds(spark: Any, table: Any, name: str, partitions: int
                  ) -> tuple[float, float]:
    """MATCH_CEQL over ``table`` into the ``noop`` sink with ``partitions`` shuffle
    partitions: the first run's seconds (Python workers starting, the JIT cold) and a second,
    warm run's."""
    import ceql.spark

    runs = []
    before = spark.conf.get(SHUFFLE)
    spark.conf.set(SHUFFLE, str(partitions))
    try:
        for _ in range(2):
            t0 = time.perf_counter()
            (ceql.spark.match(table, QUERIES[name], **OPTIONS).write.format("noop")
             .mode("overwrite").save())
            runs.append(time.perf_counter() - t0)
    finally:
        spark.conf.set(SHUFFLE, before)
    return runs[0], runs[1]


def steady(q: Any) -> tuple[int, float, list[int]]:
    """Rows and seconds of a finished stream's micro-batches after its first (which starts
    the state store and the Python workers), and every micro-batch's milliseconds."""
    progress = [p for p in q.recentProgress if p["numInputRows"]]
    ms = [int(p["durationMs"]["triggerExecution"]) for p in progress]
    return sum(int(p["numInputRows"]) for p in progress[1:]), sum(ms[1:]) / 1000, ms


def throughput(spark: Any, events: int, files: int, work: Path, name: str,
               batch: tuple[float, float]) -> dict[str, Any]:
    """The stream of ``events`` rows in ``files`` micro-batches against the batch answer."""
    import ceql.spark

    query = QUERIES[name]
    folder = landed(events, files, work)
    table = spark.read.parquet(str(folder))
    want = fingerprint(ceql.spark.match(table, query, **OPTIONS))
    # the stream: the same files, one per micro-batch
    stream = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1)
              .parquet(str(folder)))
    matches = ceql.spark.match(stream, query, watermark="1 second", buckets=BUCKETS[0],
                               **OPTIONS)
    sink = f"bench_stream_{name}_{events}_{files}"
    t0 = time.perf_counter()
    q = (matches.writeStream.format("memory").queryName(sink).outputMode("append")
         .option("checkpointLocation", str(work / f"ck-{name}-{events}-{files}"))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    stream_s = time.perf_counter() - t0
    rows, steady_s, ms = steady(q)
    state = q.lastProgress["stateOperators"][0] if q.lastProgress["stateOperators"] else {}
    got = fingerprint(spark.table(sink))
    # rows near the end are still held: each key's rows are released up to the newest row
    # less the delay, at least up to Spark's last watermark; so the stream's matches must
    # include the batch answer over the rows before that watermark and lie within the answer
    # over the rows before the newest row less the delay
    last_us = spark.read.parquet(str(folder)).agg({"ts": "max"}).first()[0]
    ids = {r[0] for r in spark.table(sink).select("match_id").collect()}
    low, high = ({r[0] for r in ceql.spark.match(table.where(f"ts < {cut}"), query, **OPTIONS)
                  .select("match_id").collect()}
                 for cut in (_watermark_us(q), (last_us // 1000 - 1000) * 1000))
    batch_eps = events / batch[1]
    return {"kind": "throughput", "query": name, "events": events, "files": files,
            "rows_per_batch": events // files,
            "batch_cold_s": round(batch[0], 2), "batch_s": round(batch[1], 2),
            "stream_s": round(stream_s, 2), "first_batch_s": round(ms[0] / 1000, 2),
            "steady_ms_per_batch": round(steady_s * 1000 / max(1, len(ms) - 1)),
            "batch_eps": round(batch_eps),
            "stream_eps": round(rows / steady_s) if steady_s else None,
            "ratio": round(rows / steady_s / batch_eps, 3) if steady_s else None,
            "state_rows": state.get("numRowsTotal"),
            "state_memory_bytes": state.get("memoryUsedBytes"),
            "matches_all": want[0], "matches_stream": got[0],
            "check": "same" if low <= ids <= high and len(ids) == got[0] else "DIFFER"}


def landed(events: int, files: int, work: Path) -> Path:
    """A folder holding the stream's ``files`` Parquet files (landed once, then reused)."""
    staged = split(events, files, work / f"staged-{events}-{files}")
    folder = work / f"in-{events}-{files}"
    if not folder.exists():
        folder.mkdir()
        for i, p in enumerate(staged):
            land(p, folder, i)
    return folder


def floor(spark: Any, events: int, files: int, work: Path,
          where: str = "volume > 9900") -> dict[str, Any]:
    """Spark's own cost of such a stream: the same rows, filter, watermark, packing, group
    keys (``--buckets``) and the state calls a key makes in every micro-batch (a read and a
    write; a timer registered once) through a transformWithStateInPandas that evaluates
    nothing — the least a micro-batch costs. (The
    filter comes before the watermark here, after it in ceql's plan: no difference of note.)
    ``where``: the rows kept (``"true"``: all, for a query without a prefilter)."""
    import pandas as pd
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    from ceql.spark.stream.operator import RowPacker

    class Idle(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.handle = handle
            self.state = handle.getValueState("s", StructType([StructField("v", BinaryType())]))

        def handleInputRows(self, key: Any, rows: Any, timers: Any) -> Any:
            first = self.state.get() is None
            n = sum(len(frame) for frame in rows)
            self.state.update((b"x" * 64,))
            if first:
                self.handle.registerTimer(timers.getCurrentWatermarkInMs() + 10**12)
            yield pd.DataFrame({"n": [n]})

        def close(self) -> None:
            pass

    folder = landed(events, files, work)
    stream = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1)
              .parquet(str(folder)))
    rows = (stream.where(where).withColumn("et", F.timestamp_micros("ts"))
            .withWatermark("et", "1 second")
            .withColumn("k", F.pmod(F.xxhash64("name"), F.lit(BUCKETS[0]))))
    packed = StructType([rows.schema["k"], StructField(RowPacker.COLUMN, BinaryType())])
    out = (rows.select("k", *SCHEMA_COLUMNS).mapInArrow(RowPacker(["k"]), packed).groupBy("k")
           .transformWithStateInPandas(Idle(), StructType([StructField("n", LongType())]),
                                       "Append", "EventTime"))
    q = (out.writeStream.format("noop").outputMode("append")
         .option("checkpointLocation",
                 str(work / f"ck-floor-{events}-{files}-{abs(hash(where))}"))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    n, s, ms = steady(q)
    return {"kind": "floor", "events": events, "files": files,
            "rows_per_batch": events // files, "first_batch_s": round(ms[0] / 1000, 2),
            "steady_ms_per_batch": round(s * 1000 / max(1, len(ms) - 1)),
            "stream_eps": round(n / s) if s else None}


def _watermark_us(q: Any) -> int:
    mark = q.lastProgress["eventTime"]["watermark"]
    when = dt.datetime.fromisoformat(mark.replace("Z", "+00:00"))
    return (when - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)


def _native(stream: Any) -> Any:
    """Spark's own floor for latency: P3's large trades counted per ticker in 1 ms windows —
    an output final once the watermark passes the window, as an alert once the watermark
    passes its last event — with the window's newest trade as ``match_end``."""
    from pyspark.sql import functions as F

    return (stream.where("volume > 9900").withColumn("et", F.timestamp_micros("ts"))
            .withWatermark("et", "1 second").groupBy(F.window("et", "1 millisecond"), "name")
            .agg(F.max("ts").alias("match_end")))


def latency(spark: Any, events: int, files: int, work: Path, native: bool = False
            ) -> dict[str, Any]:
    """Files landed one event-time span apart in wall time; alert latency from landing.
    ``native``: Spark's floor (:func:`_native`) instead of ceql."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    import ceql.spark

    name = "latency-native" if native else "latency"
    staged = split(events, files, work / "staged-latency")
    spans = [pq.read_table(p, columns=["ts"]).column("ts") for p in staged]
    bounds = [(pc.min(s).as_py(), pc.max(s).as_py()) for s in spans]
    span_s = (bounds[-1][1] - bounds[0][0]) / 1e6 / files
    folder = work / f"in-{name}"
    folder.mkdir()
    def write(batch: Any, batch_id: int) -> None:
        rows = batch.select("match_end").collect()
        done = time.time()
        ends.extend((int(r["match_end"]), done) for r in rows)

    ends: list[tuple[int, float]] = []
    stream = (spark.readStream.schema(SCHEMA).parquet(str(folder)))
    out = (_native(stream) if native
           else ceql.spark.match(stream, QUERY, watermark="1 second", buckets=BUCKETS[0],
                                 **OPTIONS))
    q = (out.writeStream.outputMode("append")
         .foreachBatch(write).option("checkpointLocation", str(work / f"ck-{name}"))
         .trigger(processingTime="1 second").start())
    landed: list[float] = []
    land(staged[0], folder, 0)
    landed.append(time.time())
    while not q.recentProgress:  # the first batch starts the state store and workers
        q.awaitTermination(0.2)
    start = time.time()
    for i, p in enumerate(staged[1:], start=1):
        time.sleep(max(0.0, start + i * span_s - time.time()))
        land(p, folder, i)
        landed.append(time.time())
    time.sleep(span_s * 3 + 5)
    q.stop()
    lat = []
    for end_us, done in ends:
        k = next(i for i, (lo, hi) in enumerate(bounds) if lo <= end_us <= hi)
        lat.append(done - max(landed[k], start))
    lat.sort()

    def pct(p: float) -> float:
        return round(lat[min(len(lat) - 1, int(p * len(lat)))], 2) if lat else float("nan")

    return {"kind": name, "events": events, "files": files, "span_s": round(span_s, 2),
            "trigger_s": 1, "watermark_s": 1, "alerts": len(lat), "p50_s": pct(0.5),
            "p99_s": pct(0.99), "max_s": round(lat[-1], 2) if lat else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", default="1000000,10000000")
    ap.add_argument("--files", default="20", help="micro-batches (comma-separated: several)")
    ap.add_argument("--floor", action=argparse.BooleanOptionalAction, default=True,
                    help="also Spark's floor: the stream through a processor doing nothing")
    ap.add_argument("--queries", default="p3", help="p3, wide (comma-separated)")
    ap.add_argument("--latency-events", type=int, default=200000)
    ap.add_argument("--latency-files", type=int, default=20)
    ap.add_argument("--stream-partitions", type=int, default=os.cpu_count() or 2,
                    help="shuffle (state store) partitions of the streams (default: the "
                    "cores); each is committed and runs a Python runner every micro-batch")
    ap.add_argument("--buckets", type=int, default=16,
                    help="ceql's state entries (match(..., buckets=); 16 is its default)")
    ap.add_argument("--batch-partitions", type=int, default=4,
                    help="shuffle partitions of the batch MATCH_CEQL (local_session's)")
    args = ap.parse_args(argv)
    BUCKETS[0] = args.buckets
    import ceql.spark

    spark = ceql.spark.local_session(**{"spark.log.level": "ERROR",
                                        SHUFFLE: str(args.stream_partitions)})
    OUT.mkdir(exist_ok=True)
    out = OUT / f"streaming-{dt.datetime.now():%Y%m%d-%H%M%S}.jsonl"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for n in [int(x) for x in args.events.split(",") if x]:
            landed(n, 1, work)
            for name in args.queries.split(","):
                table = spark.read.parquet(str(landed(n, 1, work)))
                batch = batch_seconds(spark, table, name, args.batch_partitions)
                for f in [int(x) for x in str(args.files).split(",") if x]:
                    rows.append(throughput(spark, n, f, work, name, batch))
                    print(json.dumps(rows[-1]), flush=True)
            if args.floor:
                for f in [int(x) for x in str(args.files).split(",") if x]:
                    rows.append(floor(spark, n, f, work))
                    print(json.dumps(rows[-1]), flush=True)
        if args.latency_events:
            for native in (False, True) if args.floor else (False,):
                rows.append(latency(spark, args.latency_events, args.latency_files, work,
                                    native=native))
                print(json.dumps(rows[-1]), flush=True)
    for r in rows:
        r.update(stream_partitions=args.stream_partitions, batch_partitions=args.batch_partitions,
                 buckets=args.buckets)
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
