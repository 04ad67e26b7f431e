"""Alerts from a stream of trades: tail a directory of JSON files with Structured Streaming.

Each file holds trades, one JSON object a line (``type`` SELL, BUY or CANCEL, ``name``,
``price``, ``ts`` as ISO-8601), as they land from an object store or an exporter; rows may come
up to the watermark delay (5 s) out of time order. The query:

    a SELL, then a higher BUY of the same ticker, and no CANCEL of it in between, within 10 s

Every micro-batch's alerts are printed and written to ``--output`` as Parquet, one folder per
batch id, overwritten when Spark replays a batch after a crash: with the checkpoint, the output
holds each alert exactly once, whatever stops the program (Ctrl-C, a kill, a reboot).

    .venv/bin/python examples/streaming.py --demo          # makes up trades for a few batches
    .venv/bin/python examples/streaming.py --input DIR --checkpoint DIR --output DIR [--once]

``--once`` reads what has landed and stops (``trigger(availableNow=True)``); otherwise it runs
until interrupted, a micro-batch every second. Late rows (older than the watermark when they
arrive) are never evaluated: each batch says how many there were.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import ceql.spark

QUERY = """
SELECT * FROM trades
WHERE SELL AS sell ; NOT CANCEL AS cancel ; BUY AS buy
FILTER buy[price > sell.price]
PARTITION BY [name]
WITHIN 10 SECONDS
"""
SCHEMA = "type string, name string, price double, ts timestamp"
WATERMARK = "5 seconds"


def alerts(spark: Any, input_dir: str) -> Any:
    """The streaming DataFrame of alerts over the files landing in ``input_dir``."""
    trades = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 4).json(input_dir)
    return ceql.spark.match(trades, QUERY, watermark=WATERMARK, bounds="price")


def start(spark: Any, input_dir: str, checkpoint: str, output: str, once: bool) -> Any:
    """Start the streaming query: print each batch's alerts, write them by batch id."""

    def write(batch: Any, batch_id: int) -> None:
        shown = batch.select("name", "match_start", "match_end", "match_start_price",
                             "match_end_price")
        rows = shown.orderBy("match_end", "name").collect()
        batch.write.mode("overwrite").parquet(f"{output}/batch_id={batch_id}")
        for r in rows:
            print(f"ALERT {r['name']}: sold at {r['match_start_price']:g} "
                  f"({r['match_start']}), "
                  f"bought higher at {r['match_end_price']:g} ({r['match_end']})",
                  flush=True)

    from pyspark.sql.streaming import StreamingQueryListener

    class LateRows(StreamingQueryListener):  # type: ignore[misc]
        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            seen = event.progress.observedMetrics.get(ceql.spark.METRICS)
            late = seen[ceql.spark.LATE_METRIC] if seen is not None else 0
            if late:
                print(f"batch {event.progress.batchId}: {late} late row(s) left out "
                      f"(older than the watermark, {WATERMARK} behind)", flush=True)

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    spark.streams.addListener(LateRows())
    writer = (alerts(spark, input_dir).writeStream.foreachBatch(write)
              .option("checkpointLocation", checkpoint))
    writer = writer.trigger(availableNow=True) if once else writer.trigger(
        processingTime="1 second")
    return writer.start()


def _land(folder: Path, index: int, trades: list[dict[str, Any]]) -> None:
    tmp = folder / f".trades-{index:04d}.tmp"
    tmp.write_text("".join(json.dumps(t) + "\n" for t in trades), encoding="utf-8")
    tmp.rename(folder / f"trades-{index:04d}.json")


def demo_trades(n: int, seed: int = 1) -> list[dict[str, Any]]:
    """``n`` made-up trades of four tickers, a few a second."""
    rnd = random.Random(seed)
    t0 = dt.datetime(2026, 11, 27, 9, 30, tzinfo=dt.UTC)
    out, t = [], 0.0
    for _ in range(n):
        t += rnd.choice([0.2, 0.5, 1.0])
        out.append({"type": rnd.choice(["SELL", "SELL", "BUY", "BUY", "CANCEL"]),
                    "name": rnd.choice(["ACME", "INIT", "GLOB", "UMBR"]),
                    "price": float(rnd.randint(90, 110)),
                    "ts": (t0 + dt.timedelta(seconds=t)).isoformat()})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--input", help="the directory the trade files land in")
    ap.add_argument("--checkpoint", help="the query's checkpoint directory")
    ap.add_argument("--output", help="where the alerts go (Parquet, one folder a batch)")
    ap.add_argument("--once", action="store_true", help="read what has landed, then stop")
    ap.add_argument("--demo", action="store_true", help="make up trades in a temporary folder")
    args = ap.parse_args(argv)
    spark = ceql.spark.local_session()
    if args.demo:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "in"
            folder.mkdir()
            trades = demo_trades(400)
            chunks = [trades[i:i + 50] for i in range(0, len(trades), 50)]
            query = start(spark, str(folder), f"{tmp}/ck", f"{tmp}/out", once=False)

            def feed() -> None:
                for i, chunk in enumerate(chunks):
                    _land(folder, i, chunk)
                    time.sleep(1.5)

            feeder = threading.Thread(target=feed)
            feeder.start()
            feeder.join()
            # until every trade is read and a batch more ran (the first one takes longest:
            # Spark plans the query and starts its state store and Python workers)
            while True:
                done = query.recentProgress
                read = sum(p["numInputRows"] for p in done)
                if query.exception() is not None or (
                        read == len(trades) and done[-1]["numInputRows"] == 0):
                    break
                query.awaitTermination(0.5)
            query.stop()
            if query.exception() is not None:
                raise query.exception()
            found = spark.read.parquet(f"{tmp}/out").count()
            print(f"{found} alerts from {len(trades)} trades in {len(chunks)} files")
        return 0
    if not (args.input and args.checkpoint and args.output):
        ap.error("give --input, --checkpoint and --output (or --demo)")
    query = start(spark, args.input, args.checkpoint, args.output, args.once)
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
