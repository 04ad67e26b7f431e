"""MATCH_CEQL on a real local Spark (issue 10): a misspelt inline SELECT gets ceql's caret, the
query's FROM is checked against the table, a task failed by bad data reports ceql's message
without a traceback, text times with ``time_format``, names never seen, columns in pattern
order."""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.errors import AnalysisException, ParseException, PythonException
from spark_helpers import engine, spark_rows, sql_string

import ceql
import ceql.spark as cs

pytestmark = pytest.mark.spark

BASE = dt.datetime(2026, 11, 30, 23, 59, 50)
# times as text, day first: text order is not time order once the month turns
TIMES = [BASE + dt.timedelta(seconds=3 * i) for i in range(11)]
ROWS: list[dict[str, Any]] = [{"seq": i, "type": t, "name": "xy"[i % 2], "when": TIMES[i]}
                              for i, t in enumerate("ABAABCBCCAB")]
TEXT_ROWS = [{**r, "when": TIMES[i].strftime("%d/%m/%Y %H:%M:%S.%f")[:-3]}
             for i, r in enumerate(ROWS)]


@pytest.fixture(scope="module")
def clicks(spark: Any) -> Iterator[Any]:
    df = spark.createDataFrame(TEXT_ROWS, "seq int, type string, name string, when string")
    df.createOrReplaceTempView("clicks")
    yield df
    spark.catalog.dropTempView("clicks")


def _analysis_error(spark: Any, sql: str) -> AnalysisException:
    with pytest.raises(AnalysisException) as err:
        spark.sql(sql)
    return err.value


def _task_error(df: Any) -> PythonException:
    with pytest.raises(PythonException) as err:
        df.collect()
    return err.value


# ---------------------------------------------------------------- the inline syntax

def test_a_misspelt_inline_select_gets_ceqls_caret(spark: Any, clicks: Any) -> None:
    text = "SELCT * FROM clicks WHERE A ; B"
    with pytest.raises(ceql.CeqlSyntaxError) as syntax:
        ceql.compile(text)
    err = _analysis_error(spark, f"SELECT * FROM MATCH_CEQL({text}, time => 'when')")
    assert "PARSE_SYNTAX_ERROR" not in str(err)
    assert str(syntax.value) in str(err)  # line, column and caret
    assert str(cs.unwrap(err)) == f"MATCH_CEQL: {syntax.value}"
    # the spark-sql CLI's statement splitting keeps such a call whole
    r = spark._jsparkSession.sessionState().sqlParser().splitStatements(
        f"SELECT * FROM MATCH_CEQL({text}); SELECT 1")
    st = r.completeStatements()
    assert [st.apply(i).statement() for i in range(st.size())] == [
        f"SELECT * FROM MATCH_CEQL({text})"]


def test_sql_mistakes_outside_the_query_stay_sparks(spark: Any, clicks: Any) -> None:
    with pytest.raises(ParseException) as err:
        spark.sql("SELECT * FROM MATCH_CEQL(TABLE(clicks), query => 'q') WHER x")
    assert "PARSE_SYNTAX_ERROR" in str(err.value)


# ---------------------------------------------------------------- FROM

def test_from_must_name_the_table_argument(spark: Any, clicks: Any) -> None:
    q = "SELECT * FROM orders WHERE A ; B WITHIN 5 SECONDS"
    err = _analysis_error(spark, f"SELECT * FROM MATCH_CEQL(TABLE(clicks), query => "
                                 f"{sql_string(q)}, time => 'when', "
                                 "time_format => 'dd/MM/yyyy HH:mm:ss.SSS')")
    assert str(cs.unwrap(err)) == (
        "MATCH_CEQL: the query reads FROM orders, but the table argument is clicks: write FROM "
        "clicks, or leave out the table argument to read orders itself (MATCH_CEQL('SELECT … "
        "FROM orders …')).")
    with pytest.raises(Exception) as named:
        cs.run(spark, q, "clicks", time="when", time_format="dd/MM/yyyy HH:mm:ss.SSS")
    assert "the query reads FROM orders, but the table argument is clicks" in str(named.value)
    # a DataFrame has no name: its one FROM name is whatever the query says
    assert cs.match(clicks, q, time="when", time_format="dd/MM/yyyy HH:mm:ss.SSS").count() > 0


# ---------------------------------------------------------------- text times

def test_time_format_reads_text_times_in_time_order(spark: Any, clicks: Any) -> None:
    q = "SELECT a, b FROM clicks WHERE A AS a ; B AS b WITHIN 7 SECONDS"
    sql = (f"SELECT * FROM MATCH_CEQL(TABLE(clicks), query => {sql_string(q)}, "
           "time => 'when', time_format => 'dd/MM/yyyy HH:mm:ss.SSS')")
    rows = spark.sql(sql).collect()
    expected = engine(q, ROWS, time="when", hashed=TEXT_ROWS)  # ids read the text times
    assert len(expected) >= 3 and spark_rows(rows, ("a", "b")) == expected
    assert {r.match_start for r in rows} <= {r["when"] for r in ROWS}  # naive datetimes
    # across the month: '01/12/2026 …' sorts before '30/11/2026 …' as text
    assert any(r.match_start.month == 11 and r.match_end.month == 12 for r in rows)


def test_a_time_the_format_cannot_read_fails_with_ceqls_message(spark: Any) -> None:
    rows = [{"seq": 0, "type": "A", "when": "29/11/2026 10:00:00.000"},
            {"seq": 1, "type": "Z", "when": "29/11/2026 10h01"}]  # a type no run reads
    df = spark.createDataFrame(rows, "seq int, type string, when string")
    err = _task_error(cs.match(df, "SELECT * FROM t WHERE A ; B WITHIN 1 MINUTE", time="when",
                               time_format="dd/MM/yyyy HH:mm:ss.SSS"))
    assert "Traceback" not in str(err)
    assert str(err).splitlines()[1:] == [
        "ceql.spark.MatchCeqlError: MATCH_CEQL: the time column 'when' holds '29/11/2026 10h01', "
        "which does not match time_format 'dd/MM/yyyy HH:mm:ss.SSS' (read as strptime's "
        "'%d/%m/%Y %H:%M:%S.%f'); the row: {'seq': 1, 'type': 'Z', 'when': "
        "'29/11/2026 10h01'}."]


def test_a_time_spark_cannot_read_is_not_read_by_the_task_either(spark: Any) -> None:
    # strptime's %d takes '1' where Spark's dd wants '01': Spark sorts the row first (NULL),
    # so the task must refuse it too, not read it and report the order as broken.
    rows = [("30/11/2026 23:59:00", "A"), ("1/12/2026 00:00:30", "B")]
    df = spark.createDataFrame(rows, "when string, type string")
    err = _task_error(cs.match(df, "SELECT * FROM t WHERE A ; B WITHIN 1 MINUTE", time="when",
                               time_format="dd/MM/yyyy HH:mm:ss"))
    assert str(err).splitlines()[1:] == [
        "ceql.spark.MatchCeqlError: MATCH_CEQL: the time column 'when' holds "
        "'1/12/2026 00:00:30', which does not match time_format 'dd/MM/yyyy HH:mm:ss' (read as "
        "strptime's '%d/%m/%Y %H:%M:%S'); the row: {'when': '1/12/2026 00:00:30', 'type': "
        "'B'}."]


# ---------------------------------------------------------------- task failures

def test_bad_data_in_a_task_reports_ceqls_message_first(spark: Any) -> None:
    df = spark.createDataFrame([(0, "A", None), (1, "B", 2.0)], "seq int, type string, ts double")
    err = _task_error(cs.match(df, "SELECT * FROM t WHERE A ; B WITHIN 5 SECONDS"))
    assert str(err).splitlines() == [
        "An exception was thrown from the Python worker:",
        "ceql.spark.MatchCeqlError: MATCH_CEQL: the time column 'ts' is NULL in 1 row(s); every "
        "event needs a time. Filter them out first (WHERE ts IS NOT NULL)."]
    assert str(cs.unwrap(err)) == (
        "MATCH_CEQL: the time column 'ts' is NULL in 1 row(s); every event needs a time. Filter "
        "them out first (WHERE ts IS NOT NULL).")
    # an error of the engine itself: a window attribute that goes back
    back = spark.createDataFrame([(0, "A", 1.0, 5), (1, "B", 2.0, 3)],
                                 "seq int, type string, ts double, v int")
    err = _task_error(cs.match(back, "SELECT * FROM t WHERE A ; B WITHIN 10 [v]"))
    message = str(cs.unwrap(err))
    assert message.startswith("MATCH_CEQL: Event 1 is out of order: 'v' goes back from 5 to 3")
    assert "Traceback" not in str(err)


# ---------------------------------------------------------------- warnings, columns

def test_check_warns_of_names_the_input_never_carries(spark: Any, clicks: Any) -> None:
    with pytest.warns(ceql.UnseenNameWarning) as said:
        message = cs.check(clicks, "SELECT * FROM clicks WHERE A ; BB WITHIN 5 SECONDS")
    assert message == str(said[0].message) == (
        "The query's event type 'BB' never occurred in the 11 events; event types seen: 'A', "
        "'B', 'C' (did you mean 'B'?). A misspelt name matches nothing: check it against the "
        "data.")
    assert said[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cs.check(clicks, "SELECT * FROM clicks WHERE A ; B WITHIN 5 SECONDS") is None


def test_the_helpers_warn_at_the_callers_line(spark: Any, clicks: Any) -> None:
    with pytest.warns(ceql.UnboundedOutputWarning) as said:
        cs.match(clicks, "SELECT * FROM clicks WHERE A ; B", time="when",
                 time_format="dd/MM/yyyy HH:mm:ss.SSS")
    assert {w.filename for w in said} == {__file__}


def test_variable_columns_follow_the_pattern(spark: Any, clicks: Any) -> None:
    df = cs.match(clicks, "SELECT * FROM clicks WHERE B AS z ; A AS a ; C WITHIN 9 SECONDS",
                  time="when", time_format="dd/MM/yyyy HH:mm:ss.SSS")
    assert df.columns == ["match_id", "match_start", "match_end", "z", "a", "C"]


def test_limit_zero_runs_and_outputs_nothing(spark: Any, clicks: Any) -> None:
    text = "SELECT * FROM clicks WHERE A ; B WITHIN 9 SECONDS{}"
    opts = {"time": "when", "time_format": "dd/MM/yyyy HH:mm:ss.SSS"}
    assert cs.match(clicks, text.format(""), **opts).count() > 0
    assert cs.match(clicks, text.format(" LIMIT 0"), **opts).count() == 0
    assert spark.sql(f"SELECT * FROM MATCH_CEQL({text.format(' LIMIT 0')}, time => 'when', "
                     "time_format => 'dd/MM/yyyy HH:mm:ss.SSS')").count() == 0
