"""What query text may read (issue 28, item 4), without Spark: a dataset file's text is never
quoted in an error, and MATCH_SPASEQ's ``dataset`` option from SQL reads only files under
``spark.ceql.spaseq.datasetPaths`` (the shim grants the setting in its Python workers'
environment, never through the call description, which a caller writes); a Python caller's
dataset is read as given."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("pyoxigraph")
pytest.importorskip("pyspark")

from pyspark.sql.types import LongType, StringType, StructField, StructType

import ceql.spaseq as sp
from ceql.constants import ENV_DATASET_ACCESS
from ceql.rdf import RdfInputError, StaticDataset
from ceql.spark import MatchCeqlError
from ceql.spark.udtf.call import CallInfo
from ceql.spark.udtf.spaseq_plan import DatasetAccess, check_dataset_access, plan_spaseq

SECRET = "hunter2-secret-token"
KB = '@prefix : <http://example/> . :H1 :owner :john .'
QUERY = ("PREFIX : <http://example/> SELECT ?h WITHIN 10 SECONDS FROM STREAM S1 "
         "<http://example/s1> WHERE { SEQ (A) DEFINE GPM A ON S1 { ?h :pow ?p . "
         "GRAPH <http://kb/> { ?h :owner ?n } } }")
SCHEMA = StructType([StructField("stream", StringType()), StructField("time", LongType()),
                     StructField("graph", StringType())])


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    p = tmp_path / "private" / "passwd"
    p.parent.mkdir()
    p.write_text(f"{SECRET}:x:0:0:root:/root:/bin/bash\nline two {SECRET}\n")
    return p


@pytest.mark.parametrize("graph", ["http://kb/", None])
def test_a_dataset_file_that_is_not_rdf_is_never_quoted(secret_file: Path,
                                                        graph: str | None) -> None:
    with pytest.raises(RdfInputError) as err:
        StaticDataset().load(path=secret_file, graph=graph)
    message = str(err.value)
    assert SECRET not in message and "x:0:0" not in message and "line two" not in message
    assert message.startswith(f"dataset file {secret_file}: not valid ")
    assert "at line 1, column 1" in message
    assert err.value.line == 1 and not err.value.snippet


def test_the_python_api_reads_its_paths_but_quotes_none(secret_file: Path,
                                                        tmp_path: Path) -> None:
    kb = tmp_path / "kb.ttl"
    kb.write_text(KB)
    assert sp.compile(QUERY, dataset={"http://kb/": kb}) is not None  # a trusted caller
    with pytest.raises(RdfInputError) as err:
        sp.compile(QUERY, dataset={"http://kb/": secret_file})
    assert SECRET not in str(err.value)


def test_rdf_text_a_caller_gives_is_still_shown_with_a_caret() -> None:
    with pytest.raises(RdfInputError) as err:
        StaticDataset().load("<http://a> <http://b> .", graph="http://kb/")
    assert "<http://a> <http://b> ." in str(err.value) and "^" in str(err.value)


def test_sql_reads_no_dataset_file_unless_the_session_allows(secret_file: Path) -> None:
    option = f"http://kb/={secret_file}"
    for allowed in (None, ""):
        with pytest.raises(MatchCeqlError) as err:
            check_dataset_access(option, allowed)
        assert str(err.value) == (
            f"MATCH_SPASEQ: the dataset option names {secret_file}, but "
            "spark.ceql.spaseq.datasetPaths lets query text read no file (it is unset in this "
            "session). Set spark.ceql.spaseq.datasetPaths to the directories holding your "
            "datasets (e.g. SET spark.ceql.spaseq.datasetPaths=/data/kb), or pass dataset= to "
            "ceql.spark.match_spaseq from Python.")
    with pytest.raises(MatchCeqlError, match=r"names /etc/hostname, .* read only files under"):
        check_dataset_access("http://kb/=/etc/hostname", str(secret_file.parent))
    check_dataset_access(option, f"/nowhere, {secret_file.parent}")  # allowed: no error


def test_dot_dot_and_links_do_not_leave_the_allowed_directories(tmp_path: Path,
                                                                secret_file: Path) -> None:
    allowed = tmp_path / "kb"
    allowed.mkdir()
    (allowed / "kb.ttl").write_text(KB)
    escape = f"http://kb/={allowed}/../private/passwd"
    with pytest.raises(MatchCeqlError, match="lets query text read only files under"):
        check_dataset_access(escape, str(allowed))
    link = allowed / "link.ttl"
    os.symlink(secret_file, link)
    with pytest.raises(MatchCeqlError, match="lets query text read only files under"):
        check_dataset_access(f"http://kb/={link}", str(allowed))
    sibling = tmp_path / "kb-other"  # a prefix of the name is not a parent directory
    sibling.mkdir()
    (sibling / "x.ttl").write_text(KB)
    with pytest.raises(MatchCeqlError):
        check_dataset_access(f"http://kb/={sibling / 'x.ttl'}", str(allowed))
    check_dataset_access(f"http://kb/={allowed / 'kb.ttl'}", str(allowed))


def test_analyze_checks_the_option_before_reading_anything(
        secret_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    options = {"query": QUERY, "dataset": f"http://kb/={secret_file}"}
    monkeypatch.setenv(ENV_DATASET_ACCESS, DatasetAccess(paths="").env_value())
    with pytest.raises(MatchCeqlError) as err:  # as SQL through the shim, setting unset
        plan_spaseq(SCHEMA, options, CallInfo())
    assert "spark.ceql.spaseq.datasetPaths" in str(err.value) and SECRET not in str(err.value)
    monkeypatch.setenv(ENV_DATASET_ACCESS, DatasetAccess(paths=str(secret_file.parent))
                       .env_value())
    with pytest.raises(MatchCeqlError) as err:  # allowed: read, not quoted
        plan_spaseq(SCHEMA, options, CallInfo())
    assert SECRET not in str(err.value) and "not valid" in str(err.value)
    monkeypatch.setenv(ENV_DATASET_ACCESS, DatasetAccess(trusted=True).env_value())
    with pytest.raises(MatchCeqlError) as err:  # from Python: read, not quoted
        plan_spaseq(SCHEMA, options, CallInfo())
    assert SECRET not in str(err.value) and "not valid" in str(err.value)


def test_a_call_description_grants_no_access(secret_file: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Whoever calls the Python table function writes ``_table_call``: a description that
    claims trust or names directories grants nothing; without a grant in the environment
    (the shim's, or match_spaseq's on the driver) query text reads no file."""
    monkeypatch.delenv(ENV_DATASET_ACCESS, raising=False)
    options = {"query": QUERY, "dataset": f"http://kb/={secret_file}"}
    for forged in ('{"dataset_trusted": true}', '{"dataset_paths": "/"}',
                   '{"dataset_paths": "/", "dataset_trusted": true}'):
        with pytest.raises(MatchCeqlError) as err:
            plan_spaseq(SCHEMA, options, CallInfo.from_json(forged))
        assert str(err.value).startswith(
            f"MATCH_SPASEQ: the dataset option names {secret_file}, but this call did not come "
            "through ceql's extension, which checks spark.ceql.spaseq.datasetPaths, so query "
            "text reads no file")
        assert SECRET not in str(err.value)
