"""Conjunction and negation through Spark: MATCH_CEQL (table argument and inline syntax) and the
DataFrame API give the engine's matches, and the row prefilter lets every negated event's row
through (a row that forbids a match must reach the engine)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from spark_helpers import engine, spark_rows, sql_string
from test_correlation import SCHEMA, TH_ROWS

import ceql.spark as cs

pytestmark = pytest.mark.spark

@pytest.fixture(scope="module")
def th(spark: Any) -> Any:
    df = spark.createDataFrame(TH_ROWS, SCHEMA)
    df.createOrReplaceTempView("th_cn")
    yield df
    spark.catalog.dropTempView("th_cn")


# SEMANTICS.md's worked examples: the positions each must give
QUERIES = {
    "and": ("SELECT * FROM th_cn WHERE (T AS x AND H AS y) FILTER x[id = 1] AND y[id = 1] "
            "WITHIN 2 EVENTS", [(3, 4), (6, 7)]),
    "not named": ("SELECT * FROM th_cn WHERE T AS x ; NOT H AS n ; H AS y FILTER x[id = 0] AND "
                  "y[id = 0] AND n[id = 0]", [(1, 2), (5, 8)]),
    "not unnamed": ("SELECT * FROM th_cn WHERE T AS x ; NOT H ; H AS y FILTER x[id = 0] AND "
                    "y[id = 0]", [(1, 2)]),
}


@pytest.mark.parametrize("name", QUERIES)
def test_and_and_not_give_the_engines_matches(spark: Any, th: Any, name: str) -> None:
    q, positions = QUERIES[name]
    variables = ("x", "y")
    by_sql = spark.sql(f"SELECT * FROM MATCH_CEQL(TABLE(th_cn), query => {sql_string(q)}, "
                       "time => 'ts')").collect()
    by_api = cs.match(th, q, time="ts").collect()
    want = engine(q, TH_ROWS)
    assert sorted(tuple(sorted(p for _, ps in b for p in ps)) for _, _, b in want) == positions
    assert spark_rows(by_sql, variables) == want
    assert spark_rows(by_api, variables) == want


def test_the_inline_syntax_takes_and_and_not(spark: Any, th: Any) -> None:
    rows = spark.sql("""SELECT match_start, match_end FROM MATCH_CEQL(
        SELECT * FROM th_cn WHERE (T AS x ; NOT H AS n ; H AS y) AND T AS z
        FILTER x[id = 0] AND y[id = 0] AND n[id = 0] AND z[id = 2]
        WITHIN 10 SECONDS, time => 'ts')""").collect()
    assert sorted((r.match_start, r.match_end) for r in rows) == [(0.0, 2.0), (0.0, 8.0)]


def test_the_prefilter_keeps_the_rows_of_negated_events(spark: Any) -> None:
    rnd = random.Random(11)
    rows = [{"seq": i, "type": rnd.choice("ABCD"), "id": rnd.randrange(3),
             "value": rnd.randrange(10), "ts": float(i)} for i in range(300)]
    df = spark.createDataFrame(rows, SCHEMA)
    # only A, C and B-with-value-above-5 rows matter; dropping B rows would invent matches
    q = ("SELECT * FROM S WHERE A AS a ; NOT B AS n ; C AS c FILTER n[value > 5] AND "
         "c[value < 3] WITHIN 6 SECONDS")
    got = spark_rows(cs.match(df, q, time="ts").collect(), ("a", "c"))
    assert got == engine(q, rows)
    assert got
    # and the negation forbids something here: without it there are more matches
    assert len(engine(q.replace("NOT B AS n ; ", "").replace("n[value > 5] AND ", ""),
                      rows)) > len(got)


EDGES = [
    "SELECT * FROM S WHERE A AS a ; C AS c ; NOT B AS n FILTER n[value > 5] "
    "PARTITION BY [id] WITHIN 6 SECONDS",
    "SELECT * FROM S WHERE A AS a ; C AS c ; NOT B WITHIN 5 EVENTS",
    "SELECT NEXT * FROM S WHERE NOT (B OR D) ; A AS a ; C AS c PARTITION BY [id] "
    "WITHIN 4 SECONDS",
]


@pytest.mark.parametrize("q", EDGES)
def test_leading_and_trailing_not_give_the_engines_matches(spark: Any, q: str) -> None:
    """Matches that wait for a trailing NOT's window come out when the partition ends (the
    UDTF's terminate), in SQL and in the DataFrame API."""
    rnd = random.Random(5)
    rows = [{"seq": i, "type": rnd.choice("ABCD"), "id": rnd.randrange(3),
             "value": rnd.randrange(10), "ts": float(i)} for i in range(200)]
    df = spark.createDataFrame(rows, SCHEMA)
    df.createOrReplaceTempView("edges_cn")
    try:
        sql = q.replace("FROM S", "FROM edges_cn")
        by_sql = spark.sql(f"SELECT * FROM MATCH_CEQL(TABLE(edges_cn), query => "
                           f"{sql_string(sql)}, time => 'ts')").collect()
    finally:
        spark.catalog.dropTempView("edges_cn")
    by_api = cs.match(df, q, time="ts").collect()
    part = ("id",) if "PARTITION BY" in q else ()
    want = engine(q, rows, partition=part)
    assert want
    # the last events' matches of a trailing NOT only come at the end: they must not be lost
    assert max(e for e, _, _ in want) >= 190 or "NOT B ;" not in q
    assert spark_rows(by_sql, ("a", "c"), partition=part) == want
    assert spark_rows(by_api, ("a", "c"), partition=part) == want
