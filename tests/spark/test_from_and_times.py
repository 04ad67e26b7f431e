"""How ``analyze`` checks the query's FROM against its input and reads text times (option
``time_format``), and how :func:`ceql.spark.unwrap` finds ceql's message in Spark's errors
(no Spark session needed)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql.types import (
    DoubleType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

import ceql.spark as cs
from ceql.spark import MatchCeqlError
from ceql.spark.udtf.call import CallInfo
from ceql.spark.udtf.ceql_plan import MatchSpec, output_schema, plan_match
from ceql.spark.udtf.times import read_times, spark_shape, to_strptime

CLICKS = StructType([StructField("type", StringType()), StructField("user", StringType()),
                     StructField("ts", DoubleType())])
Q = "SELECT * FROM clicks WHERE login ; purchase WITHIN 10 SECONDS"


def plan(query: str = Q, schema: StructType = CLICKS, call: CallInfo | None = None,
         **options: str) -> MatchSpec:
    return plan_match(schema, {"query": query, **options}, call or CallInfo())


def error(*args: object, **kw: object) -> str:
    with pytest.raises(MatchCeqlError) as err:
        plan(*args, **kw)  # type: ignore[arg-type]
    return str(err.value)


# ---------------------------------------------------------------- FROM

def test_a_named_table_must_be_what_from_names() -> None:
    orders = Q.replace("FROM clicks", "FROM orders")
    assert error(orders, call=CallInfo(table_name="clicks")) == (
        "MATCH_CEQL: the query reads FROM orders, but the table argument is clicks: write FROM "
        "clicks, or leave out the table argument to read orders itself (MATCH_CEQL('SELECT … "
        "FROM orders …')).")
    # Spark's names: any case, and a qualified name names its last part
    plan(Q.replace("FROM clicks", "FROM Clicks"), call=CallInfo(table_name="clicks"))
    plan(Q.replace("FROM clicks", "FROM `db.clicks`"), call=CallInfo(table_name="clicks"))
    assert "reads FROM clicks, orders" in error(Q.replace("FROM clicks", "FROM clicks, orders"),
                                                call=CallInfo(table_name="clicks"))


def test_an_unnamed_input_stands_for_one_from_name() -> None:
    plan(Q.replace("FROM clicks", "FROM whatever"))  # a subquery or a DataFrame
    assert error(Q.replace("FROM clicks", "FROM web, app")) == (
        "MATCH_CEQL: the query reads FROM web, app, but its input is one table without a column "
        "'stream' saying which of them each row comes from; give one FROM name (it stands for "
        "the input), add that column, or let MATCH_CEQL read the tables themselves "
        "(MATCH_CEQL('SELECT … FROM web, app …'), ceql.spark.run(spark, query)).")


def test_with_a_stream_column_from_names_are_its_values() -> None:
    tagged = StructType([*CLICKS.fields, StructField("stream", StringType())])
    two = Q.replace("FROM clicks", "FROM web, app")
    assert plan(two, schema=tagged, call=CallInfo(table_name="clicks")).stream_key == "stream"
    merged = StructType([*CLICKS.fields, StructField("__ceql_stream", StringType())])
    plan(two, schema=merged, call=CallInfo(streams=("web", "app")))


# ---------------------------------------------------------------- time_format

TEXT = StructType([StructField("type", StringType()), StructField("ts", StringType())])


def test_time_format_orders_by_the_read_time_and_outputs_timestamps() -> None:
    s = plan(schema=TEXT, time_format="dd/MM/yyyy HH:mm:ss.SSS")
    assert s.time_format == "%d/%m/%Y %H:%M:%S.%f"
    assert s.request_order_by == (
        "CAST(try_to_timestamp(`ts`, 'dd/MM/yyyy HH:mm:ss.SSS') AS TIMESTAMP_NTZ)",)
    assert output_schema(s, TEXT)["match_start"].dataType == TimestampNTZType()
    zoned = plan(schema=TEXT, time_format="yyyy-MM-dd'T'HH:mm:ssXXX")
    # a pattern with quotes is written as its bytes: SQL escapes read differently under
    # spark.sql.parser.escapedStringLiterals
    hexed = b"yyyy-MM-dd'T'HH:mm:ssXXX".hex().upper()
    assert zoned.request_order_by == (f"try_to_timestamp(`ts`, CAST(X'{hexed}' AS STRING))",)
    assert output_schema(zoned, TEXT)["match_start"].dataType == TimestampType()


def test_time_format_mistakes() -> None:
    assert error(time_format="yyyy") == (
        "MATCH_CEQL: time_format reads a time column of text, but 'ts' has type double; drop "
        "time_format (a double column is read as it is).")
    assert error(schema=TEXT) == (
        "MATCH_CEQL: the time column 'ts' holds text (STRING); give its datetime pattern, e.g. "
        "time_format => 'yyyy-MM-dd HH:mm:ss' (as to_timestamp takes), or cast it (e.g. "
        "CAST(`ts` AS TIMESTAMP)).")
    assert error(schema=TEXT, time_format="yyyy-MM-dd G") == (
        "MATCH_CEQL: time_format 'yyyy-MM-dd G' has 'G', which MATCH_CEQL cannot read; it reads "
        "the pattern letters y M d D H h m s S (up to 6) a E X x Z, text in 'quotes' (or convert "
        "the column first: to_timestamp(col, 'pattern') in a subquery).")
    assert error(schema=TEXT, time_format="HH:mm[:ss]") == (
        "MATCH_CEQL: time_format 'HH:mm[:ss]' has '[' (optional sections and reserved "
        "characters), which MATCH_CEQL cannot read: give one pattern that every value follows.")


@pytest.mark.parametrize("pattern, fmt", [
    ("yyyy-MM-dd HH:mm:ss", "%Y-%m-%d %H:%M:%S"),
    ("d MMM yy h:mm a", "%d %b %y %I:%M %p"),
    ("EEEE, MMMM d yyyy", "%A, %B %d %Y"),
    ("HH 'o''clock' %", "%H o'clock %%"),
    ("yyyy-MM-dd'T'HH:mm:ss.SSSSSSxxx", "%Y-%m-%dT%H:%M:%S.%f%z"),
])
def test_spark_patterns_as_strptime(pattern: str, fmt: str) -> None:
    assert to_strptime(pattern) == fmt


def test_reading_text_times() -> None:
    got = read_times(pa.array(["25/11/2026 10:00:01.5", None, "25/11/2026 10:00:01.5"]),
                     "%d/%m/%Y %H:%M:%S.%f")
    assert got.bad_row is None and got.times is not None
    assert got.times.type == pa.timestamp("us")
    assert got.times.to_pylist()[1] is None and got.times[0] == got.times[2]
    bad = read_times(pa.array(["25/11/2026 10:00:01", "x", "x"]), "%d/%m/%Y %H:%M:%S")
    assert (bad.times, bad.bad_row) == (None, 1)
    zoned = read_times(pa.array(["2026-11-25T10:00:00+01:00"]), "%Y-%m-%dT%H:%M:%S%z")
    assert zoned.times is not None and zoned.times.type == pa.timestamp("us", tz="UTC")
    assert str(zoned.times[0].as_py()) == "2026-11-25 09:00:00+00:00"


@pytest.mark.parametrize("pattern, good, bad", [
    ("dd/MM/yyyy HH:mm:ss", ["01/12/2026 00:00:30"], ["1/12/2026 00:00:30", "01/12/26 00:00:30"]),
    ("d/M/yy H:m", ["1/2/26 3:4", "11/12/26 13:14"], ["111/2/26 3:4", "1/2/2026 3:4"]),
    ("yyyy-MM-dd HH:mm:ss.SSS", ["2026-11-25 10:00:01.5", "2026-11-25 10:00:01.500"],
     ["2026-11-25 10:00:01.5000", "2026-11-25 10:00:01"]),
    ("yyyy-MM-dd'T'HH:mm:ssXXX", ["2026-11-25T10:00:00+01:00", "2026-11-25T10:00:00Z"],
     ["2026-11-25T10:00:00"]),
    ("HH 'o''clock'", ["10 o'clock"], ["10 oclock"]),
])
def test_a_value_must_have_the_shape_spark_reads(pattern: str, good: list[str],
                                                  bad: list[str]) -> None:
    fmt, shape = to_strptime(pattern), spark_shape(pattern)
    assert read_times(pa.array(good), fmt, shape).bad_row is None
    for b in bad:
        assert read_times(pa.array([*good, b]), fmt, shape).bad_row == len(good), b


# ---------------------------------------------------------------- unwrap

def test_unwrap_finds_ceql_message_in_sparks_texts() -> None:
    task = Exception("An exception was thrown from the Python worker:\nceql.spark.MatchCeqlError:"
                     " MATCH_CEQL: the time column 'ts' is NULL in 1 row(s).")
    assert str(cs.unwrap(task)) == "MATCH_CEQL: the time column 'ts' is NULL in 1 row(s)."
    analysis = Exception(
        "[TABLE_VALUED_FUNCTION_FAILED_TO_ANALYZE_IN_PYTHON] Failed to analyze the Python user "
        "defined table function: MATCH_CEQL: Expected SELECT (line 1, column 1)\nSELCT *\n^^^^^ "
        "SQLSTATE: 38000; line 1 pos 14")
    assert str(cs.unwrap(analysis)) == "MATCH_CEQL: Expected SELECT (line 1, column 1)\nSELCT *\n" \
                                       "^^^^^"
    assert cs.unwrap(ValueError("something else")) is None
    own = MatchCeqlError("x")
    assert cs.unwrap(own) is own
