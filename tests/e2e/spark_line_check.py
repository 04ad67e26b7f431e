"""Run by tests/e2e/spark_lines.py with the Python of a venv where ceql is installed from the
wheel, in a temporary folder holding rows.json: MATCH_CEQL written inline on those rows, and
with --all also with a TABLE argument, through the DataFrame API and ``match_stream`` over JSON
files with availableNow. Prints one JSON line: each answer's matches as
[match_id, name, [[variable, [seq, ...]], ...]], and where pyspark, ceql and the jar came from.

    python -c "$(cat spark_line_check.py)" QUERY REPO_ROOT [--all]
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pyspark

import ceql
import ceql.spark

VARIABLES = ("a", "b")
SCHEMA = "seq long, type string, name string, price long, ts long"


def found(rows: list[Any]) -> list[list[Any]]:
    return [[r["match_id"], r["name"], [[v, [e["seq"] for e in r[v]]] for v in VARIABLES]]
            for r in rows]


def in_repo(path: str, repo: str) -> bool:
    """Whether ``path`` is a file of the repository (this venv may live in its .venv/)."""
    return path.startswith(repo + "/") and not path.startswith(sys.prefix + "/")


def main() -> None:
    query, repo = sys.argv[1], sys.argv[2]
    here = Path.cwd()
    rows = json.loads((here / "rows.json").read_text())
    spark = ceql.spark.local_session(**{"spark.log.level": "FATAL"})
    try:
        df = spark.createDataFrame([tuple(r[c] for c in ("seq", "type", "name", "price", "ts"))
                                    for r in rows], SCHEMA)
        df.createOrReplaceTempView("s")
        literal = "'" + query.replace("\\", "\\\\").replace("'", "\\'") + "'"
        report: dict[str, Any] = {
            "pyspark": pyspark.__version__,
            "pyspark_file": pyspark.__file__,
            "ceql_file": ceql.__file__,
            "jar": ceql.spark.jar_path(),
            "worker_ceql_file": spark.sparkContext.parallelize([0], 1)
            .map(lambda _: __import__("ceql").__file__).collect()[0],
            "inline": found(spark.sql(f"SELECT * FROM MATCH_CEQL( {query} )").collect()),
        }
        if "--all" in sys.argv:
            report["table"] = found(spark.sql(
                f"SELECT * FROM MATCH_CEQL(TABLE(s), query => {literal})").collect())
            report["dataframe"] = found(ceql.spark.match(df, query).collect())
            folder = here / "in"
            folder.mkdir()
            end = {"seq": 10**6, "type": "Z", "name": "Z", "price": 0,
                   "ts": max(r["ts"] for r in rows) + 3600}
            # two files, one a trigger: the last row moves the watermark past the others; the
            # file source reads them in modification time order, so that is set
            for i, piece in enumerate([rows, [end]]):
                path = folder / f"part-{i}.json"
                path.write_text("".join(json.dumps(r) + "\n" for r in piece))
                os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
            source = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1)
                      .json(str(folder)))
            q = (ceql.spark.match_stream(source, query, watermark="3 seconds")
                 .writeStream.format("memory").queryName("matches").outputMode("append")
                 .option("checkpointLocation", str(here / "checkpoint"))
                 .trigger(availableNow=True).start())
            try:
                q.awaitTermination()
            finally:
                q.stop()
            report["stream"] = found(spark.table("matches").collect())
        report["from_repo"] = sorted(name for name, m in list(sys.modules.items())
                                     if in_repo(str(getattr(m, "__file__", None) or ""), repo))
        report["sys_path_repo"] = [p for p in sys.path if in_repo(p, repo)]
    finally:
        spark.stop()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
