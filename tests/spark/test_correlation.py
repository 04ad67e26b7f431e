"""Conditions between events through Spark: every surface gives the engine's matches, an implied
partition key becomes the shuffle key, and the row prefilter still lets through every row a
condition between events may read."""

from __future__ import annotations

import random
from typing import Any

import pytest
from spark_helpers import engine, spark_rows, sql_string

import ceql.spark as cs

pytestmark = pytest.mark.spark

TH = [("T", 2, 25), ("T", 0, 45), ("H", 0, 20), ("H", 1, 25), ("T", 1, 40), ("T", 0, 42),
      ("T", 1, 25), ("H", 1, 70), ("H", 0, 18)]
TH_ROWS = [{"seq": i, "type": t, "id": k, "value": v, "ts": float(i)}
           for i, (t, k, v) in enumerate(TH)]
SCHEMA = "seq int, type string, id int, value int, ts double"


@pytest.fixture(scope="module")
def th(spark: Any) -> Any:
    df = spark.createDataFrame(TH_ROWS, SCHEMA)
    df.createOrReplaceTempView("th")
    yield df
    spark.catalog.dropTempView("th")


QUERIES = {
    "qualified": "SELECT * FROM th WHERE T AS x ; H AS y FILTER y[value < x.value]",
    "prev": "SELECT * FROM th WHERE (T AS x)+ FILTER x[value < PREV(value)] AND x[id = 0]",
    "aggregates": "SELECT * FROM th WHERE H AS h1 ; (T AS t)+ ; H AS h2 FILTER [AVG(t.value) > 33]"
                  " AND t[id = 1] AND h1[id = 1] AND h2[id = 1]",
    "max strategy": "SELECT MAX x FROM th WHERE (T AS x)+ ; H AS y FILTER x[value > y.value]",
}


@pytest.mark.parametrize("name", QUERIES)
def test_correlated_queries_give_the_engines_matches(spark: Any, th: Any, name: str) -> None:
    q = QUERIES[name]
    variables = tuple(cs.match(th, q, time="ts").columns[3:])
    by_sql = spark.sql(f"SELECT * FROM MATCH_CEQL(TABLE(th), query => {sql_string(q)}, "
                       "time => 'ts')").collect()
    by_api = cs.match(th, q, time="ts").collect()
    want = engine(q, TH_ROWS)
    assert want  # each query has matches here
    assert spark_rows(by_sql, variables) == want
    assert spark_rows(by_api, variables) == want


def test_the_inline_syntax_takes_every_new_construct(spark: Any, th: Any) -> None:
    rows = spark.sql("""SELECT match_start, match_end FROM MATCH_CEQL(
        SELECT * FROM th WHERE H AS h1 ; (T AS t)+ ; H AS h2
        FILTER [COUNT(t) >= 2] AND t[id = h1.id] AND h2[id = h1.id] AND t[value > PREV(value) - 100]
        WITHIN 10 SECONDS, time => 'ts')""").collect()
    assert sorted((r.match_start, r.match_end) for r in rows) == [(3.0, 7.0)]


def test_an_implied_partition_key_is_the_shuffle_key(spark: Any, th: Any) -> None:
    q = "SELECT * FROM th WHERE T AS x ; H AS y FILTER y[id = x.id]"
    df = spark.sql(f"SELECT * FROM MATCH_CEQL(TABLE(th), query => {sql_string(q)}, "
                   "time => 'ts')")
    assert df.columns[:2] == ["match_id", "id"]
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "hashpartitioning(id" in plan
    got = spark_rows(df.collect(), ("x", "y"), partition=("id",))
    assert sorted(dict(b)["x"] + dict(b)["y"] for _, _, b in got) == \
        [(1, 2), (1, 8), (4, 7), (5, 8), (6, 7)]
    assert got == engine(q, TH_ROWS, partition=("id",))


def test_the_prefilter_keeps_rows_only_a_condition_between_events_reads(spark: Any) -> None:
    rnd = random.Random(7)
    rows = [{"seq": i, "type": rnd.choice("ABC"), "id": rnd.randrange(3),
             "value": rnd.randrange(10), "ts": float(i)} for i in range(200)]
    df = spark.createDataFrame(rows, SCHEMA)
    # b's unary filter is pushed down; a's rows must all arrive for the comparison
    q = ("SELECT * FROM S WHERE A AS a ; B AS b FILTER b[value > 5] AND b[value > a.value] "
         "WITHIN 4 SECONDS")
    got = spark_rows(cs.match(df, q, time="ts").collect(), ("a", "b"))
    assert got == engine(q, rows)
    assert got
