"""One shim jar, compiled against the newest pyspark, serves every Spark line the ``spark``
extra admits: it links against each line's jars, and the wheel installed with pip next to an
older line's pyspark (left as it was) answers MATCH_CEQL inline, with a TABLE argument, through
the DataFrame API and over a stream as the engine does. The newest line's clean install is
tests/e2e/test_wheel.py's."""

from __future__ import annotations

import re
from pathlib import Path

import pyspark
import pytest
from packaging.version import Version
from spark_lines import (
    ROOT,
    built_wheel,
    check_line,
    installed_pyspark,
    line_venv,
    newest_pin,
    spark_range,
)

from ceql.shim import jar as build_jar

pytestmark = pytest.mark.e2e


def _makefile_lines() -> list[str]:
    found = re.search(r"^SPARK_LINES\s*:=\s*(.+)$", (ROOT / "Makefile").read_text(), re.M)
    assert found, "the Makefile has no SPARK_LINES"
    return sorted(found.group(1).split(), key=Version)


LINES = _makefile_lines()
OLDER = LINES[:-1]

#: Spark 4.3's parser API that the shim's parser overrides use (the spark-sql CLI's statement
#: splitting, temporal table identifiers). Spark 4.2's ParserInterface has neither method, so
#: 4.2 never calls those overrides, and nothing else of the jar is missing there.
PARSER_4_3 = {
    ("org.apache.spark.sql.catalyst.parser.ParserInterface", "parseTemporalTableIdentifier"),
    ("org.apache.spark.sql.catalyst.parser.ParserInterface", "splitStatements"),
    ("org.apache.spark.sql.catalyst.parser.SqlStatement", ""),
    ("org.apache.spark.sql.catalyst.parser.SqlStatement", "<init>"),
    ("org.apache.spark.sql.catalyst.parser.SqlStatement", "statement"),
    ("org.apache.spark.sql.catalyst.parser.SqlStatement", "terminator"),
    ("org.apache.spark.sql.catalyst.parser.SqlStatementSplitResult", ""),
    ("org.apache.spark.sql.catalyst.parser.SqlStatementSplitResult", "<init>"),
    ("org.apache.spark.sql.catalyst.parser.SqlStatementSplitResult", "completeStatements"),
    ("org.apache.spark.sql.catalyst.parser.SqlStatementSplitResult", "hasUnclosedComment"),
    ("org.apache.spark.sql.catalyst.parser.SqlStatementSplitResult", "partialStatement"),
}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_wheel(tmp_path_factory)


def test_the_spark_extra_admits_exactly_the_tested_lines() -> None:
    spec = spark_range()
    admitted = {(4, minor) for minor in range(10)
                if any(spec.contains(f"4.{minor}.{patch}") for patch in range(30))}
    assert {Version(v).release[:2] for v in LINES} == admitted
    assert len(LINES) == len(admitted) >= 2  # one version a line, at least the two newest
    assert all(spec.contains(v) for v in LINES)
    assert LINES[-1] == newest_pin() == pyspark.__version__  # .venv runs the newest


@pytest.mark.parametrize("version", LINES)
def test_the_jar_links_against_the_line(version: str) -> None:
    (jars,) = line_venv(version).glob("lib/python*/site-packages/pyspark/jars")
    assert installed_pyspark(line_venv(version)) == version
    missing = build_jar.missing_links(jars, Path(build_jar.build()))
    assert {link.user for link in missing} <= {"org.apache.spark.sql.ceql.CeqlSqlParser"}
    assert not any(link.abstract for link in missing)
    expected = set() if version == LINES[-1] else PARSER_4_3
    assert {(link.owner, link.member) for link in missing} == expected


@pytest.mark.parametrize("version", OLDER)
def test_the_wheel_runs_next_to_the_lines_pyspark(version: str, wheel: Path,
                                                  tmp_path: Path) -> None:
    check_line(version, wheel, tmp_path, every_form=True)
