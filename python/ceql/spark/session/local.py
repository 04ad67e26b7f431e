"""Sessions with MATCH_CEQL: the shipped shim jar, its extension class, session helpers, and
the settings of a server (Spark Connect, Thrift, ``spark-submit``) that runs it."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Any

from ceql.constants import EXTENSION_CLASS, MATCH_CEQL, MATCH_SPASEQ
from ceql.spark.conf import PYTHON
from ceql.spark.errors import MatchCeqlError
from ceql.spark.session import quiet as _quiet
from ceql.spark.session.connect import has_extension, is_connect, remote_url, table_function
from ceql.spark.stream.operator import ROCKSDB_CHANGELOG, ROCKSDB_PROVIDER, STATE_STORE_PROVIDER

__all__ = ["configure", "enable", "jar_path", "local_session", "register", "server_conf"]

#: Spark's Python worker daemon: ours imports ceql once, before forking workers.
DAEMON_CONF = "spark.python.daemon.module"
DAEMON_MODULE = "ceql.spark._daemon"


def jar_path() -> str:
    """The path of the shim jar shipped inside the package (``ceql/jars/ceql-shim.jar``)."""
    jar = Path(__file__).resolve().parents[2] / "jars" / "ceql-shim.jar"  # ceql/jars/
    archive = next((p for p in jar.parents if p.is_file()), None)
    if archive is not None:  # imported from a zip (--py-files, a zipped wheel)
        raise MatchCeqlError(
            f"ceql is imported from the archive {archive}, so its shim jar is not a file the "
            "JVM can load; install the wheel (pip install ceql) where the driver runs, or "
            "give Spark the jar yourself (--jars ceql-shim.jar, from an installed ceql's "
            "ceql.spark.jar_path()).")
    if not jar.is_file():
        raise MatchCeqlError(
            f"The ceql Spark shim jar is missing at {jar}; build it with "
            "`python -m ceql.shim.jar` (needs Java 17 and pyspark).")
    return str(jar)


def _append(existing: str | None, item: str, sep: str = ",") -> str:
    parts = [p for p in (existing or "").split(sep) if p.strip()]
    if item not in parts:
        parts.append(item)
    return sep.join(parts)


def _set_python() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def server_conf(python: str | None = None) -> dict[str, str]:
    """The Spark settings of a server that runs MATCH_CEQL for its clients — a Spark Connect
    server, a Thrift server, a ``spark-submit`` job —, given when it starts: the shim jar,
    the extension (the ``MATCH_CEQL( <CEQL> )`` syntax and ``MATCH_CEQL('<CEQL>')``), the
    worker daemon, the RocksDB state store (streams) and the Python its workers run
    (``python``, default: this one; it must import ceql)::

        args = [a for k, v in ceql.spark.server_conf().items() for a in ("--conf", f"{k}={v}")]
        # sbin/start-connect-server.sh --conf spark.jars=… --conf spark.sql.extensions=… …
    """
    return {
        "spark.jars": jar_path(),
        "spark.sql.extensions": EXTENSION_CLASS,
        DAEMON_CONF: DAEMON_MODULE,
        STATE_STORE_PROVIDER: ROCKSDB_PROVIDER,
        ROCKSDB_CHANGELOG: "true",
        "spark.pyspark.python": python or sys.executable,
    }


def _running_without_extension() -> bool:
    """Whether this process runs a classic SparkSession that lacks ceql's extension (which
    ``getOrCreate()`` would return as it is)."""
    session_module = sys.modules.get("pyspark.sql.session")
    if session_module is None:  # pyspark not imported: nothing runs
        return False
    running = session_module.SparkSession._instantiatedSession
    if running is None or getattr(running._sc, "_jsc", None) is None:
        return False
    return not has_extension(running)


def configure(builder: Any) -> Any:
    """Add the shim jar and extension to a ``SparkSession.Builder``; set ``PYSPARK_PYTHON``.

    Also makes the Python worker daemon import ceql before it forks workers (unless
    ``spark.python.daemon.module`` is set already). Call it before ``getOrCreate()``; returns
    the builder.

    These are start-up settings, so a warning says when they cannot take effect: a classic
    session runs already without them (``getOrCreate()`` returns it as it is: stop it first,
    or :func:`enable` it), or the builder connects to a Spark Connect server (``sc://…``),
    whose settings are the server's (:func:`server_conf`); the builder is then returned
    unchanged. ``remote("local…")``, where PySpark starts the server from the builder, gets
    them.
    """
    options = getattr(builder, "_options", {})
    url = remote_url(options, dict(os.environ))
    if url is not None:
        warnings.warn(
            f"ceql: this builder connects to the Spark Connect server {url}, whose jars and "
            "extensions are set when the server starts, not by its clients: start the server "
            "with ceql.spark.server_conf(), or call ceql.spark.enable(spark) on the session "
            "for MATCH_CEQL(TABLE(t), query => '…'). The builder is returned unchanged.",
            stacklevel=2)
        return builder
    return _configured(builder, warn=True)


def _configured(builder: Any, *, warn: bool) -> Any:
    _set_python()
    options = getattr(builder, "_options", {})
    if warn and _running_without_extension():
        warnings.warn(
            "ceql: a SparkSession runs already without ceql's extension, and getOrCreate() "
            "will return it as it is: the jar and the extension are read only when a session "
            "starts. Call ceql.spark.enable(spark) on it for MATCH_CEQL(TABLE(t), query => "
            "'…'), or stop it first (spark.stop()) for a session with MATCH_CEQL( <CEQL> ) "
            "written inline.",
            stacklevel=3)
    jars = _append(options.get("spark.jars"), jar_path())
    exts = _append(options.get("spark.sql.extensions"), EXTENSION_CLASS)
    builder = builder.config("spark.jars", jars).config("spark.sql.extensions", exts)
    if DAEMON_CONF not in options:
        builder = builder.config(DAEMON_CONF, DAEMON_MODULE)
    return builder


def enable(spark: Any) -> Any:
    """Make MATCH_CEQL available in a running session; returns the session.

    A session started with :func:`configure` (or ``--conf spark.sql.extensions=…``), or a
    Spark Connect session whose server was started with :func:`server_conf`, already has
    everything: nothing changes. Otherwise the MATCH_CEQL table function is registered (in a
    classic session, with the jar added; in a Connect session, ceql's Python UDTF), but
    ``MATCH_CEQL( <CEQL> )`` written inline needs the extension when Spark starts: a warning
    says what to restart.
    """
    _set_python()
    if has_extension(spark):
        return spark
    register(spark)
    if is_connect(spark):
        warnings.warn(
            "ceql: MATCH_CEQL(TABLE(t), query => '…') is registered in this Spark Connect "
            "session (ceql's Python table function). The server has no ceql extension, so "
            "MATCH_CEQL( <CEQL> ) written inline and MATCH_CEQL('<CEQL>') need the server "
            "restarted with ceql's jar and extension (ceql.spark.server_conf()).",
            stacklevel=2)
        return spark
    warnings.warn(
        "ceql: MATCH_CEQL(TABLE(t), query => '…') is registered in this running session; "
        "MATCH_CEQL( <CEQL> ) written inline also needs the extension, which Spark reads only "
        "when a session starts: stop this one (spark.stop()) and start one with "
        "ceql.spark.configure(builder) or ceql.spark.local_session().",
        stacklevel=2,
    )
    return spark


def register(spark: Any) -> None:
    """Register MATCH_CEQL in a running session (no parser): in a classic one, add the jar
    and register the shim's function; in a Spark Connect one, register ceql's Python UDTF
    (the server's workers run it, so their Python must import ceql)."""
    if is_connect(spark):
        spark.udtf.register(MATCH_CEQL, table_function(spark))
        spark.udtf.register(MATCH_SPASEQ, table_function(spark, MATCH_SPASEQ))
        return
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
    the RocksDB state store with changelog checkpointing (streams need it).

    Keyword arguments are extra Spark settings, e.g. ``local_session(**{"spark.x": "1"})``.

    A session whose JVM this starts is quiet: Spark logs errors only (ceql's own warnings
    too), from the JVM's start on, or from ``spark.log.level`` if given (e.g. ``"INFO"`` to
    debug); PySpark does not print analysis errors as JSON before raising them; the JVM's
    start-up warning about incubator modules is dropped from its standard error. Logging the
    user configures (log4j in ``spark.driver.extraJavaOptions``, a ``log4j2.properties`` in
    Spark's configuration directory, …) is left alone: see :mod:`ceql.spark.session.quiet`.
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    _set_python()
    builder = (SparkSession.builder.master("local[2]").appName("ceql")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config(STATE_STORE_PROVIDER, ROCKSDB_PROVIDER)  # streams need it
               .config(ROCKSDB_CHANGELOG, "true"))
    for k, v in conf.items():
        builder = builder.config(k, v)
    builder = _configured(builder, warn=False)
    # the JVM's options count only when it starts; a running JVM keeps its logging
    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        # a running session keeps its start-up settings: without the extension, enable()
        # registers what it can and says what needs a restart
        without = _running_without_extension()
        spark = builder.getOrCreate()
        return enable(spark) if without else spark
    options = dict(getattr(builder, "_options", {}))
    java = _quiet.java_options(options)
    if java is None:  # the user's logging
        return builder.getOrCreate()
    builder = builder.config(_quiet.JAVA_OPTIONS, java)
    if _quiet.hides_errors(options):
        _quiet.quiet_python_loggers()
    with _quiet.jvm_stderr_filtered():
        return builder.getOrCreate()
