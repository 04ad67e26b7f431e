"""Sessions with MATCH_CEQL: the shipped shim jar, its extension class, session helpers."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Any

from ceql.constants import EXTENSION_CLASS

from . import _quiet
from ._errors import MatchCeqlError
from ._stream import ROCKSDB_PROVIDER, STATE_STORE_PROVIDER
from .conf import PYTHON

__all__ = ["configure", "enable", "jar_path", "local_session", "register"]

#: Spark's Python worker daemon: ours imports ceql once, before forking workers.
DAEMON_CONF = "spark.python.daemon.module"
DAEMON_MODULE = "ceql.spark._daemon"


def jar_path() -> str:
    """The path of the shim jar shipped inside the package (``ceql/jars/ceql-shim.jar``)."""
    jar = Path(__file__).resolve().parent.parent / "jars" / "ceql-shim.jar"
    if not jar.is_file():
        raise MatchCeqlError(
            f"The ceql Spark shim jar is missing at {jar}; build it with "
            "`python -m ceql.spark.build_jar` (needs Java 17 and pyspark).")
    return str(jar)


def _append(existing: str | None, item: str, sep: str = ",") -> str:
    parts = [p for p in (existing or "").split(sep) if p.strip()]
    if item not in parts:
        parts.append(item)
    return sep.join(parts)


def _set_python() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def configure(builder: Any) -> Any:
    """Add the shim jar and extension to a ``SparkSession.Builder``; set ``PYSPARK_PYTHON``.

    Also makes the Python worker daemon import ceql before it forks workers (unless
    ``spark.python.daemon.module`` is set already). Call it before ``getOrCreate()``; returns
    the builder.
    """
    _set_python()
    options = getattr(builder, "_options", {})
    jars = _append(options.get("spark.jars"), jar_path())
    exts = _append(options.get("spark.sql.extensions"), EXTENSION_CLASS)
    builder = builder.config("spark.jars", jars).config("spark.sql.extensions", exts)
    if DAEMON_CONF not in options:
        builder = builder.config(DAEMON_CONF, DAEMON_MODULE)
    return builder


def enable(spark: Any) -> Any:
    """Make MATCH_CEQL available in a running session; returns the session.

    A session started with :func:`configure` (or ``--conf spark.sql.extensions=…``) already has
    everything. Otherwise the jar is added and the MATCH_CEQL table function registered, but the
    ``MATCH_CEQL( <CEQL> )`` syntax needs the extension at start-up (a warning says so).
    """
    _set_python()
    if EXTENSION_CLASS in (spark.conf.get("spark.sql.extensions", "") or ""):
        return spark
    register(spark)
    warnings.warn(
        "ceql: MATCH_CEQL(TABLE(t), query => '…') is registered in this running session; the "
        "MATCH_CEQL( <CEQL> ) syntax also needs the extension when the session starts: use "
        "ceql.spark.configure(builder) or ceql.spark.local_session().",
        stacklevel=2,
    )
    return spark


def register(spark: Any) -> None:
    """Add the jar to a running session and register MATCH_CEQL in it (no parser)."""
    PYTHON.set(spark, os.environ.get("PYSPARK_PYTHON", sys.executable))
    spark.sql(f"ADD JAR '{jar_path()}'")
    jvm = spark.sparkContext._jvm
    gateway = spark.sparkContext._gateway
    loader = spark._jsparkSession.sharedState().jarClassLoader()
    cls = jvm.java.lang.Class.forName(EXTENSION_CLASS, True, loader)
    types = gateway.new_array(jvm.java.lang.Class, 1)
    types[0] = jvm.java.lang.Class.forName("org.apache.spark.sql.SparkSession", True, loader)
    values = gateway.new_array(jvm.java.lang.Object, 1)
    values[0] = spark._jsparkSession
    cls.getMethod("register", types).invoke(None, values)


def local_session(**conf: str) -> Any:
    """A local[2] SparkSession with MATCH_CEQL: UI off, 4 shuffle partitions, this Python,
    the RocksDB state store (streams need it).

    Keyword arguments are extra Spark settings, e.g. ``local_session(**{"spark.x": "1"})``.

    A session whose JVM this starts is quiet: Spark logs errors only (ceql's own warnings
    too), from the JVM's start on, or from ``spark.log.level`` if given (e.g. ``"INFO"`` to
    debug); PySpark does not print analysis errors as JSON before raising them; the JVM's
    start-up warning about incubator modules is dropped from its standard error. Logging the
    user configures (log4j in ``spark.driver.extraJavaOptions``, a ``log4j2.properties`` in
    Spark's configuration directory, …) is left alone: see :mod:`ceql.spark._quiet`.
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    _set_python()
    builder = (SparkSession.builder.master("local[2]").appName("ceql")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config(STATE_STORE_PROVIDER, ROCKSDB_PROVIDER))  # streams need it
    for k, v in conf.items():
        builder = builder.config(k, v)
    builder = configure(builder)
    # the JVM's options count only when it starts; a running JVM keeps its logging
    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return builder.getOrCreate()
    options = dict(getattr(builder, "_options", {}))
    java = _quiet.java_options(options)
    if java is None:  # the user's logging
        return builder.getOrCreate()
    builder = builder.config(_quiet.JAVA_OPTIONS, java)
    if _quiet.hides_errors(options):
        _quiet.quiet_python_loggers()
    with _quiet.jvm_stderr_filtered():
        return builder.getOrCreate()
