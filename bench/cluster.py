#!/usr/bin/env python3
"""MATCH_CEQL on a Spark standalone cluster: throughput and peak executor memory, 1 against 2
executors in the same run (issue 14).

Usage (from the repository root)::

    .venv/bin/python bench/cluster.py [--rows 20000000] [--layouts 1000,10] [--shapes p3,p3corr]
                                      [--executors 1,2] [--timeout 3600] [--no-pin]

It starts a master and two workers from the installed pyspark on 127.0.0.1 (1 core, 2 GB each;
``tests/e2e/cluster_helpers.py``, the commands of README's "On a cluster"), and for each
workload submits this file with ``spark-submit --master spark://…`` once per executor count,
alternating, so that a change of load on the machine falls on both counts alike. One executor
is ``spark.cores.max=1`` (the application gets one of the two workers), two is both workers.
Executors run this repository's Python (ceql installed there: ``spark.pyspark.python``).
Worker n is pinned to CPU n-1 (``sched_setaffinity``, inherited by its executor and the Python
workers below it), so that each worker stands for a one-core machine: unpinned, one executor's
JVM and Python worker together keep more than one core busy (they run as a pipeline), and a
second executor on a 2-core machine finds little left (``--no-pin`` measures that).

**Input.** ``--rows`` trades generated once (NumPy, fixed seed) and stored as 40 Parquet files
under ``bench/out/cluster/``: ``type`` SELL or BUY, ``volume`` uniform in 1…10 000, ``price``,
``id``, ``ts`` in µs with one trade every 25 µs (20 M rows span 500 s), and two keys:
``k1000`` (1 000 keys, uniform) and ``k10`` (10 keys with Zipf weights 1/(j+1): the largest holds
34 % of the rows, one task's worth that no executor count splits).

**Workloads.** P3's shape per key, all matches: ``SELECT a, b, c FROM S WHERE SELL AS a ; BUY AS
b ; BUY AS c FILTER a[volume > 9500] AND b[volume > 9500] AND c[volume > 9500] PARTITION BY [k]
WITHIN w`` (``p3``), and with the condition between events ``AND c[price > b.price]``
(``p3corr``). The window keeps the rows of a key in a window alike across layouts: 1 s over
1 000 keys, 10 ms over 10 keys. The timed action is one pass that counts the matches and XORs a
hash of ``(match_id, a.id, b.id, c.id)``: both executor counts must give the same count and
digest ("same matches"). Each job runs it once untimed first (JIT, Python workers, imports),
then once timed; the two must agree.

**Memory and CPU.** While a job runs, every 0.5 s, the proportional set size (PSS, from
``/proc/<pid>/smaps_rollup``) of each executor JVM and of the Python workers below it (the
figure is the largest executor's peak of JVM + Python), and their CPU time, per executor,
when the timed query starts and ends. "× 1 executor, by CPU" is the one-executor run's CPU time
over the busiest executor's in the two-executor run: the speed-up if each executor had its
core to itself, which a machine shared with other work does not give the clock.

Prints a Markdown table; JSON lines go to ``bench/out/cluster-<date-time>.jsonl``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
DATA = OUT / "cluster"
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

STEP_US = 25
FILES = 40
WINDOWS = {"1000": "1 SECONDS", "10": "10 MILLISECONDS"}
P3 = ("SELECT a, b, c FROM S WHERE SELL AS a ; BUY AS b ; BUY AS c FILTER a[volume > 9500] "
      "AND b[volume > 9500] AND c[volume > 9500]{extra} PARTITION BY [{key}] WITHIN {window}")
SHAPES = {"p3": "", "p3corr": " AND c[price > b.price]"}
#: settings of every submit; AQE must not coalesce the 8 shuffle partitions into fewer tasks
CONF = ("spark.executor.memory=1g", "spark.sql.shuffle.partitions=8",
        "spark.sql.adaptive.coalescePartitions.enabled=false",
        "spark.ui.showConsoleProgress=false", "spark.python.daemon.module=ceql.spark._daemon")


def query(layout: str, shape: str) -> str:
    """The CEQL text of a workload."""
    return P3.format(extra=SHAPES[shape], key=f"k{layout}", window=WINDOWS[layout])


# --------------------------------------------------------------------------- input
def ensure_data(rows: int, seed: int = 14) -> Path:
    """The trades as Parquet files (written once per size)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = DATA / f"trades_{rows}_seed{seed}"
    if (folder / "_done").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, 11)
    weights /= weights.sum()
    per_file = -(-rows // FILES)
    for f in range(FILES):
        lo, hi = f * per_file, min(rows, (f + 1) * per_file)
        n = hi - lo
        if n <= 0:
            break
        ids = np.arange(lo, hi, dtype=np.int64)
        table = pa.table({
            "id": ids,
            "type": pa.DictionaryArray.from_arrays(
                pa.array(rng.integers(0, 2, n, dtype=np.int8)), pa.array(["SELL", "BUY"])
            ).cast(pa.string()),
            "k1000": rng.integers(0, 1000, n, dtype=np.int32),
            "k10": rng.choice(10, n, p=weights).astype(np.int32),
            "volume": rng.integers(1, 10_001, n, dtype=np.int32),
            "price": np.round(rng.uniform(10, 110, n), 2),
            "ts": ids * STEP_US,
        })
        pq.write_table(table, folder / f"part-{f:03d}.parquet", row_group_size=1 << 20)
    (folder / "_done").write_text("")
    return folder


# --------------------------------------------------------------------------- the job
def job(argv: list[str]) -> None:
    """Inside ``spark-submit``: warm up, run one workload once, write its record."""
    p = argparse.ArgumentParser()
    p.add_argument("--input", required=True)
    p.add_argument("--layout", required=True)
    p.add_argument("--shape", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("ceql-cluster-bench").getOrCreate()
    spark.read.parquet(args.input).createOrReplaceTempView("S")
    text = query(args.layout, args.shape).replace("'", "\\'")
    key = f"k{args.layout}"
    sql = (f"SELECT count(*) AS matches, bit_xor(xxhash64(match_id, a[0].id, b[0].id, "
           f"c[0].id)) AS digest FROM MATCH_CEQL(TABLE(S), query => '{text}', "
           f"time_unit => 'us')")
    # warm-up, untimed: the same query once, so that the timed one finds the executors' JIT
    # done, their Python workers started and ceql imported (steady state)
    warm = spark.sql(sql).collect()[0]
    before = {e["id"]: e["completedTasks"] for e in _rest(spark, "allexecutors")}
    flag = Path(args.out)
    time.sleep(1.0)  # the sampler's CPU mark falls between the warm-up and the query
    flag.with_suffix(".start").write_text("")
    time.sleep(1.0)
    t0 = time.perf_counter()
    row = spark.sql(sql).collect()[0]
    seconds = time.perf_counter() - t0
    flag.with_suffix(".end").write_text("")
    time.sleep(1.0)
    tasks = {e["id"]: e["completedTasks"] - before.get(e["id"], 0)
             for e in _rest(spark, "allexecutors") if e["id"] != "driver"}
    rows = spark.read.parquet(args.input).count()
    assert (warm.matches, warm.digest) == (row.matches, row.digest)
    Path(args.out).write_text(json.dumps({
        "key": key, "rows": rows, "seconds": seconds, "matches": row.matches,
        "digest": row.digest, "tasks": tasks,
        "executors": len([e for e in _rest(spark, "executors") if e["id"] != "driver"])}))
    spark.stop()


def _rest(spark: Any, path: str) -> Any:
    url = (f"{spark.sparkContext.uiWebUrl}/api/v1/applications/"
           f"{spark.sparkContext.applicationId}/{path}")
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)


# --------------------------------------------------------------------------- memory
def pss_bytes(pid: int) -> int:
    """A process's proportional set size (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class Sampler(threading.Thread):
    """Every ``period`` seconds: the PSS of each executor JVM and of the Python workers below
    it (peaks kept), and the CPU time of those processes when the job's timed query starts and
    ends (the job touches ``flag`` + ``.start`` / ``.end``)."""

    def __init__(self, cluster: Any, flag: Path, period: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.cluster, self.flag, self.period = cluster, flag, period
        self.stopped = threading.Event()
        self.peak: dict[int, dict[str, int]] = {}  # executor pid → jvm, python, total
        self.cpu: dict[int, tuple[int, float]] = {}  # pid → its executor, CPU s last seen
        self.marks: dict[str, dict[int, float]] = {}  # "start" / "end" → executor → CPU s

    def run(self) -> None:
        while not self.stopped.is_set():
            self.sample()
            self.stopped.wait(self.period)
        self.sample()

    def sample(self) -> None:
        from cluster_helpers import descendants

        for n in self.cluster.alive_workers():
            for ex in self.cluster.executors(n):
                tree = [ex, *descendants(ex)]
                jvm = pss_bytes(ex)
                py = sum(pss_bytes(d) for d in tree[1:])
                peak = self.peak.setdefault(ex, {"jvm": 0, "python": 0, "total": 0})
                peak["jvm"] = max(peak["jvm"], jvm)
                peak["python"] = max(peak["python"], py)
                peak["total"] = max(peak["total"], jvm + py)
                for p in tree:
                    self.cpu[p] = (ex, max(self.cpu.get(p, (ex, 0.0))[1], cpu_seconds(p)))
        for mark in ("start", "end"):
            if mark not in self.marks and self.flag.with_suffix(f".{mark}").exists():
                per: dict[int, float] = {}
                for ex, cpu in self.cpu.values():
                    per[ex] = per.get(ex, 0.0) + cpu
                self.marks[mark] = per

    def result(self) -> dict[str, int]:
        """The executor with the largest total peak (zeros if none was seen)."""
        return max(self.peak.values(), key=lambda p: p["total"],
                   default={"jvm": 0, "python": 0, "total": 0})

    def query_cpu(self) -> list[float] | None:
        """Each executor's CPU seconds (its JVM and Python workers) during the timed query,
        largest first."""
        if "start" not in self.marks or "end" not in self.marks:
            return None
        start, end = self.marks["start"], self.marks["end"]
        return sorted((round(cpu - start.get(ex, 0.0), 2) for ex, cpu in end.items()),
                      reverse=True)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------- orchestration
def submit(cluster: Any, data: Path, layout: str, shape: str, executors: int,
           timeout: float, work: Path) -> dict[str, Any]:
    """One spark-submit of the job; its record with the memory peak, or a timeout."""
    import ceql.spark

    out = work / f"{layout}-{shape}-{executors}.json"
    conf = [*CONF, f"spark.cores.max={executors}", f"spark.pyspark.python={sys.executable}"]
    command = cluster.submit_command(
        "--jars", ceql.spark.jar_path(),
        "--conf", f"spark.sql.extensions={ceql.spark.EXTENSION_CLASS}",
        *(a for c in conf for a in ("--conf", c)),
        str(Path(__file__).resolve()), "--job", "--input", str(data), "--layout", layout,
        "--shape", shape, "--out", str(out))
    log = out.with_suffix(".log")
    sampler = Sampler(cluster, out)
    load = os.getloadavg()[0]
    with log.open("w") as f:
        proc = subprocess.Popen(command, env=cluster.submit_env(), stdout=f,
                                stderr=subprocess.STDOUT, start_new_session=True)
        sampler.start()
        code: int | None = None
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        finally:
            if proc.poll() is None:  # timed out or interrupted: our own spark-submit session
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            sampler.stopped.set()
            sampler.join()
    record: dict[str, Any] = {"layout": layout, "shape": shape, "executors": executors,
                              "query": query(layout, shape), "load_1min": round(load, 2),
                              "load_1min_end": round(os.getloadavg()[0], 2),
                              "peak": sampler.result(), "executor_cpu_s": sampler.query_cpu()}
    if code is None:
        record["timeout"] = timeout
    elif code != 0:
        record["error"] = log.read_text()[-3000:]
    else:
        record.update(json.loads(out.read_text()))
    return record


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, allow_abbrev=False,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--job", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--layouts", default="1000,10")
    ap.add_argument("--shapes", default="p3,p3corr")
    ap.add_argument("--executors", default="1,2")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--no-pin", action="store_true",
                    help="let every worker use every CPU (default: worker n on CPU n-1)")
    args, rest = ap.parse_known_args()
    if args.job:
        job(rest)
        return
    from cluster_helpers import Cluster

    # a TERM (or a hang-up) unwinds like Ctrl-C, so the cluster below is stopped
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _: sys.exit(128 + signum))
    started = dt.datetime.now()
    stamp = started.strftime("%Y%m%d-%H%M%S")
    t = time.perf_counter()
    data = ensure_data(args.rows)
    print(f"input: {data} ({time.perf_counter() - t:.0f} s)", flush=True)
    work = DATA / f"run-{stamp}"
    OUT.mkdir(parents=True, exist_ok=True)
    jsonl = OUT / f"cluster-{stamp}.jsonl"
    records = []
    print(f"{platform.node()}, {os.cpu_count()} CPUs, load {os.getloadavg()}, "
          f"started {started:%Y-%m-%d %H:%M}", flush=True)
    cpus = () if args.no_pin else sorted(os.sched_getaffinity(0))[:2]
    print(f"workers pinned to CPUs {list(cpus)}" if cpus else "workers not pinned", flush=True)
    with Cluster(work, workers=2, cores=1, memory="2g", cpus=cpus) as cluster:
        for layout in args.layouts.split(","):
            for shape in args.shapes.split(","):
                for n in (int(x) for x in args.executors.split(",")):
                    rec = submit(cluster, data, layout, shape, n, args.timeout, work)
                    records.append(rec)
                    with jsonl.open("a") as f:
                        f.write(json.dumps(rec) + "\n")
                    print(row(rec), flush=True)
    print(f"\nfinished {dt.datetime.now():%Y-%m-%d %H:%M}; {jsonl}\n")
    print(table(records))


def row(r: dict[str, Any]) -> str:
    """One record in a line (progress)."""
    if "seconds" not in r:
        return f"{r['layout']} {r['shape']} x{r['executors']}: " + (
            f">{r['timeout']:.0f} s" if "timeout" in r else "ERROR " + r["error"][-500:])
    return (f"{r['layout']} {r['shape']} x{r['executors']}: {r['seconds']:.1f} s, "
            f"{r['rows'] / r['seconds']:,.0f} rows/s, {r['matches']:,} matches, "
            f"peak {r['peak']['total'] / 2**20:.0f} MB, CPU {r['executor_cpu_s']} s, "
            f"tasks {r['tasks']}, "
            f"load {r['load_1min']}")


def table(records: list[dict[str, Any]]) -> str:
    """The Markdown table: per workload and executor count, with the ratios to 1 executor."""
    lines = ["| keys | shape | executors | seconds | rows/s | × 1 executor | executors' CPU s "
             "(each) | × 1 executor, by CPU | matches | same matches | peak executor PSS MB "
             "(JVM + Python) | tasks per executor | load 1 min |",
             "|---:|---|---:|---:|---:|---:|---|---:|---:|---|---|---|---|"]
    base: dict[tuple[str, str], dict[str, Any]] = {}
    for r in records:
        k = (r["layout"], r["shape"])
        if "seconds" not in r:
            lines.append(f"| {r['layout']} | {r['shape']} | {r['executors']} "
                         f"| {'>' + str(int(r['timeout'])) if 'timeout' in r else 'error'} "
                         "| | | | | | | | | |")
            continue
        first = base.setdefault(k, r)
        cpu = r["executor_cpu_s"] or []
        speed = by_cpu = same = ""
        if first is not r:
            speed = f"{first['seconds'] / r['seconds']:.2f}×"
            if cpu and first["executor_cpu_s"]:
                by_cpu = f"{sum(first['executor_cpu_s']) / max(cpu):.2f}×"
            same = ("equal" if (first["matches"], first["digest"]) == (r["matches"],
                                                                        r["digest"])
                    else "DIFFER")
        peak = r["peak"]
        each = " + ".join(f"{c:.1f}" for c in cpu)
        lines.append(
            f"| {r['layout']} | {r['shape']} | {r['executors']} | {r['seconds']:.1f} "
            f"| {r['rows'] / r['seconds']:,.0f} | {speed} "
            f"| {sum(cpu):.1f}{f' ({each})' if len(cpu) > 1 else ''} | {by_cpu} "
            f"| {r['matches']:,} | {same} | {peak['total'] / 2**20:.0f} "
            f"({peak['jvm'] / 2**20:.0f} + {peak['python'] / 2**20:.0f}) "
            f"| {', '.join(str(v) for _, v in sorted(r['tasks'].items()))} "
            f"| {r['load_1min']}–{r['load_1min_end']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
