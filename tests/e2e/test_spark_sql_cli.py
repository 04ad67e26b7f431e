"""The ``spark-sql`` CLI with only ``--jars`` and ``--conf spark.sql.extensions``: MATCH_CEQL
and the inline MATCH_RECOGNIZE clause work there with no Python registration, ``;`` inside a
query (and the escaped ``\\;``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

import ceql
import ceql.spark as cs
from ceql.shim import jar as build_jar

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

SCRIPT = r"""
CREATE TEMPORARY VIEW stock AS SELECT * FROM VALUES
  (0, 'SELL', 'MSFT', 101.0D, TIMESTAMP '2024-01-01 09:00:00'),
  (1, 'SELL', 'MSFT', 102.0D, TIMESTAMP '2024-01-01 09:00:01'),
  (2, 'SELL', 'INTL', 80.0D, TIMESTAMP '2024-01-01 09:00:02'),
  (3, 'BUY', 'INTL', 80.0D, TIMESTAMP '2024-01-01 09:00:03'),
  (4, 'SELL', 'AMZN', 1900.0D, TIMESTAMP '2024-01-01 09:00:04'),
  (5, 'SELL', 'INTL', 81.0D, TIMESTAMP '2024-01-01 09:00:05'),
  (6, 'SELL', 'AMZN', 1920.0D, TIMESTAMP '2024-01-01 09:00:06')
  AS t(seq, type, name, price, ts);
SELECT 'inline', m.name, m.a[0].seq, m.b[0].seq FROM MATCH_CEQL(
  SELECT a, b FROM stock WHERE SELL AS a; SELL AS b FILTER a[price > 90]
  PARTITION BY [name] WITHIN INTERVAL '10' SECOND
) AS m ORDER BY 2;
SELECT 'escaped', count(*) FROM MATCH_CEQL( SELECT * FROM stock WHERE SELL AS a \; SELL AS b
  PARTITION BY [name] );
SELECT 'literal', count(*) FROM MATCH_CEQL("SELECT * FROM stock WHERE SELL AS a; SELL AS b
  FILTER a[name = 'MSFT'] PARTITION BY [name]");
SELECT 'table', m.name, m.a[0].seq, m.b[0].seq FROM MATCH_CEQL(TABLE(stock) PARTITION BY name
  ORDER BY ts, query => 'SELECT a, b FROM stock WHERE SELL AS a ; SELL AS b
  FILTER a[price > 90] WITHIN 10 SECONDS') AS m ORDER BY 2;
SELECT 'recognize', m.name, m.low, m.n FROM stock MATCH_RECOGNIZE (
  PARTITION BY name ORDER BY ts MEASURES FIRST(A.price) AS low, COUNT(*) AS n
  PATTERN (A B+) DEFINE A AS type <> 'x;y', B AS price > PREV(price)
) AS m ORDER BY 2;
"""


EVENTS = """
CREATE TEMPORARY VIEW ev AS SELECT * FROM VALUES (0, 'A', CAST(NULL AS DOUBLE)), (1, 'B', 2.0D)
  AS t(seq, type, ts);
"""
TYPO = "SELECT * FROM MATCH_CEQL(SELCT * FROM ev WHERE A ; B);\n"
BAD_DATA = ("SELECT * FROM MATCH_CEQL(TABLE(ev), query => "
            "'SELECT * FROM ev WHERE A ; B WITHIN 5 SECONDS');\n")


@pytest.fixture(scope="module")
def spark_sql(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """``spark-sql -f`` with only the jar and the extension, once for the module (a JVM
    start costs tens of seconds): the queries, then two that fail, each error going on to the
    next statement (``hive.cli.errors.ignore``)."""
    jar = build_jar.build()
    home = Path(pyspark.__file__).resolve().parent
    folder = tmp_path_factory.mktemp("spark-sql")
    (folder / "q.sql").write_text(SCRIPT + EVENTS + TYPO + "SELECT 'after the typo';\n"
                                  + BAD_DATA + "SELECT 'after the bad data';\n")
    env = {**os.environ, "SPARK_HOME": str(home), "PYSPARK_PYTHON": sys.executable}
    return subprocess.run(
        [str(home / "bin" / "spark-sql"), "--jars", str(jar),
         "--conf", f"spark.sql.extensions={cs.EXTENSION_CLASS}",
         "--hiveconf", "hive.cli.errors.ignore=true", "-f", "q.sql"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def test_spark_sql_cli_runs_match_ceql(spark_sql: subprocess.CompletedProcess[str]) -> None:
    done = spark_sql
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [ln.split("\t") for ln in done.stdout.splitlines() if ln.strip()]
    assert lines == [
        ["inline", "AMZN", "4", "6"],
        ["inline", "MSFT", "0", "1"],
        ["escaped", "3"],
        ["literal", "1"],
        ["table", "AMZN", "4", "6"],
        ["table", "MSFT", "0", "1"],
        ["recognize", "AMZN", "1900.0", "2"],
        ["recognize", "INTL", "80.0", "2"],
        ["recognize", "MSFT", "101.0", "2"],
        ["after the typo"],
        ["after the bad data"],
    ]


def test_spark_sql_cli_errors_say_ceqls_message(
        spark_sql: subprocess.CompletedProcess[str]) -> None:
    """A misspelt inline SELECT gets ceql's caret; a task failed by bad data says ceql's
    message on the error's first line, with no Python traceback."""
    said = spark_sql.stderr
    assert "PARSE_SYNTAX_ERROR" not in said
    with pytest.raises(ceql.CeqlSyntaxError) as caret:
        ceql.compile("SELCT * FROM ev WHERE A ; B")
    assert f"MATCH_CEQL: {caret.value}" in said  # line, column and caret
    assert "Traceback" not in said
    assert ("[PYTHON_EXCEPTION] An exception was thrown from the Python worker: "
            "ceql.spark.MatchCeqlError: MATCH_CEQL: the time column 'ts' is NULL in 1 row(s); "
            "every event needs a time. Filter them out first (WHERE ts IS NOT NULL).") \
        in said.splitlines()
