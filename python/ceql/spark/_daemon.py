"""Spark's Python worker daemon, started with ceql already imported.

Spark forks every Python worker from one daemon process; with this module as the daemon
(``spark.python.daemon.module``, which :func:`ceql.spark.configure` sets unless it is set
already) each forked worker inherits ceql, pyarrow and numpy instead of importing them again
for every task. Only the imports differ from ``pyspark.daemon``; if they fail, the daemon
still starts and workers import what they need as usual.
"""

from __future__ import annotations

import importlib

from pyspark.daemon import manager

# warm-up only: a worker that needs these imports them itself otherwise (MATCH_SPASEQ's needs
# pyoxigraph, the spaseq extra)
for _module in ("ceql.spark._udtf", "ceql.spark._spaseq_udtf"):
    try:
        importlib.import_module(_module)
    except Exception:  # pragma: no cover - depends on the worker's environment
        pass

__all__: list[str] = []

if __name__ == "__main__":
    manager()
