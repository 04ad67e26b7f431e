"""The session helpers' answers for Spark Connect and for sessions that run already, and
:func:`ceql.spark.unwrap` on Spark's errors for a MATCH_CEQL the session cannot run. Spark
Connect itself (a server, its clients) is tested in ``tests/e2e/test_connect.py``."""

from __future__ import annotations

import sys
import warnings
from typing import Any

import pytest
from pyspark.errors import ParseException

import ceql.spark as cs
from ceql.spark.conf import PARSER_ENABLED
from ceql.spark.inline import (
    INLINE_NEEDS_EXTENSION,
    NOT_REGISTERED,
    PARTITION_IN_QUERY,
    inside_inline_call,
)
from ceql.spark.session.connect import is_connect, remote_url
from ceql.spark.session.local import DAEMON_CONF, DAEMON_MODULE
from ceql.spark.stream.operator import ROCKSDB_CHANGELOG, ROCKSDB_PROVIDER, STATE_STORE_PROVIDER

# Spark Connect's text of a parse error (PySpark 4.3 against a server without the extension)
CONNECT_PARSE_ERROR = (
    "\n[PARSE_SYNTAX_ERROR] Syntax error at or near 'stock'. SQLSTATE: 42601 (line 1, pos 39)"
    "\n\n== SQL ==\nSELECT * FROM MATCH_CEQL(SELECT * FROM stock WHERE SELL AS a ; SELL AS b "
    "PARTITION BY [name])\n---------------------------------------^^^\n\n\nJVM stacktrace:\n"
    "org.apache.spark.sql.catalyst.parser.ParseException\n\tat org.apache.spark.sql.catalyst."
    "parser.ParseException.withCommand(parsers.scala:267)")
UNRESOLVED = (
    "[UNRESOLVABLE_TABLE_VALUED_FUNCTION] Could not resolve `MATCH_CEQL` to a table-valued "
    "function.\nPlease make sure that `MATCH_CEQL` is defined as a table-valued function and "
    "that all required parameters are provided correctly. SQLSTATE: 42883; line 1 pos 14")


class _Builder:
    def __init__(self, **options: str) -> None:
        self._options: dict[str, str] = dict(options)

    def config(self, key: str, value: str) -> _Builder:
        self._options[key] = value
        return self


def test_server_conf_holds_every_start_up_setting() -> None:
    assert cs.server_conf() == {
        "spark.jars": cs.jar_path(),
        "spark.sql.extensions": cs.EXTENSION_CLASS,
        DAEMON_CONF: DAEMON_MODULE,
        STATE_STORE_PROVIDER: ROCKSDB_PROVIDER,
        ROCKSDB_CHANGELOG: "true",
        "spark.pyspark.python": sys.executable,
    }
    assert cs.server_conf("/opt/py/bin/python")["spark.pyspark.python"] == "/opt/py/bin/python"


def test_configure_leaves_a_builder_of_a_connect_server_alone_and_says_why(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    b = _Builder(**{"spark.remote": "sc://127.0.0.1:15002"})
    with pytest.warns(UserWarning) as got:
        assert cs.configure(b) is b
    assert b._options == {"spark.remote": "sc://127.0.0.1:15002"}
    assert [str(w.message) for w in got] == [
        "ceql: this builder connects to the Spark Connect server sc://127.0.0.1:15002, whose "
        "jars and extensions are set when the server starts, not by its clients: start the "
        "server with ceql.spark.server_conf(), or call ceql.spark.enable(spark) on the session "
        "for MATCH_CEQL(TABLE(t), query => '…'). The builder is returned unchanged."]
    assert got[0].filename == __file__
    # SPARK_REMOTE names the server when the builder does not
    monkeypatch.setenv("SPARK_REMOTE", "sc://example:1")
    with pytest.warns(UserWarning, match="server sc://example:1, whose"):
        cs.configure(_Builder())


def test_remote_local_builders_start_their_server_with_the_settings() -> None:
    # PySpark starts a local Connect server from the builder's settings: they take effect
    assert remote_url({"spark.remote": "local[2]"}, {}) is None
    assert remote_url({}, {"SPARK_REMOTE": "sc://h:1"}) == "sc://h:1"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = cs.configure(_Builder(**{"spark.remote": "local[2]"}))
    assert b._options["spark.sql.extensions"] == cs.EXTENSION_CLASS


def test_connect_sessions_are_told_apart_by_their_class() -> None:
    assert not is_connect(_Builder())

    class Fake:
        pass

    Fake.__module__ = "pyspark.sql.connect.session"
    assert is_connect(Fake())


def test_unwrap_turns_a_connect_parse_error_of_inline_ceql_into_ceqls_word() -> None:
    got = cs.unwrap(Exception(CONNECT_PARSE_ERROR))
    assert isinstance(got, cs.MatchCeqlError)
    assert str(got) == INLINE_NEEDS_EXTENSION == (
        "MATCH_CEQL( <CEQL> ) with the query written inline needs ceql's extension where Spark "
        "parses the statement (for Spark Connect: in the server), and this session's parser "
        "read the query as SQL. Start Spark with ceql.spark.configure(builder) (a Spark Connect "
        "server with the settings of ceql.spark.server_conf()), keeping "
        "spark.ceql.parser.enabled true; or write MATCH_CEQL(TABLE(t), query => '<CEQL>') after "
        "ceql.spark.enable(spark).")
    assert str(cs.unwrap(Exception(UNRESOLVED))) == NOT_REGISTERED == (
        "MATCH_CEQL is not a function of this session: call ceql.spark.enable(spark) to "
        "register MATCH_CEQL(TABLE(t), query => '<CEQL>'), or start Spark with ceql's jar and "
        "extension (ceql.spark.configure(builder); a Spark Connect server with the settings of "
        "ceql.spark.server_conf()). ceql.spark.match(df, query) needs neither.")

    partitioned = (
        "[TABLE_VALUED_FUNCTION_REQUIRED_METADATA_INCOMPATIBLE_WITH_CALL] Failed to evaluate "
        "the table function MATCH_CEQL because its table metadata specified its own required "
        "partitioning of the input table, but the function call specified the WITH SINGLE "
        "PARTITION or PARTITION BY clause; please remove these clauses and retry the query "
        "again.. SQLSTATE: 22023; line 1 pos 14")
    assert str(cs.unwrap(Exception(partitioned))) == PARTITION_IN_QUERY
    assert cs.unwrap(Exception(partitioned.replace("MATCH_CEQL", "OTHER_TVF"))) is None


def test_only_errors_inside_an_inline_call_are_read_as_such() -> None:
    assert inside_inline_call("SELECT * FROM MATCH_CEQL( select * FROM s WHERE A ; B")
    assert inside_inline_call("SELECT * FROM match_ceql(\n  SELECT a FROM s WHERE A AS a ; "
                              "B FILTER a[n = ')'] AND (a[x > 1]")
    assert not inside_inline_call("SELECT * FRM")
    assert not inside_inline_call("SELECT * FROM MATCH_CEQL( SELECT * FROM s WHERE A ) AS m ORDR")
    assert not inside_inline_call("SELECT * FROM MATCH_CEQL(TABLE(s), query => 'SELECT")
    # an error in the SQL around the call, or in another statement, stays Spark's
    around = CONNECT_PARSE_ERROR.replace("(line 1, pos 39)", "(line 1, pos 7)")
    assert cs.unwrap(Exception(around)) is None
    assert cs.unwrap(Exception("[PARSE_SYNTAX_ERROR] Syntax error at or near 'x'.")) is None


@pytest.mark.spark
def test_inline_ceql_read_by_sparks_parser_alone_gets_ceqls_word(spark: Any) -> None:
    """A classic session whose parser does not read CEQL gives Spark's parse error; unwrap
    says what to do. With the parser, its own errors (and the SQL's around the call) stay."""
    PARSER_ENABLED.set(spark, False)
    try:
        with pytest.raises(ParseException) as err:
            spark.sql("SELECT *\nFROM MATCH_CEQL(\n  SELECT * FROM s WHERE A ; B\n)")
    finally:
        spark.conf.unset(PARSER_ENABLED.key)
    assert str(cs.unwrap(err.value)) == INLINE_NEEDS_EXTENSION
    with pytest.raises(ParseException) as own:
        spark.sql("SELECT * FROM MATCH_CEQL( SELECT * FROM s WHERE A")
    assert cs.unwrap(own.value) is None
    with pytest.raises(ParseException) as around:
        spark.sql("SELECT * FRM MATCH_CEQL( SELECT * FROM s WHERE A )")
    assert cs.unwrap(around.value) is None


@pytest.mark.spark
def test_enable_and_configure_on_a_session_that_has_the_extension_say_nothing(
        spark: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cs.enable(spark) is spark
        cs.configure(_Builder())


class _Conf:
    def get(self, key: str, default: str | None = None) -> str | None:
        return default


class _Running:
    """A classic session running without ceql's extension, as getOrCreate() would return."""

    _sc = type("Context", (), {"_jsc": object()})()
    conf = _Conf()


def test_configure_says_a_running_session_without_the_extension_is_kept(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``getOrCreate()`` returns a running session as it is; the warning says what to do."""
    from pyspark.sql import SparkSession

    monkeypatch.setattr(SparkSession, "_instantiatedSession", _Running())
    with pytest.warns(UserWarning) as got:
        b = cs.configure(_Builder())
    assert b._options["spark.sql.extensions"] == cs.EXTENSION_CLASS
    assert [str(w.message) for w in got] == [
        "ceql: a SparkSession runs already without ceql's extension, and getOrCreate() will "
        "return it as it is: the jar and the extension are read only when a session starts. "
        "Call ceql.spark.enable(spark) on it for MATCH_CEQL(TABLE(t), query => '…'), or stop "
        "it first (spark.stop()) for a session with MATCH_CEQL( <CEQL> ) written inline."]
    assert got[0].filename == __file__


def test_local_session_enables_a_running_session_without_the_extension(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``getOrCreate()`` gives the running session; ``enable`` registers MATCH_CEQL in it and
    says what needs a restart (the registration itself is tested with the shared session)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from ceql.spark.session import local

    running = _Running()
    registered: list[Any] = []
    monkeypatch.setattr(SparkContext, "_gateway", object())
    monkeypatch.setattr(SparkSession, "_instantiatedSession", running)
    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", lambda self: running)
    monkeypatch.setattr(local, "register", registered.append)
    with pytest.warns(UserWarning) as got:
        assert cs.local_session() is running
    assert registered == [running]
    assert [str(w.message) for w in got] == [
        "ceql: MATCH_CEQL(TABLE(t), query => '…') is registered in this running session; "
        "MATCH_CEQL( <CEQL> ) written inline also needs the extension, which Spark reads only "
        "when a session starts: stop this one (spark.stop()) and start one with "
        "ceql.spark.configure(builder) or ceql.spark.local_session()."]


def test_late_rows_reads_a_classic_and_a_connect_progress() -> None:
    from pyspark.sql import Row

    schema = {"type": "struct", "fields": [
        {"name": "late_rows", "type": "long", "nullable": False, "metadata": {}}]}

    class Progress:  # the attribute StreamingQueryProgress and listener events have
        def __init__(self, metrics: dict[str, Any]) -> None:
            self.observedMetrics = metrics

    assert cs.late_rows(Progress({"ceql": Row(late_rows=2)})) == 2
    # PySpark's Connect client: the row's JSON, as Row(values=…, schema=…)
    assert cs.late_rows(Progress({"ceql": Row(values=[3], schema=schema)})) == 3
    assert cs.late_rows({"observedMetrics": {"ceql": {"late_rows": 4}}}) == 4
    assert cs.late_rows(Progress({})) == 0
    assert cs.late_rows({"batchId": 0}) == 0


def test_a_server_that_hides_its_settings_has_no_extension() -> None:
    from pyspark.errors import PySparkException

    from ceql.spark.session.connect import has_extension

    class Conf:
        def get(self, key: str, default: str | None = None) -> str | None:
            raise PySparkException("[CONFIG_NOT_AVAILABLE] Configuration spark.sql.extensions "
                                   "is not available.")

    class Hosted:
        conf = Conf()

    assert not has_extension(Hosted())
