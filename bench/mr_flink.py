#!/usr/bin/env python3
"""MATCH_RECOGNIZE on the anchor stock stream (issue 30 item 7): ceql against Flink SQL and Spark.

Usage (from the repository root; needs Java 17's ``javac`` and a Python environment with
``apache-flink`` 2.3, whose jars the Flink SQL program is compiled against)::

    .venv/bin/python bench/mr_flink.py --flink-python /path/to/venv/bin/python \\
        [--events 1000000] [--repeat 3] [--only v_shape,pair,selective] [--no-spark]
        [--no-flink] [--streaming [--stream-files 20] [--stream-rounds 3]] [--profile N]

Three row patterns per ticker, each written once as a MATCH_RECOGNIZE body that ceql and
Flink both run (only the ORDER BY differs: Flink's must be its event-time attribute):

* ``v_shape``: ``PATTERN (A B+ C+ D)``, a fall, a rise, then a row that does not rise
  (Flink refuses a greedy quantifier at the end of a pattern, and ``PREV`` altogether —
  "physical offsets within partition" — so the previous row is ``LAST(B.price, 1)``, or
  ``A``'s / ``B``'s last row for a run's first row); ``AFTER MATCH SKIP TO LAST C``, so that
  every valley is one match and a window-function formulation gives the same rows;
* ``pair``: a sale straight followed by a dearer purchase (``PATTERN (A B)``);
* ``selective``: a large sale, a large purchase, a dearer purchase, in three consecutive rows
  (about 0.1 % of the rows end a match).

Columns, per workload, alternated ``--repeat`` times:

* **ceql**: ``ceql.match_recognize(body).evaluator(schema=…)`` (the engine the query's
  evaluator chooses for the table's schema: the columnar one for the pair and the triple, the
  leftmost Pike machine for the V-shape) fed the Arrow table then closed, in this process,
  process CPU time (one core; the CSV is read before);
* **Flink SQL** (``bench/flink/MrBench.java``, a fresh JVM per run, parallelism 1, streaming
  mode): a filesystem CSV source table (the stream's first ``--events`` rows without the
  header), ``rowtime`` = ``ts`` in ms with ``WATERMARK FOR rowtime AS rowtime - INTERVAL
  '0.001' SECOND`` (the stream has many rows in one ms: a watermark of the largest time seen
  would make the next rows of that ms late, and Flink drops them), ``ORDER BY rowtime, id``;
  the rows go to a counting sink. ``job s`` is ``env.execute()`` (local cluster start, CSV
  parsing and the pattern), ``empty s`` the same job reading every row and keeping none, and
  the throughput is over ``job − empty``;
* **Spark** (``--no-spark`` skips it), one local[2] session with ceql's shim, the rows read
  from the anchors' Parquet (``id < --events``) and cached: the formulation a Spark user writes
  today (``LAG`` for the pair and the triple; for the V-shape, runs of falls and rises found
  with window functions — gaps and islands — and a rising run after a falling one) and ceql's
  inline ``FROM S MATCH_RECOGNIZE ( … )``, each timed with a ``noop`` write.

* **streaming** (``--streaming``): the pair with a WITHIN (a stream needs one) through
  ``ceql.spark.match_recognize`` on a stream of ``bench/streaming.py``'s landed Parquet files,
  steady rate, against ``streaming.floor`` (a no-op transformWithStateInPandas) over all rows,
  both written to the ``noop`` sink. Spark's micro-batches keep getting faster for the first
  few streams of a session (the JVM warming up), so a floor stream runs first and is not
  counted, then ``--stream-rounds`` pairs alternate (ceql, floor), and each ceql stream is
  compared with the mean of the floor streams beside it. A last ceql stream into the
  ``memory`` sink checks the rows against the batch answer.

``--profile N`` prints cProfile's top N functions of ceql's engine per workload instead.

Every column's rows must be the same: equal counts and an equal digest (the sum over rows of
FNV-1a over the row's ids; Flink's program computes it too), and Flink's first rows are
ceql's. Prints Markdown tables and writes JSON lines to ``bench/out/mr_flink-<date-time>.jsonl``.
Flink is a peer for measurement only, never a test dependency.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast
from unittest import mock

import pyarrow as pa
import pyarrow.csv as pacsv

sys.path.insert(0, str(Path(__file__).resolve().parent))
import engine as eb
import flink as fb

OUT = eb.BENCH_DIR / "out"
KEEP = 200  # Flink's first rows, checked against ceql's
MASK = (1 << 64) - 1

#: workload -> (MR body with {order} for the ORDER BY, measure columns, Spark formulation)
WORKLOADS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "v_shape": (
        "PARTITION BY name ORDER BY {order} "
        "MEASURES A.id AS a_id, LAST(B.id) AS bottom_id, LAST(C.id) AS top_id, D.id AS d_id "
        "ONE ROW PER MATCH AFTER MATCH SKIP TO LAST C "
        "PATTERN (A B+ C+ D) "
        "DEFINE B AS (LAST(B.price, 1) IS NULL AND B.price < A.price) "
        "OR B.price < LAST(B.price, 1), "
        "C AS (LAST(C.price, 1) IS NULL AND C.price > LAST(B.price)) "
        "OR C.price > LAST(C.price, 1), "
        "D AS D.price <= LAST(C.price)",
        ("a_id", "bottom_id", "top_id", "d_id"),
        # runs of equal direction (gaps and islands); a rising run after a falling one and
        # followed by a row is a V: A is the row before the fall, D the row after the rise
        "WITH d AS (SELECT name, id, ts, LAG(id) OVER w AS prev_id, "
        "CASE WHEN price < LAG(price) OVER w THEN -1 WHEN price > LAG(price) OVER w THEN 1 "
        "ELSE 0 END AS dir FROM S WINDOW w AS (PARTITION BY name ORDER BY ts)), "
        "c AS (SELECT *, CASE WHEN dir = LAG(dir) OVER (PARTITION BY name ORDER BY ts) "
        "THEN 0 ELSE 1 END AS chg FROM d), "
        "r AS (SELECT *, SUM(chg) OVER (PARTITION BY name ORDER BY ts "
        "ROWS UNBOUNDED PRECEDING) AS run FROM c), "
        "runs AS (SELECT name, run, MIN(dir) AS dir, MIN_BY(prev_id, ts) AS before_id, "
        "MIN(id) AS first_id, MAX(id) AS last_id FROM r GROUP BY name, run), "
        "v AS (SELECT name, dir, last_id, LAG(dir) OVER x AS pdir, "
        "LAG(before_id) OVER x AS a_id, LAG(last_id) OVER x AS bottom_id, "
        "LEAD(first_id) OVER x AS d_id FROM runs WINDOW x AS (PARTITION BY name ORDER BY run)) "
        "SELECT name, a_id, bottom_id, last_id AS top_id, d_id FROM v "
        "WHERE dir = 1 AND pdir = -1 AND d_id IS NOT NULL"),
    "pair": (
        "PARTITION BY name ORDER BY {order} "
        "MEASURES A.id AS a_id, B.id AS b_id "
        "ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW "
        "PATTERN (A B) "
        "DEFINE A AS A.type = 'SELL', B AS B.type = 'BUY' AND B.price > A.price",
        ("a_id", "b_id"),
        "SELECT name, a_id, b_id FROM (SELECT name, type, price, id AS b_id, "
        "LAG(id) OVER w AS a_id, LAG(type) OVER w AS a_type, LAG(price) OVER w AS a_price "
        "FROM S WINDOW w AS (PARTITION BY name ORDER BY ts)) "
        "WHERE a_type = 'SELL' AND type = 'BUY' AND price > a_price"),
    "selective": (
        "PARTITION BY name ORDER BY {order} "
        "MEASURES A.id AS a_id, B.id AS b_id, C.id AS c_id "
        "ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW "
        "PATTERN (A B C) "
        "DEFINE A AS A.type = 'SELL' AND A.volume >= 4000, "
        "B AS B.type = 'BUY' AND B.volume >= 4000, "
        "C AS C.type = 'BUY' AND C.price > B.price",
        ("a_id", "b_id", "c_id"),
        "SELECT name, a_id, b_id, c_id FROM (SELECT name, id AS c_id, type AS c_type, "
        "price AS c_price, LAG(id, 2) OVER w AS a_id, LAG(type, 2) OVER w AS a_type, "
        "LAG(volume, 2) OVER w AS a_volume, LAG(id) OVER w AS b_id, LAG(type) OVER w AS b_type, "
        "LAG(volume) OVER w AS b_volume, LAG(price) OVER w AS b_price "
        "FROM S WINDOW w AS (PARTITION BY name ORDER BY ts)) "
        "WHERE a_type = 'SELL' AND a_volume >= 4000 AND b_type = 'BUY' AND b_volume >= 4000 "
        "AND c_type = 'BUY' AND c_price > b_price"),
}

#: ceql-only variants: name -> (body, the workload whose rows they must give). The V-shape as
#: a ceql user writes it, with PREV (Flink refuses PREV).
VARIANTS: dict[str, tuple[str, str]] = {
    "v_shape, PREV form": (
        "PARTITION BY name ORDER BY {order} "
        "MEASURES A.id AS a_id, LAST(B.id) AS bottom_id, LAST(C.id) AS top_id, D.id AS d_id "
        "ONE ROW PER MATCH AFTER MATCH SKIP TO LAST C "
        "PATTERN (A B+ C+ D) "
        "DEFINE B AS price < PREV(price), C AS price > PREV(price), D AS price <= PREV(price)",
        "v_shape"),
}


# --------------------------------------------------------------------------- rows
def fnv(values: Iterable[int]) -> int:
    """FNV-1a over 64-bit values (MrBench.java's ``fnv``)."""
    h = 0xcbf29ce484222325
    for v in values:
        h = ((h ^ (v & MASK)) * 0x100000001b3) & MASK
    return h


def digest(rows: Iterable[Sequence[int]]) -> int:
    """Sum mod 2^64 of the rows' FNV-1a: equal for equal multisets of rows."""
    return sum(fnv(r) for r in rows) & MASK


def body(name: str, order: str) -> str:
    """Workload (or variant) ``name``'s MATCH_RECOGNIZE body ordered by ``order``."""
    text = VARIANTS[name][0] if name in VARIANTS else WORKLOADS[name][0]
    return text.format(order=order)


def columns(name: str) -> tuple[str, ...]:
    """The measures of workload (or variant) ``name``."""
    return WORKLOADS[VARIANTS[name][1] if name in VARIANTS else name][1]


def headerless(events: int) -> Path:
    """The stream's first ``events`` rows without the CSV header (Flink's CSV format reads
    no header), cached beside the stream."""
    path = eb.CACHE_DIR / f"{fb.CSV.stem}.head{events}.noheader.csv"
    if not path.exists():
        tmp = path.with_name(path.name + ".tmp")
        with fb.CSV.open() as src, tmp.open("w") as dst:
            src.readline()
            for i, line in enumerate(src):
                if i == events:
                    break
                dst.write(line)
        tmp.replace(path)
    return path


# --------------------------------------------------------------------------- runners
def run_ceql(table: pa.Table, name: str) -> tuple[float, list[tuple[int, ...]]]:
    """ceql's MR engine over the Arrow table: process CPU seconds of feed + close, and the
    measures of every output row."""
    import ceql

    query = ceql.match_recognize(body(name, "ts"))
    cols = columns(name)
    t0 = time.process_time()
    ev = query.evaluator(schema=table.schema)
    out = ev.feed(table)
    out += ev.close()
    seconds = time.process_time() - t0
    return seconds, [tuple(int(cast(int, r[c])) for c in cols) for r in out]


def profile(table: pa.Table, name: str, top: int) -> str:
    """cProfile of one ceql engine run (feed + close): the ``top`` functions by own time."""
    import cProfile
    import io
    import pstats

    import ceql

    query = ceql.match_recognize(body(name, "ts"))
    prof = cProfile.Profile()
    prof.enable()
    ev = query.evaluator(schema=table.schema)
    ev.feed(table)
    ev.close()
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
    return buf.getvalue()


def run_flink(jars: Path, classes: Path, csv_file: Path, sql_file: Path | None,
              timeout: float) -> dict[str, Any]:
    """One Flink SQL job in a fresh JVM (``sql_file`` None: the empty job): its JSON line,
    with the JVM's CPU seconds (user + system, start to exit) added."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        r = subprocess.run(["java", "-cp", f"{jars}/*:{classes}", "MrBench", str(csv_file),
                            str(sql_file) if sql_file else "-", str(KEEP)],
                           capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": [f"timeout after {timeout:.0f} s"]}
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = r.stdout.strip().splitlines()
    if r.returncode or not lines:
        err = [x for x in r.stderr.strip().splitlines() if not x.lstrip().startswith("at ")]
        return {"error": err[-3:] or ["no output"]}
    out: dict[str, Any] = json.loads(lines[-1])
    out["jvm_wall_s"] = wall
    out["jvm_cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out


def flink_sql(name: str) -> str:
    """Workload ``name`` as the Flink program's query over its table S."""
    return f"SELECT * FROM S MATCH_RECOGNIZE ({body(name, 'rowtime, id')})"


def engine_vs_flink(a: argparse.Namespace, table: pa.Table, chosen: list[str],
                    out_file: Path) -> tuple[list[str], dict[str, tuple[int, int]], bool]:
    """ceql's engine and Flink SQL per workload: Markdown rows, (count, digest) per workload
    (ceql's), and whether every check held."""
    jars = fb.flink_jars(a.flink_python)
    csv_file = headerless(a.events)
    rows = ["| workload | rows ceql / Flink | ceql CPU s | ceql events/s | Flink job s | "
            "empty job s | Flink net s | Flink events/s (net) | Flink JVM CPU s (job / empty) "
            "| ceql ÷ Flink, wall net | ceql ÷ Flink, CPU net | same rows | load |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    answers: dict[str, tuple[int, int]] = {}
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        classes = Path(tmp)
        fb.compile_peer(jars, classes, "MrBench.java")
        for name in chosen:
            sql_file = classes / f"{name}.sql"
            sql_file.write_text(flink_sql(name))
            ceql_s: list[float] = []
            runs: dict[str, list[float]] = {"job": [], "empty": [], "job_cpu": [],
                                            "empty_cpu": []}
            got: list[tuple[int, ...]] = []
            flink: dict[str, Any] = {}
            for _ in range(a.repeat):
                s, got = run_ceql(table, name)
                ceql_s.append(s)
                flink = run_flink(jars, classes, csv_file, sql_file, a.timeout)
                if "error" in flink:
                    break
                empty = run_flink(jars, classes, csv_file, None, a.timeout)
                if "error" in empty:
                    flink = empty
                    break
                runs["job"].append(flink["job_seconds"])
                runs["job_cpu"].append(flink["jvm_cpu_s"])
                runs["empty"].append(empty["job_seconds"])
                runs["empty_cpu"].append(empty["jvm_cpu_s"])
            answers[name] = (len(got), digest(got))
            if "error" in flink:
                ok = False
                rows.append(f"| {name} | Flink failed: {' / '.join(flink['error'])} |")
                print(rows[-1], file=sys.stderr, flush=True)
                continue
            mine = set(got)
            first = [tuple(x) for x in flink["first"]]
            same = (len(got) == flink["matches"] and answers[name][1] == int(flink["digest"])
                    and all(f in mine for f in first))
            ok = ok and same
            c = statistics.median(ceql_s)
            j, e, jc, ec = (statistics.median(runs[k])
                            for k in ("job", "empty", "job_cpu", "empty_cpu"))
            net, net_cpu = j - e, jc - ec
            rec = {"part": "flink", "workload": name, "events": a.events,
                   "body": body(name, "ts"), "flink_sql": flink_sql(name), "ceql_s": ceql_s,
                   "flink_job_s": runs["job"], "flink_empty_s": runs["empty"],
                   "flink_jvm_cpu_s": runs["job_cpu"], "flink_empty_jvm_cpu_s": runs["empty_cpu"],
                   "rows": len(got), "flink_rows": flink["matches"],
                   "digest": str(answers[name][1]), "flink_digest": flink["digest"],
                   "check": "same" if same else "DIFFER", "load": eb.load_avg()}
            with out_file.open("a") as fh:
                fh.write(json.dumps(rec) + "\n")
            flink_eps = f"{a.events / net:,.0f}" if net > 0 else "–"
            ratio = f"{net / c:.2f}×" if net > 0 else "–"
            ratio_cpu = f"{net_cpu / c:.2f}×" if net_cpu > 0 else "–"
            rows.append(f"| {name} | {len(got):,} / {flink['matches']:,} | {c:.2f} | "
                        f"{a.events / c:,.0f} | {j:.2f} | {e:.2f} | {net:.2f} | {flink_eps} | "
                        f"{jc:.1f} / {ec:.1f} | {ratio} | {ratio_cpu} | {rec['check']} | "
                        f"{rec['load']} |")
            print(rows[-1], file=sys.stderr, flush=True)
    for name, (_, like) in VARIANTS.items():
        if like not in chosen:
            continue
        times = []
        for _ in range(a.repeat):
            s, got = run_ceql(table, name)
            times.append(s)
        same = (len(got), digest(got)) == answers[like]
        ok = ok and same
        c = statistics.median(times)
        rec = {"part": "variant", "workload": name, "events": a.events, "body": body(name, "ts"),
               "ceql_s": times, "rows": len(got), "check": "same" if same else "DIFFER",
               "load": eb.load_avg()}
        with out_file.open("a") as fh:
            fh.write(json.dumps(rec) + "\n")
        rows.append(f"| {name} (ceql only) | {len(got):,} / – | {c:.2f} | {a.events / c:,.0f} "
                    f"| | | | | | | | {rec['check']} (as {like}) | {rec['load']} |")
        print(rows[-1], file=sys.stderr, flush=True)
    return rows, answers, ok


# --------------------------------------------------------------------------- Spark
def spark_rows(spark: Any, sql: str, cols: Sequence[str]) -> list[tuple[int, ...]]:
    """Every row of ``sql``'s ``cols`` (ids), through Arrow."""
    t = spark.sql(sql).select(*cols).toArrow()
    return list(zip(*(t.column(c).to_pylist() for c in cols), strict=True))


def spark_part(a: argparse.Namespace, chosen: list[str], answers: dict[str, tuple[int, int]],
               out_file: Path) -> tuple[list[str], bool]:
    """The Spark formulation and ceql's inline MATCH_RECOGNIZE in one local[2] session."""
    import spark as sb

    spark = sb.session(a.driver_memory)
    rows = ["| workload | rows | Spark formulation s | ceql in Spark s | "
            "ceql in Spark ÷ formulation (speed) | same rows | load |",
            "|---|---:|---:|---:|---:|---|---:|"]
    ok = True
    try:
        path = sb.ensure_parquet(1_000_000, 42)
        df = spark.read.parquet(str(path)).where(f"id < {a.events}").cache()
        df.count()
        df.createOrReplaceTempView("S")
        for name in chosen:
            _, cols, formulation = WORKLOADS[name]
            inline = (f"SELECT name, {', '.join(cols)} FROM S "
                      f"MATCH_RECOGNIZE ({body(name, 'ts')})")
            checks = {}
            for label, sql in (("formulation", formulation), ("ceql", inline)):
                got = spark_rows(spark, sql, cols)
                checks[label] = (len(got), digest(got))
            want = answers.get(name)
            same = checks["formulation"] == checks["ceql"] and (want is None
                                                                 or checks["ceql"] == want)
            ok = ok and same
            form_s: list[float] = []
            ceql_s: list[float] = []
            for _ in range(a.repeat):
                form_s.append(sb.timed(spark, formulation, a.timeout))
                ceql_s.append(sb.timed(spark, inline, a.timeout))
            f, c = statistics.median(form_s), statistics.median(ceql_s)
            rec = {"part": "spark", "workload": name, "events": a.events,
                   "formulation": formulation, "inline": inline, "formulation_s": form_s,
                   "ceql_spark_s": ceql_s, "rows": checks["ceql"][0],
                   "formulation_rows": checks["formulation"][0],
                   "check": "same" if same else "DIFFER", "load": eb.load_avg()}
            with out_file.open("a") as fh:
                fh.write(json.dumps(rec) + "\n")
            rows.append(f"| {name} | {checks['ceql'][0]:,} / {checks['formulation'][0]:,} | "
                        f"{f:.2f} | {c:.2f} | {f / c:.2f}× | {rec['check']} | {rec['load']} |")
            print(rows[-1], file=sys.stderr, flush=True)
    finally:
        spark.stop()
    return rows, ok


#: the streamed workload: the pair with the WITHIN a stream needs, ordered by event time
STREAM_BODY = ("PARTITION BY name ORDER BY et, id "
               "MEASURES A.id AS a_id, B.id AS b_id "
               "ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW "
               "PATTERN (A B) WITHIN INTERVAL '10' SECOND "
               "DEFINE A AS A.type = 'SELL', B AS B.type = 'BUY' AND B.price > A.price")


def _no_op_processor() -> type:
    """A transformWithStateInPandas processor that evaluates nothing, shaped as ceql's
    operator (its constructor, its state variable): each call reads the key's state, counts the
    rows, writes 64 bytes back, registers a timer once and returns no row. Made in a function so
    that Spark ships it by value."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor
    from pyspark.sql.types import BinaryType, StructField, StructType

    class NoOp(StatefulProcessor):
        def __init__(self, plan: Any, output: Any, late_columns: Any) -> None:
            pass

        def init(self, handle: Any) -> None:
            self.handle = handle
            self.state = handle.getValueState(
                "ceql", StructType([StructField("key_state", BinaryType(), True)]))

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:
            first = self.state.get() is None
            sum(len(frame) for frame in rows)
            self.state.update((b"x" * 64,))
            if first:
                self.handle.registerTimer(timerValues.getCurrentWatermarkInMs() + 10**12)
            return iter(())

        def handleExpiredTimer(self, key: Any, timerValues: Any,
                               expiredTimerInfo: Any) -> Any:
            return iter(())

        def close(self) -> None:
            pass
    return NoOp


def streaming_part(a: argparse.Namespace, out_file: Path) -> list[str]:
    """``STREAM_BODY`` over the stream landed as ``--stream-files`` Parquet files, one a
    micro-batch (``bench/streaming.py``'s files and steady rate), against the no-op
    transformWithStateInPandas floor over the same rows, all of them kept (MATCH_RECOGNIZE has
    no prefilter: every row reaches the operator): a floor stream to warm the session up, then
    ``--stream-rounds`` alternated pairs, both into the ``noop`` sink; then the rows checked."""
    import streaming as st
    from pyspark.sql import functions as F

    import ceql.spark
    import spark as sb

    spark = sb.session(a.driver_memory)
    files = a.stream_files
    runs: list[dict[str, Any]] = []
    try:
        # Spark's state store may still write into a checkpoint as the folder goes
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
            work = Path(tmp)
            folder = st.landed(a.events, files, work)
            table = spark.read.parquet(str(folder)).withColumn("et", F.timestamp_micros("ts"))
            batch_df = ceql.spark.match_recognize(table, STREAM_BODY)
            t0 = time.perf_counter()
            batch_df.write.format("noop").mode("overwrite").save()
            batch_s = time.perf_counter() - t0
            want = {(r[0], r[1]) for r in batch_df.select("a_id", "b_id").collect()}

            def mr_stream(i: int, sink: str) -> Any:
                stream = (spark.readStream.schema(st.SCHEMA).option("maxFilesPerTrigger", 1)
                          .parquet(str(folder)).withColumn("et", F.timestamp_micros("ts")))
                out = ceql.spark.match_recognize(stream, STREAM_BODY, watermark="1 second",
                                                 buckets=st.BUCKETS[0])
                w = (out.writeStream.format(sink).outputMode("append")
                     .option("checkpointLocation", str(work / f"ck-mr-{i}")))
                q = (w.queryName("bench_mr_stream") if sink == "memory" else w).trigger(
                    availableNow=True).start()
                q.awaitTermination()
                return q

            def floor(i: int) -> dict[str, Any]:
                return st.floor(spark, a.events, files, work / f"f{i}", where="true")

            def same_plan(i: int) -> Any:
                """ceql's own stream plan with a processor that evaluates nothing."""
                import ceql.spark.stream.operator as op
                with mock.patch.object(op, "StreamProcessor", _no_op_processor()):
                    return mr_stream(1000 + i, "noop")

            def steady(q: Any) -> int:
                rows, secs, _ = st.steady(q)
                return round(rows / secs) if secs else 0
            floor(0)  # warm the session up; not counted
            steady(mr_stream(999, "noop"))
            for i in range(a.stream_rounds):
                runs.append({"kind": "ceql", "stream_eps": steady(mr_stream(i, "noop"))})
                runs.append({"kind": "same_plan", "stream_eps": steady(same_plan(i))})
                runs.append({**floor(i + 1), "kind": "floor"})
                print(f"round {i + 1}: " + ", ".join(f"{r['kind']} {r['stream_eps']:,}"
                                                     for r in runs[-3:]),
                      file=sys.stderr, flush=True)
            mr_stream(a.stream_rounds, "memory")
            got = {(r[0], r[1]) for r in
                   spark.table("bench_mr_stream").select("a_id", "b_id").collect()}
            # the stream gives batch rows only; the ones it does not give are held at its end
            # (a key's rows are released up to the watermark): how many, and how many of
            # those end before the last row the stream gave
            held = want - got
            last_given = max((b for _, b in got), default=-1)
            check = "same" if got <= want else "DIFFER"
            late = sum(1 for _, b in held if b <= last_given)
    finally:
        spark.stop()
    # each ceql stream against the mean of each floor's streams beside it (before and after)
    def beside(i: int, kind: str) -> list[int]:
        before = [r["stream_eps"] for r in runs[:i] if r["kind"] == kind][-1:]
        after = [r["stream_eps"] for r in runs[i + 1:] if r["kind"] == kind][:1]
        return [*before, *after]
    table = []
    for i, r in enumerate(runs):
        if r["kind"] == "ceql":
            same, fl = beside(i, "same_plan"), beside(i, "floor")
            table.append((r["stream_eps"], same, fl, r["stream_eps"] / (sum(same) / len(same)),
                          r["stream_eps"] / (sum(fl) / len(fl))))
    ratios = [t[3] for t in table]
    rec = {"part": "streaming", "events": a.events, "files": files, "body": STREAM_BODY,
           "runs": runs, "ratios": [round(r, 3) for r in ratios], "batch_s": batch_s,
           "matches_batch": len(want), "matches_stream": len(got), "held": len(held),
           "held_before_last_given": late, "check": check, "load": eb.load_avg()}
    with out_file.open("a") as fh:
        fh.write(json.dumps(rec) + "\n")
    lines = ["| round | MR stream events/s (steady) | no-op processor in ceql's plan events/s "
             "(the streams beside it) | MR ÷ no-op, same plan | no-op "
             "transformWithStateInPandas (`streaming.floor`) events/s | MR ÷ that |",
             "|---:|---:|---:|---:|---:|---:|"]
    for i, (e, same, fl, r_same, r_fl) in enumerate(table):
        lines.append(f"| {i + 1} | {e:,} | {' / '.join(f'{x:,}' for x in same)} | "
                     f"{r_same:.2f}× | {' / '.join(f'{x:,}' for x in fl)} | {r_fl:.2f}× |")
    lines += ["", "| events | files (micro-batches) | matches batch / stream (held at the end, "
              "of which before the stream's last) | batch events/s | stream ⊆ batch | load |",
              "|---:|---:|---:|---:|---|---:|",
              f"| {a.events:,} | {files} | {len(want):,} / {len(got):,} ({len(held)}, {late}) "
              f"| {a.events / batch_s:,.0f} | {check} | {rec['load']} |"]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--flink-python", required=True,
                    help="a Python whose environment has apache-flink 2.3 (its jars are used)")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default=",".join(WORKLOADS))
    ap.add_argument("--no-spark", action="store_true", help="skip the Spark columns")
    ap.add_argument("--no-flink", action="store_true", help="skip ceql's engine and Flink")
    ap.add_argument("--streaming", action="store_true",
                    help="also stream the pair (with WITHIN) against a no-op "
                         "transformWithStateInPandas")
    ap.add_argument("--stream-rounds", type=int, default=3,
                    help="alternated (ceql, no-op) stream pairs after a warm-up (default 3)")
    ap.add_argument("--stream-files", type=int, default=20,
                    help="Parquet files the stream comes in, one a micro-batch (default 20)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="only profile ceql's engine (cProfile, the N functions of most own "
                         "time) on each workload, and stop")
    a = ap.parse_args(argv)
    chosen = [w.strip() for w in a.only.split(",") if w.strip()]
    if a.profile:
        table = pacsv.read_csv(eb.ensure_stream(1_000_000, 42)).slice(0, a.events)
        for name in chosen + [v for v, (_, like) in VARIANTS.items() if like in chosen]:
            print(f"## {name}\n{profile(table, name, a.profile)}")
        return 0
    eb.ensure_stream(1_000_000, 42)
    OUT.mkdir(exist_ok=True)
    out_file = OUT / f"mr_flink-{dt.datetime.now():%Y%m%d-%H%M%S}.jsonl"
    ok = True
    tables: list[list[str]] = []
    answers: dict[str, tuple[int, int]] = {}
    if not a.no_flink:
        table = pacsv.read_csv(fb.CSV).slice(0, a.events)
        rows, answers, ok = engine_vs_flink(a, table, chosen, out_file)
        tables.append(rows)
        del table
    if not a.no_spark:
        rows, spark_ok = spark_part(a, chosen, answers, out_file)
        tables.append(rows)
        ok = ok and spark_ok
    if a.streaming:
        tables.append(streaming_part(a, out_file))
    print(f"Machine: {eb.cpu_model()}, {eb.ram_gib():.0f} GiB; {a.events:,} events; "
          f"median of {a.repeat}; records in {out_file.relative_to(eb.REPO_DIR)}\n")
    print("\n\n".join("\n".join(t) for t in tables))
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
