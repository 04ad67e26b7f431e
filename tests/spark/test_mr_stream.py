"""MATCH_RECOGNIZE over Structured Streaming (issue 30, item 5): ``ceql.spark.match_recognize``
on a streaming DataFrame gives the batch call's rows over the same rows, each once — ONE ROW and
ALL ROWS PER MATCH, the body's Spark expressions computed on the stream, partitions kept per
key or hashed into buckets —, survives a restart from its checkpoint, counts late rows, and
refuses what a stream cannot run. The rows land as JSON files, out of time order within the
watermark's delay, one file a micro-batch, the last one a row far later that moves the
watermark past the rest."""

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

SCHEMA = "seq long, type string, name string, price long, ts timestamp"
T0 = dt.datetime(2026, 1, 5, 9, 30, tzinfo=dt.UTC)
DELAY = 3  # seconds: how far behind its time a row may land
END = 10**6  # the seq of the row far later


def _events(n: int, seed: int) -> list[dict[str, Any]]:
    """Sales (S) and buys (B) of two tickers; some share a time."""
    rnd = random.Random(seed)
    out, t = [], 0.0
    for i in range(n):
        t += rnd.choice([0, 0.5, 1, 1, 2])
        out.append({"seq": i, "type": rnd.choice("SSB"), "name": rnd.choice(["A", "B"]),
                    "price": rnd.randint(1, 9), "t": t})
    return out


def _land(folder: Path, index: int, rows: list[dict[str, Any]]) -> None:
    """One file, written then renamed into place, its time after the earlier files'."""
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".part-{index:03d}.tmp"
    tmp.write_text("".join(json.dumps({
        **{k: v for k, v in e.items() if k != "t"},
        "ts": (T0 + dt.timedelta(seconds=e["t"])).isoformat()}) + "\n" for e in rows),
        encoding="utf-8")
    os.utime(tmp, (1_700_000_000 + index, 1_700_000_000 + index))
    tmp.rename(folder / f"part-{index:03d}.json")


def _arrivals(events: list[dict[str, Any]], files: int, seed: int) -> list[list[dict[str, Any]]]:
    """The events in arrival order (each up to DELAY behind its time) cut into files, and a
    last file with a row far later (of its own ticker, Z) that moves the watermark on."""
    rnd = random.Random(seed)
    order = sorted(events, key=lambda e: (e["t"] + rnd.uniform(0, DELAY - 0.5), e["seq"]))
    size = -(-len(order) // files)
    end = {"seq": END, "type": "Z", "name": "Z", "price": 0, "t": events[-1]["t"] + 3600}
    return [*(order[i:i + size] for i in range(0, len(order), size)), [end]]


def _source(spark: Any, folder: Path) -> Any:
    return (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1)
            .json(str(folder)))


def _drain(out: Any, name: str, checkpoint: Path) -> Any:
    q = (out.writeStream.format("memory").queryName(name).outputMode("append")
         .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    q.awaitTermination()
    assert q.exception() is None
    return q


def _late(q: Any) -> int:
    return sum(p["observedMetrics"]["ceql"]["late_rows"] for p in q.recentProgress
               if "ceql" in p.get("observedMetrics", {}))


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _before_end(df: Any) -> Any:
    """The batch rows the stream can give: not the far row's (the watermark never passes it)
    nor its ticker's."""
    if "name" in df.columns:
        df = df.where("name <> 'Z'")
    return df.where(f"seq <> {END}") if "seq" in df.columns else df


#: name: (body, options of match_recognize, watermark on the DataFrame (else watermark=))
BODIES: dict[str, tuple[str, dict[str, Any], bool]] = {
    "one_row": (
        "PARTITION BY name ORDER BY ts MEASURES MATCH_NUMBER() AS n, FIRST(A.seq) AS s, "
        "LAST(B.seq) AS e, COUNT(B.*) AS rises AFTER MATCH SKIP PAST LAST ROW "
        "PATTERN (A B+) WITHIN INTERVAL '6' SECOND "
        "DEFINE A AS type = 'S', B AS B.price > PREV(B.price)", {"tie_break": "seq"}, True),
    "all_rows_spark_expressions": (
        "PARTITION BY name ORDER BY ts MEASURES CLASSIFIER() AS v, RUNNING COUNT(*) AS k, "
        "FINAL LAST(upper(C.type)) AS last_type ALL ROWS PER MATCH "
        "AFTER MATCH SKIP TO NEXT ROW PATTERN (S C{1,3}) WITHIN INTERVAL '4' SECOND "
        "DEFINE S AS lower(type) = 's', C AS pmod(C.price, 3) <> PREV(pmod(C.price, 3))",
        {"tie_break": "seq", "buckets": 0}, False),
    "unmatched_rows_one_partition": (
        "ORDER BY ts, seq MEASURES MATCH_NUMBER() AS n, PREV(A.price) AS before "
        "ALL ROWS PER MATCH WITH UNMATCHED ROWS PATTERN (A B) WITHIN INTERVAL '2' SECOND "
        "DEFINE A AS A.type = 'B', B AS B.price >= A.price", {}, True),
}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_stream_equals_batch(spark: Any, tmp_path: Path, name: str) -> None:
    body, options, own_watermark = BODIES[name]
    for i, piece in enumerate(_arrivals(_events(60, seed=len(name)), 3, seed=5)):
        _land(tmp_path / "in", i, piece)
    df = _source(spark, tmp_path / "in")
    more = dict(options)
    if own_watermark:
        df = df.withWatermark("ts", f"{DELAY} seconds")
    else:
        more["watermark"] = f"{DELAY} seconds"
    out = ceql.spark.match_recognize(df, body, **more)
    q = _drain(out, f"mr_{name}", tmp_path / "ck")
    table = spark.read.schema(SCHEMA).json(str(tmp_path / "in"))
    batch = ceql.spark.match_recognize(table, body, tie_break=options.get("tie_break", ()))
    got = spark.table(f"mr_{name}")
    assert got.schema == batch.schema  # the batch call's columns and types
    want = _rows(_before_end(batch))
    assert len(want) >= 5  # the body has output on this data
    assert _rows(got) == want
    assert _late(q) == 0


def test_restart_from_checkpoint_gives_each_match_once(spark: Any, tmp_path: Path) -> None:
    """Stopped after two files and restarted from its checkpoint after the rest: the Parquet
    the file sink wrote holds the batch answer, each row once."""
    body, options, _ = BODIES["one_row"]
    files = _arrivals(_events(60, seed=11), 4, seed=3)
    out = tmp_path / "out"

    def run() -> None:
        df = _source(spark, tmp_path / "in").withWatermark("ts", f"{DELAY} seconds")
        q = (ceql.spark.match_recognize(df, body, **options).writeStream.format("parquet")
             .option("path", str(out)).option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start())
        q.awaitTermination()
        assert q.exception() is None

    for i in (0, 1):
        _land(tmp_path / "in", i, files[i])
    run()
    first = spark.read.parquet(str(out)).count()
    for i in range(2, len(files)):
        _land(tmp_path / "in", i, files[i])
    run()
    batch = _before_end(ceql.spark.match_recognize(
        spark.read.schema(SCHEMA).json(str(tmp_path / "in")), body, **options))
    assert 0 < first < batch.count()
    got = spark.read.parquet(str(out))
    assert _rows(got) == _rows(batch)
    # MATCH_NUMBER() went on across the restart: each (name, n) once
    assert got.select("name", "n").distinct().count() == got.count()


def test_late_rows_are_counted_and_routed_to_the_view(spark: Any, tmp_path: Path) -> None:
    body, options, _ = BODIES["one_row"]
    events = _events(50, seed=5)
    old = [dict(e, seq=1000 + i) for i, e in enumerate(events[3:9])]  # long before the mark
    far = {"seq": END, "type": "Z", "name": "Z", "price": 0, "t": events[-1]["t"] + 3600}
    for i, piece in enumerate([events[:25], old + events[25:], [far]]):
        _land(tmp_path / "in", i, piece)
    df = _source(spark, tmp_path / "in").withWatermark("ts", f"{DELAY} seconds")
    q = _drain(ceql.spark.match_recognize(df, body, late_view="mr_late_rows", **options),
               "mr_late", tmp_path / "ck")
    assert _late(q) == len(old)
    side = _drain(spark.table("mr_late_rows"), "mr_late_side", tmp_path / "ck2")
    assert side.exception() is None
    seen = spark.table("mr_late_side")
    assert seen.columns == ["seq", "type", "name", "price", "ts"]  # the input's columns
    assert sorted(r["seq"] for r in seen.collect()) == [e["seq"] for e in old]
    in_time = spark.read.schema(SCHEMA).json(str(tmp_path / "in")).where("seq < 1000")
    assert _rows(spark.table("mr_late")) == _rows(
        _before_end(ceql.spark.match_recognize(in_time, body, **options)))


# ---------------------------------------------------------------- errors

BODY = ("PARTITION BY name ORDER BY ts MEASURES COUNT(*) AS c PATTERN (A B) "
        "WITHIN INTERVAL '5' SECOND DEFINE B AS B.price > A.price")


def _stream(spark: Any, tmp_path: Path) -> Any:
    _land(tmp_path / "in", 0, _events(3, seed=1))
    return _source(spark, tmp_path / "in")


def test_a_stream_needs_a_watermark_on_its_order_by_column(spark: Any, tmp_path: Path) -> None:
    df = _stream(spark, tmp_path)
    with pytest.raises(MatchCeqlError) as e:
        ceql.spark.match_recognize(df, BODY)
    assert str(e.value) == (
        "match_recognize: a stream needs a watermark on its event-time column, the body's "
        "first ORDER BY column 'ts', to know when its rows are complete: call "
        "df.withWatermark('ts', '10 seconds') first (how late a row may come), or pass "
        "watermark='10 seconds'.")
    marked = df.withColumn("arrived", df.ts).withWatermark("arrived", "1 second")
    with pytest.raises(MatchCeqlError) as e:
        ceql.spark.match_recognize(marked, BODY)
    assert str(e.value) == (
        "match_recognize: the stream's watermark is on 'arrived', but the body's ORDER BY "
        "starts with 'ts'; over a stream rows are ordered by the watermarked event time: write "
        "ORDER BY arrived first, or put the watermark on 'ts' (df.withWatermark('ts', …)), or "
        "pass watermark=….")
    # ORDER BY the watermarked column, or watermark=, runs
    ceql.spark.match_recognize(marked, BODY.replace("ORDER BY ts", "ORDER BY arrived"))
    ceql.spark.match_recognize(df, BODY, watermark=dt.timedelta(seconds=2))


def test_a_stream_refuses_what_it_cannot_run(spark: Any, tmp_path: Path) -> None:
    df = _stream(spark, tmp_path).withWatermark("ts", "1 second")
    with pytest.raises(MatchCeqlError, match=r"^match_recognize: over a stream the body needs "
                       r"WITHIN after PATTERN, or a match could wait for ever"):
        ceql.spark.match_recognize(df, BODY.replace("WITHIN INTERVAL '5' SECOND ", ""))
    with pytest.raises(MatchCeqlError, match=r"^match_recognize: over a stream ORDER BY ts "
                       r"DESC cannot be"):
        ceql.spark.match_recognize(df, BODY.replace("ORDER BY ts", "ORDER BY ts DESC"))
    with pytest.raises(MatchCeqlError) as e:
        ceql.spark.match_recognize(df, BODY.replace("ORDER BY ts", "ORDER BY seq"))
    assert str(e.value) == (
        "match_recognize: over a stream the first ORDER BY column is the event time, a "
        "TIMESTAMP with the watermark; 'seq' is bigint. Convert it first, e.g. "
        ".withColumn('seq', to_timestamp('seq')), and order by it.")
    with pytest.raises(MatchCeqlError, match=r"^match_recognize: a stream runs in Spark's "
                       r"streaming operator"):
        ceql.spark.match_recognize(df, BODY, jvm=True)
    with pytest.raises(MatchCeqlError, match=r"^match_recognize: buckets is a number"):
        ceql.spark.match_recognize(df, BODY, buckets=-1)


def test_stream_options_on_a_table_are_refused(spark: Any) -> None:
    df = spark.createDataFrame([(1, "S", "A", 1, dt.datetime(2026, 1, 1))], SCHEMA)
    with pytest.raises(MatchCeqlError, match=r"^match_recognize: watermark, late_view, buckets "
                       r"and metrics are for streaming DataFrames"):
        ceql.spark.match_recognize(df, BODY, watermark="1 second")
