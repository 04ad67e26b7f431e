"""Quiet Spark sessions: what :func:`ceql.spark.local_session` does so that starting Spark and
a failing query print ceql's lines and real errors, not Spark's chatter.

When ``local_session`` starts the JVM, and the user configures none of Spark's logging, it

- starts the driver's JVM with ``log4j2.properties`` beside this file (errors only, ceql's
  warnings too; :func:`java_options`), at ``spark.log.level`` if that is given;
- turns off PySpark's query-context loggers, which print every analysis error, as a JSON line
  with its stack trace, before it is raised (:func:`quiet_python_loggers`);
- drops the one line the JVM prints before any logging is set up, ``WARNING: Using incubator
  modules: jdk.incubator.vector``, from its standard error (:func:`jvm_stderr_filtered`):
  Spark's launcher always adds that module (``JavaModuleOptions``), and no JVM option stops
  the warning; and the progress lines that the Python worker of a stream's
  ``transformWithStateInPandas`` prints (``Starting Streaming TransformWithStateInPandas Python
  worker.`` and three more, each with a blank line after it) on every query start.

The user's own logging configuration wins: a ``spark.driver.extraJavaOptions`` or
``spark.driver.defaultJavaOptions`` (given to the session or in ``spark-defaults.conf``) that
mentions log4j, a log4j2 configuration file in Spark's configuration directory, or log4j in
``SPARK_SUBMIT_OPTS``, ``PYSPARK_SUBMIT_ARGS``, ``JAVA_TOOL_OPTIONS`` or ``JDK_JAVA_OPTIONS``.
Then ceql changes nothing of Spark's logging.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

from ceql.spark.notices import Notices

__all__ = [
    "LOG4J2",
    "LOG_LEVELS",
    "NOTICES",
    "hides_errors",
    "is_jvm_noise",
    "java_options",
    "jvm_stderr_filtered",
    "quiet_python_loggers",
    "start_level",
    "user_log_config",
]

#: ceql's notices the filter of this process's JVM standard error has printed (once each).
NOTICES = Notices()
#: ceql's log4j2 configuration of Spark (package data).
LOG4J2 = Path(__file__).resolve().parents[1] / "log4j2.properties"  # ceql/spark/
#: The system property ``log4j2.properties`` reads the level from (default: ERROR).
LEVEL_PROPERTY = "ceql.spark.log.level"
JAVA_OPTIONS = "spark.driver.extraJavaOptions"
DEFAULT_JAVA_OPTIONS = "spark.driver.defaultJavaOptions"
LOG_LEVEL = "spark.log.level"
#: The levels ``spark.log.level`` takes (log4j's), quietest first.
LOG_LEVELS = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", "ALL")

#: Environment variables whose Java or spark-submit options could configure log4j.
_ENV_OPTIONS = ("SPARK_SUBMIT_OPTS", "PYSPARK_SUBMIT_ARGS", "JAVA_TOOL_OPTIONS",
                "JDK_JAVA_OPTIONS")
#: The files log4j 2 finds on the class path (Spark's configuration directory is on it);
#: Spark's own ``log4j2.properties.template`` is not one.
_LOG4J_FILES = tuple(f"{stem}.{ext}" for stem in ("log4j2-test", "log4j2")
                     for ext in ("properties", "yaml", "yml", "json", "jsn", "xml"))
#: PySpark's loggers that print an analysis error (a JSON line with the JVM's stack trace)
#: as the exception is made: the exception itself says the same.
_QUERY_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def start_level(options: Mapping[str, str]) -> str | None:
    """``spark.log.level`` in ``options`` if it is one of :data:`LOG_LEVELS` (upper case)."""
    level = str(options.get(LOG_LEVEL, "")).strip().upper()
    return level if level in LOG_LEVELS else None


def hides_errors(options: Mapping[str, str]) -> bool:
    """Whether a session with ``options`` logs at ERROR or quieter (the default), so that
    PySpark's JSON lines of analysis errors, which repeat the exception, go too."""
    level = start_level(options) or "ERROR"
    return LOG_LEVELS.index(level) <= LOG_LEVELS.index("ERROR")


def conf_dir(environ: Mapping[str, str]) -> Path | None:
    """Spark's configuration directory, as its launcher finds it: ``SPARK_CONF_DIR``, else
    ``$SPARK_HOME/conf``, else ``conf`` in the pyspark package (a pip-installed Spark)."""
    if environ.get("SPARK_CONF_DIR"):
        return Path(environ["SPARK_CONF_DIR"])
    if environ.get("SPARK_HOME"):
        return Path(environ["SPARK_HOME"]) / "conf"
    try:
        import pyspark
    except ImportError:
        return None
    return Path(pyspark.__file__).resolve().parent / "conf"


def spark_defaults(directory: Path | None) -> dict[str, str]:
    """The settings of ``spark-defaults.conf`` in ``directory`` (a Java properties file:
    ``key value``, ``key=value`` or ``key: value``; ``#`` and ``!`` start comments)."""
    if directory is None:
        return {}
    try:
        text = (directory / "spark-defaults.conf").read_text(encoding="utf-8",
                                                             errors="replace")
    except OSError:
        return {}
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        m = re.match(r"([^\s=:]+)\s*[=:\s]\s*(.*)", line)
        if m:
            out[m.group(1)] = m.group(2).strip()
        else:
            out[line] = ""
    return out


def user_log_config(options: Mapping[str, str],
                    environ: Mapping[str, str] | None = None) -> str | None:
    """Where the user configures Spark's logging, if they do (see the module's text)."""
    env = os.environ if environ is None else environ
    directory = conf_dir(env)
    defaults = spark_defaults(directory)
    for key in (JAVA_OPTIONS, DEFAULT_JAVA_OPTIONS):
        if "log4j" in str(options.get(key, "")).lower():
            return key
        if key not in options and "log4j" in defaults.get(key, "").lower():
            return f"{key} in spark-defaults.conf"
    for name in _ENV_OPTIONS:
        if "log4j" in env.get(name, "").lower():
            return name
    if directory is not None:
        for name in _LOG4J_FILES:
            if (directory / name).is_file():
                return str(directory / name)
    return None


def java_options(options: Mapping[str, str],
                 environ: Mapping[str, str] | None = None) -> str | None:
    """``spark.driver.extraJavaOptions`` for a driver JVM with ceql's logging: the user's own
    options (given, or else from ``spark-defaults.conf``, which a given value would replace)
    followed by ``-Dlog4j2.configurationFile=`` :data:`LOG4J2` and, with ``spark.log.level``,
    that level to start at. None when the user configures logging (:func:`user_log_config`).
    """
    env = os.environ if environ is None else environ
    if user_log_config(options, env) is not None:
        return None
    own = options.get(JAVA_OPTIONS)
    if own is None:
        own = spark_defaults(conf_dir(env)).get(JAVA_OPTIONS, "")
    parts = [str(own).strip(), f"-Dlog4j2.configurationFile={LOG4J2.as_uri()}"]
    level = start_level(options)
    if level is not None:
        parts.append(f"-D{LEVEL_PROPERTY}={level}")
    return " ".join(p for p in parts if p)


def quiet_python_loggers() -> None:
    """Turn off PySpark's query-context loggers (the raised exception says what they would),
    unless the user has set their level already."""
    from pyspark.logger import PySparkLogger

    for name in _QUERY_CONTEXT_LOGGERS:
        existing = logging.Logger.manager.loggerDict.get(name)
        if isinstance(existing, logging.Logger) and existing.level != logging.WARNING:
            continue  # PySpark makes them at WARNING: another level is the user's
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


#: The lines the JVM writes on standard error before any logging exists, and which no
#: setting silences.
_JVM_NOISE = re.compile(r"WARNING: Using incubator modules: jdk\.incubator\.[\w.]+"
                        r"(, jdk\.incubator\.[\w.]+)*\r?\n?"
                        # pyspark/sql/streaming/transform_with_state_driver_worker.py's prints
                        r"|(Starting )?Streaming TransformWithStateInPandas Python worker[ .]"
                        r"[^\n]*\n?")


def is_jvm_noise(line: str) -> bool:
    """Whether ``line`` is the JVM's start-up warning that Spark's launcher always causes, or
    a progress line of a stream's Python worker."""
    return _JVM_NOISE.fullmatch(line) is not None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _pass_on(source: int, target: int) -> None:
    """Copy lines from ``source`` to ``target`` without :func:`is_jvm_noise` lines and with
    each of ceql's notices once (:data:`NOTICES`), until every writer has closed ``source``."""
    try:
        with os.fdopen(source, "rb") as lines:
            after = False  # the last line was noise: the blank line printed with it goes too
            for raw in lines:
                text = raw.decode("utf-8", "replace")
                if is_jvm_noise(text):
                    after = True
                    continue
                if not (after and raw.strip() == b""):
                    said = NOTICES.line(text)
                    if said is text:
                        _write_all(target, raw)
                    elif said is not None:
                        _write_all(target, said.encode("utf-8"))
                after = False
    except OSError:
        pass
    finally:
        os.close(target)


def _flush_stderr() -> None:
    if sys.stderr is not None:
        sys.stderr.flush()


@contextlib.contextmanager
def jvm_stderr_filtered() -> Iterator[threading.Thread | None]:
    """Processes started inside the block (the JVM, and the Python workers it forks) write
    their standard error through :func:`is_jvm_noise` to this process's standard error, for as
    long as they live; this process's own descriptor 2 is untouched after the block.

    Yields the thread that passes the lines on (it ends once those processes have ended), or
    None when descriptor 2 cannot be redirected.
    """
    try:
        target = os.dup(2)
    except OSError:
        yield None
        return
    read, write = os.pipe()
    saved = os.dup(2)
    thread = threading.Thread(target=_pass_on, args=(read, target), daemon=True,
                              name="ceql-jvm-stderr")
    thread.start()
    _flush_stderr()
    os.dup2(write, 2)  # inheritable: the JVM's standard error
    os.close(write)
    try:
        yield thread
    finally:
        _flush_stderr()
        os.dup2(saved, 2)
        os.close(saved)
