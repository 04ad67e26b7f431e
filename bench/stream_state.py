#!/usr/bin/env python3
"""A stream's state against the number of distinct keys it has seen (issue 28 item 2).

Usage (from the repository root)::

    .venv/bin/python bench/stream_state.py [--keys 1000,10000,100000] [--buckets 0,16]
        [--rows-per-file 1000] [--label NAME]

``--keys`` short-lived keys stream by, one after another at a steady rate (a key a 10 ms of
event time: about 200 keys live in the 2 s window at any time, whatever the total): each key
``k<i>`` has a sale and, half a second later, a buy (one match), then never comes back. The
rows are Parquet files of ``--rows-per-file`` rows, read one a micro-batch
(``maxFilesPerTrigger=1``, ``trigger(availableNow=True)``), watermark 1 s; the last file holds
a row an hour later, so that the watermark passes every key's window. For each key count and
``buckets`` (0: an entry per key; else hashed into that many entries), from Spark's own
progress reports (``stateOperators[0]``): the state rows (``numRowsTotal``) and RocksDB's
memory (``memoryUsedBytes``) at the micro-batch in the middle of the stream and at the last
one, their maximum over the stream, and the bytes of the last commit's state (the changelog
and SST files, ``rocksdbSstFileSize`` where Spark reports it). The matches are checked against
MATCH_CEQL over the same files as a table (``check``: ``same`` or ``DIFFER``).

A state flat in the keys ever seen shows as rows and bytes that do not grow from one key count
to the next. Prints JSON lines and writes them to ``bench/out/stream-state-<date-time>.jsonl``.
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

OUT = Path(__file__).resolve().parent / "out"
QUERY = ("SELECT * FROM S WHERE S AS s ; B AS b FILTER b[price > s.price] "
         "PARTITION BY [name] WITHIN 2 SECONDS")
SCHEMA = "seq long, type string, name string, price long, ts long"
OPTIONS = {"time": "ts", "time_unit": "ms", "tie_break": "seq"}
STEP_MS = 10  # event time between two keys' first rows


def land(keys: int, rows_per_file: int, folder: Path) -> int:
    """The stream's Parquet files in ``folder``; the number of files."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    seq, names, types, prices, ts = [], [], [], [], []
    for i in range(keys):  # rows in time order: k<i>'s sale, k<i-50>'s buy, ...
        t = i * STEP_MS
        for name, kind, price, at in ((f"k{i}", "S", 5, t), (f"k{i - 50}", "B", 6, t)):
            if kind == "B" and i < 50:
                continue
            seq.append(len(seq))
            names.append(name)
            types.append(kind)
            prices.append(price)
            ts.append(at)
    for i in range(max(0, keys - 50), keys):  # the last buys
        seq.append(len(seq))
        names.append(f"k{i}")
        types.append("B")
        prices.append(6)
        ts.append((keys + 50) * STEP_MS)
    table = pa.table({"seq": seq, "type": types, "name": names, "price": prices, "ts": ts})
    folder.mkdir(parents=True)
    files = 0
    for start in range(0, table.num_rows, rows_per_file):
        pq.write_table(table.slice(start, rows_per_file), folder / f"part-{files:05d}.parquet")
        os.utime(folder / f"part-{files:05d}.parquet", (1_700_000_000 + files,) * 2)
        files += 1
    end = pa.table({"seq": [10**9], "type": ["Z"], "name": ["Z"], "price": [0],
                    "ts": [ts[-1] + 3_600_000]})
    pq.write_table(end, folder / f"part-{files:05d}.parquet")
    os.utime(folder / f"part-{files:05d}.parquet", (1_700_000_000 + files,) * 2)
    return files + 1


def measure(spark: Any, keys: int, buckets: int, rows_per_file: int, work: Path) -> dict[str, Any]:
    import ceql.spark

    folder = work / f"in-{keys}"
    files = land(keys, rows_per_file, folder) if not folder.exists() else \
        len(list(folder.glob("*.parquet")))
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(folder))
    matches = ceql.spark.match(stream, QUERY, watermark="1 second", buckets=buckets, **OPTIONS)
    sink = work / f"out-{keys}-{buckets}"  # files, not memory: a million matches
    t0 = time.perf_counter()
    q = (matches.writeStream.format("parquet").option("path", str(sink)).outputMode("append")
         .option("checkpointLocation", str(work / f"ck-{keys}-{buckets}"))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    seconds = time.perf_counter() - t0
    states = [p["stateOperators"][0] for p in q.recentProgress if p["stateOperators"]]
    rows = [int(s["numRowsTotal"]) for s in states]
    memory = [int(s["memoryUsedBytes"]) for s in states]
    custom = states[-1].get("customMetrics", {}) if states else {}
    # compared in Spark (a million ids do not come back to the driver)
    got = spark.read.parquet(str(sink)).select("match_id")
    want = ceql.spark.match(spark.read.schema(SCHEMA).parquet(str(folder)), QUERY,
                            **OPTIONS).select("match_id")
    n_got, n_want = got.count(), want.count()
    same = (n_got == n_want == keys and got.distinct().count() == n_got
            and got.exceptAll(want).count() == 0 and want.exceptAll(got).count() == 0)
    mid = len(states) // 2
    return {"keys": keys, "buckets": buckets, "rows": 2 * keys + 1, "micro_batches": files,
            "progress_reports": len(states), "seconds": round(seconds, 1),
            "state_rows_mid": rows[mid], "state_rows_max": max(rows),
            "state_rows_end": rows[-1], "memory_bytes_mid": memory[mid],
            "memory_bytes_max": max(memory), "memory_bytes_end": memory[-1],
            "sst_bytes_end": custom.get("rocksdbSstFileSize"),
            "matches": n_got, "check": "same" if same else "DIFFER"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keys", default="1000,10000,100000")
    ap.add_argument("--buckets", default="0,16")
    ap.add_argument("--rows-per-file", type=int, default=1000)
    ap.add_argument("--label", default="", help="a name for the run, in each line")
    args = ap.parse_args(argv)
    import ceql.spark

    # a loaded machine starts Python workers slowly: Spark's 15 s for one to connect back
    # fails the stream's first micro-batch
    spark = ceql.spark.local_session(**{"spark.log.level": "ERROR",
                                        "spark.sql.shuffle.partitions": "2",
                                        "spark.driver.memory": "4g",
                                        "spark.python.authenticate.socketTimeout": "300s"})
    spark.sparkContext.setLogLevel("ERROR")
    OUT.mkdir(exist_ok=True)
    out = OUT / f"stream-state-{dt.datetime.now():%Y%m%d-%H%M%S}.jsonl"
    work = Path(tempfile.mkdtemp(prefix="ceql-stream-state-"))
    try:
        for buckets in (int(b) for b in args.buckets.split(",")):
            for keys in (int(k) for k in args.keys.split(",")):
                row = {"label": args.label, **measure(spark, keys, buckets,
                                                      args.rows_per_file, work)}
                line = json.dumps(row)
                print(line, flush=True)
                with out.open("a") as f:
                    f.write(line + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
