"""The ``spark-sql`` CLI with only ``--jars`` and ``--conf spark.sql.extensions``: MATCH_CEQL
works there with no Python registration, ``;`` inside a CEQL query and the escaped ``\\;``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

import ceql.spark as cs
from ceql.spark import build_jar

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
"""


def test_spark_sql_cli_runs_match_ceql(tmp_path: Path) -> None:
    jar = build_jar.build()
    home = Path(pyspark.__file__).resolve().parent
    (tmp_path / "q.sql").write_text(SCRIPT)
    env = {**os.environ, "SPARK_HOME": str(home), "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        [str(home / "bin" / "spark-sql"), "--jars", str(jar),
         "--conf", f"spark.sql.extensions={cs.EXTENSION_CLASS}", "-f", "q.sql"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [ln.split("\t") for ln in done.stdout.splitlines() if ln.strip()]
    assert lines == [
        ["inline", "AMZN", "4", "6"],
        ["inline", "MSFT", "0", "1"],
        ["escaped", "3"],
        ["literal", "1"],
        ["table", "AMZN", "4", "6"],
        ["table", "MSFT", "0", "1"],
    ]
