"""Spark's Python worker daemon, started with ceql already imported.

Spark forks every Python worker from one daemon process; with this module as the daemon
(``spark.python.daemon.module``, which :func:`ceql.spark.configure` sets unless it is set
already) each forked worker inherits ceql, pyarrow and numpy instead of importing them again
for every task. If the imports fail, the daemon still starts and workers import what they need
as usual.

One more difference from ``pyspark.daemon``: a worker whose reader went away (``show(3)``
needs three rows, so the JVM stops reading a MATCH_CEQL task's output and closes the socket)
ends quietly. PySpark's daemon prints that worker's ``BrokenPipeError`` traceback, from its
last flush of the dead socket, on the console; the worker's result was no longer wanted.
"""

from __future__ import annotations

import importlib
import socket
from collections.abc import Callable

import pyspark.daemon
from pyspark.daemon import manager

from ceql.constants import TABLE_FUNCTIONS

# warm-up only: a worker that needs these imports them itself otherwise (MATCH_SPASEQ's needs
# pyoxigraph, the spaseq extra)
for _function in TABLE_FUNCTIONS:
    try:
        importlib.import_module(_function.python_module)
    except Exception:  # pragma: no cover - depends on the worker's environment
        pass

__all__ = ["main", "quiet_worker"]

Worker = Callable[[socket.socket, bool], int]


def quiet_worker(worker: Worker) -> Worker:
    """``worker`` (``pyspark.daemon.worker``: one task's work in a forked process, its exit
    code) ending with a non-zero code, and no traceback, when the JVM closed the socket."""
    def run(sock: socket.socket, authenticated: bool) -> int:
        try:
            return worker(sock, authenticated)
        except (BrokenPipeError, ConnectionResetError):
            return 1  # the daemon's child then exits: its socket is dead

    return run


def main() -> None:
    """Run the daemon: pyspark's, its workers ending quietly."""
    # manager() looks the function up in its module when it forks a worker
    pyspark.daemon.worker = quiet_worker(pyspark.daemon.worker)  # type: ignore[assignment]
    manager()


if __name__ == "__main__":
    main()
