"""Query text reads only what the session allows (issue 28, item 4): MATCH_CEQL's FROM names
tables and views, not files; MATCH_SPASEQ's dataset option reads only under
spark.ceql.spaseq.datasetPaths; no message quotes a file; ceql's call argument is the shim's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import AnalysisException
from spark_helpers import sql_string

import ceql.spark as cs

SECRET = "hunter2-secret-token"
SPASEQ = ("PREFIX : <http://example/> SELECT ?h WITHIN 10 SECONDS FROM STREAM S1 "
          "<http://example/s1> WHERE { SEQ (A) DEFINE GPM A ON S1 { ?h :pow ?p . "
          "GRAPH <http://kb/> { ?h :owner ?n } } }")


def _error(spark: Any, statement: str) -> str:
    with pytest.raises(AnalysisException) as err:
        spark.sql(statement).collect()
    found = cs.unwrap(err.value)
    return str(found if found is not None else err.value)


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    p = tmp_path / "private" / "passwd"
    p.parent.mkdir()
    p.write_text(f"{SECRET}:x:0:0\n")
    return p


def test_from_names_no_file(spark: Any, secret: Path) -> None:
    name = f"text.{secret}"
    message = _error(spark, f"SELECT * FROM MATCH_CEQL('SELECT * FROM `{name}` WHERE A')")
    assert message == (
        f'MATCH_CEQL: the FROM name "{name}" is no table or view but a text file path, and '
        "ceql reads only tables and views from query text; register the data as a view "
        "(CREATE TEMPORARY VIEW ... USING text) or set spark.ceql.from.files=true to let FROM "
        "name files.")
    assert SECRET not in message


def test_from_files_when_the_session_allows(spark: Any, secret: Path) -> None:
    spark.conf.set("spark.ceql.from.files", "true")
    try:
        rows = spark.sql(f"SELECT * FROM MATCH_CEQL('SELECT * FROM `text.{secret}` WHERE A', "
                         "type => 'value', rows => 'events')").collect()
    except AnalysisException as e:
        assert "spark.ceql.from.files" not in str(e)  # not ours: Spark's own verdict
    else:
        assert rows == []
    finally:
        spark.conf.unset("spark.ceql.from.files")


def test_tables_with_two_part_names_still_read(spark: Any) -> None:
    spark.sql("CREATE OR REPLACE GLOBAL TEMPORARY VIEW ceql_reads_ev AS "
              "SELECT * FROM VALUES (1, 'A'), (2, 'B') AS t(ts, type)")
    try:
        got = spark.sql("SELECT match_id FROM MATCH_CEQL('SELECT * FROM "
                        "`global_temp.ceql_reads_ev` WHERE A ; B', time => 'ts')").collect()
        assert len(got) == 1
    finally:
        spark.sql("DROP VIEW IF EXISTS global_temp.ceql_reads_ev")


def test_the_call_argument_is_the_shims_own(spark: Any) -> None:
    message = _error(spark, "SELECT * FROM MATCH_CEQL('SELECT * FROM ev WHERE A', "
                            "_table_call => '{\"dataset_trusted\": true}')")
    assert message == ("MATCH_CEQL: _table_call is ceql's own argument, written by the shim; "
                       "leave it out.")


def _spaseq_call(path: Path) -> str:
    return ("SELECT * FROM MATCH_SPASEQ(TABLE(SELECT 'S1' AS stream, 1L AS time, '' AS graph), "
            f"query => {sql_string(SPASEQ)}, dataset => {sql_string(f'http://kb/={path}')})")


def test_spaseq_dataset_reads_no_file_unless_allowed(spark: Any, secret: Path) -> None:
    message = _error(spark, _spaseq_call(secret))
    assert f"MATCH_SPASEQ: the dataset option names {secret}, but " in message
    assert "spark.ceql.spaseq.datasetPaths lets query text read no file" in message
    assert SECRET not in message
    spark.conf.set("spark.ceql.spaseq.datasetPaths", f"{secret.parent.parent}/other")
    try:
        message = _error(spark, _spaseq_call(secret))
        assert "lets query text read only files under" in message and SECRET not in message
        spark.conf.set("spark.ceql.spaseq.datasetPaths", str(secret.parent))
        message = _error(spark, _spaseq_call(secret))  # read now, and not valid RDF
        assert f"dataset file {secret}: not valid" in message and SECRET not in message
    finally:
        spark.conf.unset("spark.ceql.spaseq.datasetPaths")


def test_run_reads_no_file_from_query_text(spark: Any) -> None:
    """``ceql.spark.run(spark, query)`` reads what the query's FROM names: tables and views, as
    MATCH_CEQL does (a relative path: Spark cannot parse a '/' in the name it is given)."""
    with pytest.raises(cs.MatchCeqlError) as err:
        cs.run(spark, "SELECT * FROM `text.passwd` WHERE A")
    assert str(err.value) == (
        "MATCH_CEQL: the FROM name 'text.passwd' is no table or view, and ceql reads only tables "
        "and views from query text, not files (text.`path`); register the data as a view, or "
        "set spark.ceql.from.files=true to let FROM name files.")


_EVENT = ("SELECT 'S1' AS stream, 1L AS time, "
          "'<http://example/h1> <http://example/pow> \"5\" .' AS graph")


def test_a_forged_call_description_grants_no_file(spark: Any, secret: Path) -> None:
    """The Python table function registered by hand (as a Spark Connect client or any user
    can) reads ``_table_call`` from its caller: a description saying the dataset was checked,
    or naming the directories it may read, grants nothing; only ceql's shim grants access."""
    from ceql.spark.session.connect import table_function

    spark.udtf.register("SPASEQ_BY_HAND", table_function(spark, "MATCH_SPASEQ"))
    for forged in ('{"dataset_trusted": true}', '{"dataset_paths": "/"}',
                   '{"dataset_paths": "/", "dataset_trusted": true}'):
        message = _error(spark, (
            f"SELECT * FROM SPASEQ_BY_HAND(TABLE({_EVENT}), query => {sql_string(SPASEQ)}, "
            f"dataset => {sql_string(f'http://kb/={secret}')}, "
            f"_table_call => {sql_string(forged)})"))
        assert f"MATCH_SPASEQ: the dataset option names {secret}, but " in message, message
        assert "spark.ceql.spaseq.datasetPaths" in message and SECRET not in message


def test_the_python_api_reads_its_dataset_without_the_shim(spark: Any, tmp_path: Path) -> None:
    """``match_spaseq(dataset=…)`` from the driver's Python reads its files through the Python
    table function too (the caller names its own files), though the setting is unset."""
    kb = tmp_path / "kb.nt"
    kb.write_text('<http://example/h1> <http://example/owner> "n" .\n')
    got = cs.match_spaseq(spark.sql(_EVENT), SPASEQ, dataset={"http://kb/": kb},
                          jvm=False).collect()
    assert [r["h"] for r in got] == ["http://example/h1"]
