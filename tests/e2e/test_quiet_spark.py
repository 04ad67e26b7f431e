"""``ceql run --engine spark`` says ceql's lines only: no JVM start-up warning, no Spark log
lines, even when the query fails once Spark has read the input; ``--spark-log LEVEL`` brings
Spark's log back. A ``local_session()`` is as quiet: a failed task, ``show(3)`` and ceql's
warnings from Spark's workers (issue 27)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STOCK = ROOT / "examples" / "stock.csv"
QUERY = "SELECT * FROM S WHERE SELL AS a ; BUY AS b WITHIN 10 SECONDS"
TIME = ["--time", "ts", "--time-unit", "us"]
#: A line of Spark's log (log4j's or Spark's default pattern, or PySpark's JSON).
LOG_LINE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) "
                      r'|^\{"ts": |(TRACE|DEBUG|INFO|WARN) [\w$.]+: ')
SUMMARY = (r"ceql: [\d,]+ events? read, [\d,]+ match(es)? in \d+\.\d\d s "
           r"\(\d+(\.\d)?( [kM])? events/s\)")


def ceql_cmd(*args: str | Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ceql", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 300 events of the stock sample."""
    path = tmp_path_factory.mktemp("quiet") / "small.csv"
    path.write_text("".join(STOCK.read_text().splitlines(keepends=True)[:301]))
    return path


def jvm_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines()
            if LOG_LINE.search(ln) or "incubator modules" in ln
            or "log4j" in ln or "log level" in ln.lower()]


@pytest.mark.spark
@pytest.mark.e2e
def test_spark_engine_prints_ceqls_lines_only(small: Path) -> None:
    pytest.importorskip("pyspark")
    local = ceql_cmd("run", QUERY, "-i", small, *TIME)
    assert local.returncode == 0, local.stderr
    r = ceql_cmd("run", QUERY, "-i", small, *TIME, "--engine", "spark")
    assert r.returncode == 0, r.stderr
    assert r.stdout == local.stdout and r.stdout
    assert not jvm_lines(r.stderr), r.stderr
    assert re.fullmatch(SUMMARY + r"\n", r.stderr), r.stderr


@pytest.mark.spark
@pytest.mark.e2e
def test_spark_engine_bad_query_says_ceqls_message_only(small: Path) -> None:
    """The attribute is checked against the schema Spark reads, once Spark has started."""
    pytest.importorskip("pyspark")
    bad = QUERY.replace("BUY AS b", "BUY AS b FILTER a[nope > 1]")
    r = ceql_cmd("run", bad, "-i", small, *TIME, "--engine", "spark")
    assert (r.returncode, r.stdout) == (2, ""), r.stderr
    assert r.stderr.startswith("ceql: error: <query>: Unknown attribute 'nope' in FILTER: "
                               "the schema has id, name, price, ts, type, volume"), r.stderr
    assert not jvm_lines(r.stderr), r.stderr
    assert "Traceback" not in r.stderr and "Spark's log" not in r.stderr


@pytest.mark.spark
@pytest.mark.e2e
def test_spark_log_shows_sparks_log_from_the_start(small: Path) -> None:
    pytest.importorskip("pyspark")
    r = ceql_cmd("run", QUERY, "-i", small, *TIME, "--engine", "spark", "--spark-log", "info")
    assert r.returncode == 0, r.stderr
    assert r.stdout
    said = r.stderr.splitlines()
    # INFO from the JVM's start on (not only once the SparkContext has set its level)
    assert any(re.search(r" INFO SparkContext: Running Spark version ", ln) for ln in said), \
        r.stderr
    assert "incubator modules" not in r.stderr
    assert any(re.fullmatch(SUMMARY, ln) for ln in said), r.stderr


@pytest.mark.e2e
def test_spark_log_needs_the_spark_engine(small: Path) -> None:
    r = ceql_cmd("run", QUERY, "-i", small, *TIME, "--spark-log", "INFO", timeout=60)
    assert r.returncode == 2
    assert "--spark-log needs --engine spark" in r.stderr
    r = ceql_cmd("run", QUERY, "-i", small, *TIME, "--engine", "spark", "--spark-log", "LOUD",
                 timeout=60)
    assert r.returncode == 2
    assert "invalid choice: 'LOUD'" in r.stderr


#: A quiet session's user: a task that fails on bad data, show(3) of a long answer, a query
#: whose partitions hold equal times, a LIKE written for SQL (each through spark.sql).
SESSION_SCRIPT = """
import time
import ceql.spark
spark = ceql.spark.local_session()
spark.createDataFrame([("BUY", "2020"), ("SELL", "20x1")], "type string, ts string"
                      ).createOrReplaceTempView("u")
try:
    spark.sql("SELECT * FROM MATCH_CEQL(TABLE(u), query => 'SELECT * FROM u WHERE BUY ; SELL "
              "WITHIN 1 SECONDS', time_format => 'yyyy')").collect()
except Exception as e:
    print("failed:", ceql.spark.unwrap(e))
spark.range(200000).selectExpr("CAST(id % 7 AS STRING) AS k", "CAST(id AS DOUBLE) AS ts",
                               "IF(id % 2 = 0, 'BUY', 'SELL') AS type"
                               ).createOrReplaceTempView("b")
spark.sql("SELECT * FROM MATCH_CEQL(TABLE(b), query => 'SELECT * FROM b WHERE BUY ; SELL "
          "PARTITION BY [k] WITHIN 100 SECONDS')").show(3)
spark.range(40).selectExpr("id AS seq", "CAST(id % 5 AS STRING) AS k",
                           "CAST(FLOOR(id / 10) AS DOUBLE) AS ts",
                           "IF(id % 2 = 0, 'BUY', 'SELL') AS type").createOrReplaceTempView("t")
spark.sql("SELECT * FROM MATCH_CEQL(TABLE(t), query => 'SELECT * FROM t WHERE BUY AS a ; SELL "
          "FILTER a[k LIKE ''1%''] PARTITION BY [k] WITHIN 100 SECONDS')").collect()
time.sleep(3)  # the workers' last lines reach the console
spark.stop()
"""


@pytest.mark.spark
@pytest.mark.e2e
def test_a_quiet_session_says_ceqls_words_once() -> None:
    pytest.importorskip("pyspark")
    r = subprocess.run([sys.executable, "-c", SESSION_SCRIPT], cwd=ROOT, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    assert "failed: MATCH_CEQL: the time column 'ts' holds '20x1'" in r.stdout, r.stdout
    assert "only showing top 3 rows" in r.stdout
    # no executor's stack trace of the failed task, no traceback of show(3)'s closed socket
    assert not jvm_lines(r.stderr), r.stderr
    assert not re.search(r"^\tat |Traceback|BrokenPipeError|Exception in task", r.stderr,
                         re.M), r.stderr
    said = [ln.split(":")[1].strip() for ln in r.stderr.splitlines() if ln.startswith("ceql: ")]
    assert sorted(said) == ["LikePatternWarning", "TieOrderWarning"], r.stderr
    assert "tie_break => 'seq'" in r.stderr
