"""Quiet sessions (``ceql.spark.session.quiet``): which settings ``local_session`` adds when, the
user's own logging left alone, the JVM's standard error filter, and a real session's output."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ceql.spark.session import local, quiet

ROOT = Path(__file__).resolve().parents[2]
OURS = f"-Dlog4j2.configurationFile={quiet.LOG4J2.as_uri()}"
INCUBATOR = "WARNING: Using incubator modules: jdk.incubator.vector"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment whose Spark configuration directory is empty (``tmp/conf``)."""
    (tmp_path / "conf").mkdir()
    return {"SPARK_CONF_DIR": str(tmp_path / "conf")}


def conf_file(env: dict[str, str], name: str, text: str) -> None:
    (Path(env["SPARK_CONF_DIR"]) / name).write_text(text)


# ------------------------------------------------------------- the properties file

def properties() -> dict[str, str]:
    lines = quiet.LOG4J2.read_text(encoding="utf-8").splitlines()
    pairs = (ln.split("=", 1) for ln in lines if "=" in ln and not ln.startswith("#"))
    return {k.strip(): v.strip() for k, v in pairs}


def test_the_log4j_file_logs_errors_and_ceqls_warnings() -> None:
    p = properties()
    level = "${sys:" + quiet.LEVEL_PROPERTY + ":-error}"
    assert p["rootLogger.level"] == level
    # the gateway's logger at the root's level: Spark does not turn the console to WARN
    gateway = next(k[:-5] for k, v in p.items()
                   if v == "org.apache.spark.api.python.PythonGatewayServer")
    assert p[gateway + ".level"] == level
    ceql = next(k[:-5] for k, v in p.items() if v == "org.apache.spark.sql.ceql")
    assert p[ceql + ".level"] == "warn"
    assert p["appender.stderr.target"] == "SYSTEM_ERR"


def test_a_failed_task_is_the_actions_error_alone() -> None:
    """The executor's ERROR line with the task's JVM stack trace, and the scheduler's
    "aborting job", repeat the error the action raises: shown only at a level asked for."""
    p = properties()
    for name in ("org.apache.spark.executor.Executor",
                 "org.apache.spark.scheduler.TaskSetManager"):
        logger = next(k[:-5] for k, v in p.items() if v == name)
        assert p[logger + ".level"] == "${sys:" + quiet.LEVEL_PROPERTY + ":-fatal}"


# ------------------------------------------------------------------- java_options

def test_java_options_add_ceqls_log4j_file(env: dict[str, str]) -> None:
    assert quiet.LOG4J2.is_file()
    assert quiet.java_options({}, env) == OURS
    assert quiet.java_options({"spark.log.level": "info"}, env) == \
        f"{OURS} -Dceql.spark.log.level=INFO"
    assert quiet.java_options({"spark.log.level": "loud"}, env) == OURS


def test_java_options_keep_the_users_other_options(env: dict[str, str]) -> None:
    given = {"spark.driver.extraJavaOptions": "-Xss8m -Dx=1"}
    assert quiet.java_options(given, env) == f"-Xss8m -Dx=1 {OURS}"
    # spark-defaults.conf's value, which a given one would replace, is kept too
    conf_file(env, "spark-defaults.conf", "# mine\nspark.driver.extraJavaOptions  -Xss4m\n"
                                          "spark.executor.memory=2g\n")
    assert quiet.java_options({}, env) == f"-Xss4m {OURS}"
    assert quiet.java_options(given, env) == f"-Xss8m -Dx=1 {OURS}"


@pytest.mark.parametrize("options,files,environ", [
    ({"spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=/mine.xml"}, {}, {}),
    ({"spark.driver.extraJavaOptions": "-Dlog4j.configuration=file:/old.properties"}, {}, {}),
    ({"spark.driver.defaultJavaOptions": "-Dlog4j2.level=INFO"}, {}, {}),
    ({}, {"log4j2.properties": "rootLogger.level = info\n"}, {}),
    ({}, {"log4j2.xml": "<Configuration/>\n"}, {}),
    ({}, {"spark-defaults.conf": "spark.driver.extraJavaOptions=-Dlog4j2.configurationFile=x\n"},
     {}),
    ({}, {}, {"SPARK_SUBMIT_OPTS": "-Dlog4j2.configurationFile=/mine.properties"}),
    ({}, {}, {"PYSPARK_SUBMIT_ARGS": "--driver-java-options -Dlog4j2.level=DEBUG pyspark-shell"}),
])
def test_the_users_logging_is_left_alone(env: dict[str, str], options: dict[str, str],
                                          files: dict[str, str],
                                          environ: dict[str, str]) -> None:
    for name, text in files.items():
        conf_file(env, name, text)
    assert quiet.user_log_config(options, {**env, **environ}) is not None
    assert quiet.java_options(options, {**env, **environ}) is None


def test_files_that_are_not_log4j_configurations_do_not_count(env: dict[str, str]) -> None:
    conf_file(env, "log4j2.properties.template", "rootLogger.level = info\n")
    conf_file(env, "spark-defaults.conf", "spark.log.level WARN\n")
    assert quiet.user_log_config({}, env) is None


def test_the_conf_dir_is_found_as_sparks_launcher_finds_it(tmp_path: Path) -> None:
    assert quiet.conf_dir({"SPARK_CONF_DIR": "/c", "SPARK_HOME": "/h"}) == Path("/c")
    assert quiet.conf_dir({"SPARK_HOME": "/h"}) == Path("/h/conf")
    import pyspark

    assert quiet.conf_dir({}) == Path(pyspark.__file__).resolve().parent / "conf"
    home = tmp_path / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "log4j2.properties").write_text("rootLogger.level = info\n")
    assert quiet.java_options({}, {"SPARK_HOME": str(home)}) is None


def test_only_error_or_quieter_hides_pysparks_error_lines() -> None:
    for level in (None, "ERROR", "error", "FATAL", "OFF"):
        assert quiet.hides_errors({} if level is None else {"spark.log.level": level})
    for level in ("WARN", "INFO", "DEBUG", "TRACE", "ALL"):
        assert not quiet.hides_errors({"spark.log.level": level})


# ------------------------------------------------------------------- local_session

@pytest.fixture
def fake_start(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> list[str]:
    """``local_session`` with no JVM: ``getOrCreate`` returns the builder's settings; what it
    did besides is recorded in the list returned."""
    pytest.importorskip("pyspark")
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    done: list[str] = []
    monkeypatch.setattr(SparkContext, "_gateway", None)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for name in ("SPARK_HOME", "PYSPARK_GATEWAY_PORT", *quiet._ENV_OPTIONS):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(local, "jar_path", lambda: "/ceql-shim.jar")
    monkeypatch.setattr(quiet, "quiet_python_loggers", lambda: done.append("loggers"))
    real = quiet.jvm_stderr_filtered

    def filtered() -> Any:
        done.append("filter")
        return real()

    monkeypatch.setattr(quiet, "jvm_stderr_filtered", filtered)

    def get_or_create(self: Any) -> dict[str, str]:
        done.append("start")
        return dict(self._options)

    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", get_or_create)
    return done


def test_local_session_starts_a_quiet_jvm(fake_start: list[str]) -> None:
    options = local.local_session()
    assert options["spark.driver.extraJavaOptions"] == OURS
    assert fake_start == ["loggers", "filter", "start"]


def test_local_session_debug_level(fake_start: list[str]) -> None:
    options = local.local_session(**{"spark.log.level": "INFO",
                                        "spark.driver.extraJavaOptions": "-Xss8m"})
    assert options["spark.driver.extraJavaOptions"] == \
        f"-Xss8m {OURS} -Dceql.spark.log.level=INFO"
    assert options["spark.log.level"] == "INFO"
    assert fake_start == ["filter", "start"]  # PySpark's error lines stay at INFO


def test_local_session_leaves_the_users_logging_alone(fake_start: list[str],
                                                      env: dict[str, str]) -> None:
    mine = "-Dlog4j2.configurationFile=file:/mine.xml"
    options = local.local_session(**{"spark.driver.extraJavaOptions": mine})
    assert options["spark.driver.extraJavaOptions"] == mine
    conf_file(env, "log4j2.properties", "rootLogger.level = info\n")
    options = local.local_session()
    assert "spark.driver.extraJavaOptions" not in options
    assert fake_start == ["start", "start"]


def test_local_session_with_a_running_jvm_changes_no_logging(
        fake_start: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark import SparkContext

    monkeypatch.setattr(SparkContext, "_gateway", object())
    assert "spark.driver.extraJavaOptions" not in local.local_session()
    assert fake_start == ["start"]


# ------------------------------------------------------------- PySpark's loggers

@pytest.fixture
def query_loggers() -> Iterator[list[str]]:
    """PySpark's query-context loggers, removed again afterwards."""
    pytest.importorskip("pyspark")
    names = list(quiet._QUERY_CONTEXT_LOGGERS)
    saved = {n: logging.Logger.manager.loggerDict.pop(n, None) for n in names}
    yield names
    for n, logger in saved.items():
        logging.Logger.manager.loggerDict.pop(n, None)
        if logger is not None:
            logging.Logger.manager.loggerDict[n] = logger


def test_pysparks_error_lines_are_turned_off(query_loggers: list[str]) -> None:
    from pyspark.logger import PySparkLogger

    PySparkLogger.getLogger(query_loggers[1]).setLevel(logging.DEBUG)  # the user's
    quiet.quiet_python_loggers()
    sql = PySparkLogger.getLogger(query_loggers[0])
    assert isinstance(sql, PySparkLogger)  # PySpark logs with its own keyword arguments
    assert not sql.isEnabledFor(logging.ERROR)
    assert PySparkLogger.getLogger(query_loggers[1]).level == logging.DEBUG


# --------------------------------------------------------------- standard error filter

STREAM_WORKER = [
    "Starting Streaming TransformWithStateInPandas Python worker.\n",
    "Streaming TransformWithStateInPandas Python worker finish init stage of Python runner. "
    "Received UDF from JVM: <bound method …>, received return type of UDF: StructType([]).\n",
    "Streaming TransformWithStateInPandas Python worker Completed execution of UDF: <…>.\n",
]


def test_only_the_incubator_warning_and_stream_worker_lines_are_jvm_noise() -> None:
    for line in STREAM_WORKER:
        assert quiet.is_jvm_noise(line), line
    assert not quiet.is_jvm_noise("Streaming TransformWithStateInPandas Python workers\n")
    assert not quiet.is_jvm_noise("Error in Streaming TransformWithStateInPandas Python "
                                   "worker.\n")
    assert quiet.is_jvm_noise(INCUBATOR)
    assert quiet.is_jvm_noise(INCUBATOR + "\n")
    assert quiet.is_jvm_noise("WARNING: Using incubator modules: jdk.incubator.vector, "
                               "jdk.incubator.foreign\n")
    for real in ("26/11/25 11:12:00 ERROR Executor: Exception in task 0.0 in stage 1.0",
                 "Traceback (most recent call last):",
                 "java.lang.OutOfMemoryError: Java heap space",
                 "WARNING: An illegal reflective access operation has occurred",
                 "WARNING: Using incubator modules: jdk.incubator.vector; and more",
                 "  WARNING: Using incubator modules: jdk.incubator.vector",
                 "ceql.errors.CeqlInputError: Event 5 is out of order"):
        assert not quiet.is_jvm_noise(real), real


def test_a_child_process_stderr_is_filtered(capfd: pytest.CaptureFixture[str]) -> None:
    """A process started inside ``jvm_stderr_filtered`` (the JVM) has the warning dropped and
    everything else passed on, also after the block; this process's stderr is untouched."""
    script = ("import sys, time; sys.stderr.write('" + INCUBATOR + "\\nreal error\\n'); "
              "sys.stderr.write('" + STREAM_WORKER[0].strip() + "\\n\\n\\nkept above\\n'); "
              "sys.stderr.flush(); time.sleep(0.3); sys.stderr.write('later\\n')")
    with quiet.jvm_stderr_filtered() as thread:
        child = subprocess.Popen([sys.executable, "-c", script])
    os.write(2, b"parent\n")
    child.wait()
    assert thread is not None
    thread.join(10)
    assert not thread.is_alive()  # it ends with the last process writing to it
    err = capfd.readouterr().err
    assert err.count("real error") == 1 and "later" in err and "parent" in err
    assert "incubator" not in err and "TransformWithState" not in err
    assert "real error\n\nkept above\n" in err  # one blank line went with the noise


# -------------------------------------------------------------------- a real session

SESSION = textwrap.dedent("""
    import sys
    import ceql.spark
    spark = ceql.spark.local_session()
    jvm = spark.sparkContext._jvm
    print("PROPERTY", jvm.java.lang.System.getProperty("log4j2.configurationFile"))
    try:
        spark.sql("SELECT nope FROM range(3)").collect()
    except Exception as e:
        print("RAISED", type(e).__name__)
    spark.createDataFrame([("A", 1), ("B", None)], "type string, ts long") \\
        .createOrReplaceTempView("s")
    try:
        spark.sql("SELECT * FROM MATCH_CEQL(TABLE(s) WITH SINGLE PARTITION ORDER BY ts, "
                  "query => 'SELECT * FROM s WHERE A ; B')").collect()
    except Exception as e:
        print("CEQL", ceql.spark.unwrap(e))
    spark.stop()
""")


def run_session(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items()
               if k not in ("SPARK_HOME", "PYSPARK_SUBMIT_ARGS", *quiet._ENV_OPTIONS)}
    return subprocess.run([sys.executable, "-c", SESSION], cwd=ROOT, env={**environ, **env},
                          capture_output=True, text=True, timeout=600)


@pytest.mark.spark
def test_a_local_session_prints_errors_only(env: dict[str, str]) -> None:
    pytest.importorskip("pyspark")
    from ceql.shim import jar as build_jar

    build_jar.build()
    r = run_session(env)
    assert r.returncode == 0, r.stderr
    # the builder's spark.driver.extraJavaOptions reached the JVM spark-submit started
    assert f"PROPERTY {quiet.LOG4J2.as_uri()}\n" in r.stdout
    assert "RAISED AnalysisException" in r.stdout
    assert "CEQL MATCH_CEQL: the time column" in r.stdout
    err = r.stderr.splitlines()
    assert not [ln for ln in err if re.search(r" (WARN|INFO) \w+: ", ln)], r.stderr
    for chatter in ("incubator", "log4j", "log level", "SQLQueryContextLogger", '{"ts"'):
        assert chatter not in r.stderr, r.stderr
    # the failed task's error is the exception the action raised (ceql's message, above),
    # not the executor's copy of it with the JVM's stack trace as well (issue 27)
    assert not [ln for ln in err if re.search(r" ERROR (Executor|TaskSetManager): ", ln)
                or ln.startswith("\tat ")], r.stderr


@pytest.mark.spark
def test_a_local_session_keeps_the_users_log4j_configuration(env: dict[str, str]) -> None:
    pytest.importorskip("pyspark")
    from ceql.shim import jar as build_jar

    build_jar.build()
    conf_file(env, "log4j2.properties", textwrap.dedent("""\
        rootLogger.level = info
        rootLogger.appenderRef.stderr.ref = stderr
        appender.stderr.type = Console
        appender.stderr.name = stderr
        appender.stderr.target = SYSTEM_ERR
        appender.stderr.layout.type = PatternLayout
        appender.stderr.layout.pattern = MINE %p %c{1}: %m%n
        """))
    r = run_session(env)
    assert r.returncode == 0, r.stderr
    assert "PROPERTY None\n" in r.stdout
    assert re.search(r"^MINE (WARN|INFO) \w+: ", r.stderr, re.M), r.stderr
    assert INCUBATOR in r.stderr  # ceql filters nothing either
