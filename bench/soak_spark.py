"""The MATCH_CEQL side of the soak benchmark (``bench/soak.py --spark``).

One local Spark session (``local[1]``, one shuffle partition, so that a single Python worker
evaluates the whole stream in one task) runs MATCH_CEQL's table function over a generated
``spark.range`` stream and counts the output rows. The Python worker's memory is what issue 9
is about (a 4.1 GB worker before), so it is the worker that is sampled: the table function is
registered here as :class:`SoakMatchCeql`, MATCH_CEQL's own class with an ``eval`` that, after
its batch, appends the worker's VmRSS/VmHWM to a trace file every ``--chunk`` rows. Everything
else — analysis, the partitioning and ordering it requests, the runner, the retained rows — is
MATCH_CEQL's code unchanged; only the shim's row prefilter is absent (the JVM shim would push it
below the shuffle; it does not touch the Python worker).

This module must be importable by the Python workers: ``soak.py`` puts ``bench/`` on their
``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from ceql.spark.udtf.match_ceql import MatchCeql

TRACE_ENV = "CEQL_SOAK_TRACE"  # the trace file a worker appends to
EVERY_ENV = "CEQL_SOAK_EVERY"  # rows between two samples
_seen = [0, 0]  # rows fed in this worker process, rows at the last sample


def _status() -> tuple[float, float]:
    """VmRSS and VmHWM of this process, MB."""
    rss = hwm = 0.0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024
    return rss, hwm


class SoakMatchCeql(MatchCeql):
    """MATCH_CEQL, sampling the worker's memory every ``$CEQL_SOAK_EVERY`` rows."""

    def eval(self, *args: Any, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        yield from super().eval(*args, **kwargs)
        rows = sum(a.num_rows for a in (*args, *kwargs.values())
                   if isinstance(a, pa.RecordBatch))
        _seen[0] += rows
        every = int(os.environ.get(EVERY_ENV, "1000000"))
        if _seen[0] - _seen[1] >= every:
            _seen[1] = _seen[0] - _seen[0] % every
            rss, hwm = _status()
            with open(os.environ[TRACE_ENV], "a") as f:
                f.write(json.dumps({"events": _seen[0], "rss_mb": round(rss, 1),
                                    "hwm_mb": round(hwm, 1), "pid": os.getpid(),
                                    "at": time.time()}) + "\n")


def stream_sql(shape: str, events: int, keys: int, seed: int) -> str:
    """The generated stream of ``shape`` as a SQL query over ``range`` (the engine-only
    soak's distribution: types A/B uniform, one event per millisecond)."""
    key = "id" if shape == "unique" else f"CAST(floor(rand({seed + 1}) * {keys}) AS BIGINT)"
    return (f"SELECT IF(rand({seed}) < 0.5, 'A', 'B') AS type, {key} AS k, "
            f"CAST(id AS DOUBLE) / 1000 AS t FROM range({events})")


def run(shape: str, query: str, events: int, every: int, keys: int, seed: int,
        trace: str) -> dict[str, Any]:
    """One MATCH_CEQL soak pass in this (fresh) process: the result record, trace included."""
    from pyspark.sql.udtf import UserDefinedTableFunction
    from pyspark.util import PythonEvalType

    import ceql.spark

    os.environ[TRACE_ENV] = trace
    os.environ[EVERY_ENV] = str(every)
    spark = ceql.spark.local_session(**{
        "spark.master": "local[1]", "spark.sql.shuffle.partitions": "1",
        "spark.driver.memory": "2g", "spark.python.worker.reuse": "true"})
    spark.sparkContext.setLogLevel("ERROR")
    try:
        # As the JVM shim registers MATCH_CEQL: an Arrow UDTF with ``analyze`` (pyspark's
        # ``arrow_udtf`` helper refuses ``analyze``; the constructor does not).
        spark.udtf.register("SOAK_MATCH_CEQL", UserDefinedTableFunction(
            SoakMatchCeql, None, "SOAK_MATCH_CEQL", PythonEvalType.SQL_ARROW_UDTF, True))
        spark.sql(stream_sql(shape, events, keys, seed)).createOrReplaceTempView("soak_events")
        q = query.replace("'", "''")
        t0 = time.perf_counter()
        matches = spark.sql(
            "SELECT count(*) AS n FROM SOAK_MATCH_CEQL(TABLE(soak_events), "
            f"query => '{q}', time => 't')").collect()[0][0]
        wall = time.perf_counter() - t0
    finally:
        spark.stop()
    samples = []
    if os.path.exists(trace):
        with open(trace) as f:
            samples = [json.loads(line) for line in f if line.strip()]
    pids = sorted({s["pid"] for s in samples})
    return {"matches": matches, "seconds": round(wall, 3),
            "events_per_s": round(events / wall) if wall else None,
            "workers": len(pids), "trace": samples}
