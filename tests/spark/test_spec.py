"""How ``analyze`` plans a call (no Spark session needed): columns, partitioning, ordering,
type source, output schema, and the messages of wrong calls."""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    DateType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ceql.spark import MatchCeqlError
from ceql.spark.udtf.call import CallInfo
from ceql.spark.udtf.ceql_plan import MatchSpec, output_schema, plan_match

STOCK = StructType([StructField("type", StringType()), StructField("name", StringType()),
                    StructField("price", DoubleType()), StructField("ts", TimestampType())])
Q = "SELECT * FROM stock WHERE SELL AS a ; BUY AS b"
QP = Q + " PARTITION BY [name] WITHIN 10 SECONDS"


def plan(query: str = Q, schema: StructType = STOCK, call: CallInfo | None = None,
         **options: str) -> MatchSpec:
    return plan_match(schema, {"query": query, **options}, call or CallInfo())


def error(*args: object, **kw: str) -> str:
    with pytest.raises(MatchCeqlError) as err:
        plan(*args, **kw)  # type: ignore[arg-type]
    return str(err.value)


def test_a_query_partition_is_requested_from_spark() -> None:
    s = plan(QP)
    assert (s.partition, s.spark_partitioned) == (("name",), True)
    assert (s.request_partition_by, s.request_order_by) == (("`name`",), ("`ts`",))
    assert (s.time, s.type_key, s.type_fill, s.window_seconds) == ("ts", "type", None, 10.0)


def test_the_tables_partition_and_order_carry_over() -> None:
    s = plan(call=CallInfo(partition_by=("NAME",), order_by=("ts", "`price`"),
                           order_by_column="ts"))
    assert (s.partition, s.spark_partitioned) == (("name",), True)
    assert s.request_order_by == ("`ts`", "`price`")


def test_consume_by_any_runs_in_one_partition_and_the_engine_partitions() -> None:
    s = plan(QP + " CONSUME BY ANY")
    assert (s.partition, s.spark_partitioned, s.request_partition_by) == (("name",), False, ())
    assert error(QP + " CONSUME BY ANY", call=CallInfo(partition_by=("name",))) == (
        "MATCH_CEQL: CONSUME BY ANY consumes across all partitions, so the table argument "
        "cannot be PARTITION BY; drop it (the query's own PARTITION BY still applies).")


def test_with_single_partition_keeps_every_row_in_one_task() -> None:
    s = plan(QP, call=CallInfo(single_partition=True))
    assert (s.spark_partitioned, s.request_partition_by) == (False, ())


def test_time_column_defaults() -> None:
    other = StructType([StructField("type", StringType()), StructField("at", DateType())])
    assert plan(schema=other).time == "at"  # the only TIMESTAMP/DATE column
    nums = StructType([StructField("type", StringType()), StructField("t", LongType()),
                       StructField("u", LongType())])
    assert plan(schema=nums, time="t", time_unit="ms").time_unit == "ms"
    assert error(schema=nums) == (
        "MATCH_CEQL needs a time column to order the events: write TABLE(t) ORDER BY (col) or "
        "pass time => 'col'. The input's columns are type, t, u.")
    assert error(time="name") == (
        "MATCH_CEQL: the time column 'name' holds text (STRING); give its datetime pattern, "
        "e.g. time_format => 'yyyy-MM-dd HH:mm:ss' (as to_timestamp takes), or cast it (e.g. "
        "CAST(`name` AS TIMESTAMP)).")
    assert error(time_unit="h") == "MATCH_CEQL: time_unit 'h' is not one of s, ms, us, ns."


def test_event_types_come_from_a_column_the_table_name_or_the_stream() -> None:
    no_type = StructType([StructField("ts", DoubleType()), StructField("v", IntegerType())])
    s = plan(Q.replace("stock", "ping"), schema=no_type, call=CallInfo(table_name="ping"))
    assert (s.type_key, s.type_fill, s.table_name) == ("__ceql_type", "table", "ping")
    merged = StructType([*no_type.fields, StructField("__ceql_stream", StringType()),
                         StructField("__ceql_from", IntegerType())])
    s = plan(schema=merged)
    assert (s.type_key, s.stream_key, s.event_columns) == ("__ceql_stream", "__ceql_stream",
                                                           ("ts", "v"))
    assert s.request_order_by == ("`ts`", "`__ceql_from`")
    assert error(type="kind") == (
        "MATCH_CEQL: the type column 'kind' is not in the input table; its columns are type, "
        "name, price, ts. Name one of them.")
    assert error(type="price") == (
        "MATCH_CEQL: the type column 'price' has type double; event types are names, so it "
        "must be a STRING column (or name another with type => '…').")


def test_output_schemas() -> None:
    s = plan(QP)
    out = output_schema(s, STOCK)
    # the variables in pattern order, the type names that only repeat them left out
    assert out.names == ["match_id", "name", "match_start", "match_end", "a", "b"]
    assert out["match_start"].dataType == TimestampType()
    assert out["a"].dataType.elementType == STOCK  # type: ignore[attr-defined]
    rows = output_schema(plan(QP, rows="events"), STOCK)
    assert rows.names == ["match_id", "match_start", "match_end", "variable", "type", "name",
                          "price", "ts"]


def test_wrong_calls() -> None:
    assert error("") == ("MATCH_CEQL needs a CEQL query: MATCH_CEQL(TABLE(t), query => "
                         "'SELECT * FROM t WHERE …').")
    assert error(rows="all") == "MATCH_CEQL: rows => 'all' is not one of matches, events."
    assert error(call=CallInfo(bad_partition_by=("upper(name)",))) == (
        "MATCH_CEQL: the table argument's PARTITION BY must name columns of the table, got "
        "upper(name); compute the value in a subquery first.")
    assert error(call=CallInfo(order_by=("ts + 1",))) == (
        "MATCH_CEQL: the table argument's ORDER BY must start with the time column, got ts + 1; "
        "write ORDER BY (ts) or pass time => 'ts'.")
    assert error(call=CallInfo(no_input=True)) == (
        "MATCH_CEQL needs its input: give a table argument, MATCH_CEQL(TABLE(t), query => '…'), "
        "or the query as a string literal whose FROM names tables or views.")
    clash = StructType([*STOCK.fields, StructField("variable", StringType())])
    assert error(schema=clash, rows="events") == (
        "MATCH_CEQL: output columns 'variable' and 'variable' clash (an input column has the "
        "name of another output column); rename the input column in a subquery.")


def test_call_info_round_trips() -> None:
    call = CallInfo(partition_by=("a",), order_by=("ts", "seq"), order_by_column="ts",
                    single_partition=True, table_name="t", streams=("x", "y"))
    assert CallInfo.from_json(call.to_json()) == call
    assert CallInfo.from_json(None) == CallInfo()


def test_an_option_that_is_no_string_literal_is_refused_by_each_table_function() -> None:
    from ceql.spark.udtf.mr_plan import plan_recognize
    from ceql.spark.udtf.spaseq_plan import plan_spaseq

    assert error(time_unit=3) == (  # type: ignore[arg-type]
        "MATCH_CEQL: option time_unit must be a string literal, got 3; write time_unit => '...'.")
    with pytest.raises(MatchCeqlError, match=r"^MATCH_RECOGNIZE_TABLE: option body must be a "
                       r"string literal, got 1; write body => '\.\.\.'\.$"):
        plan_recognize(STOCK, {"body": 1}, CallInfo())
    with pytest.raises(MatchCeqlError, match=r"^MATCH_SPASEQ: option query must be a string "
                       r"literal, got True; write query => '\.\.\.'\.$"):
        plan_spaseq(StructType([]), {"query": True}, CallInfo())
