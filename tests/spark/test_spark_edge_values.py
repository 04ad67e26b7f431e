"""Edge values through Spark (issue 28, item 6): NaN partition keys are one key, as Spark
groups them and as the engine's row and Arrow paths do; an implied key's NaN fails."""

from __future__ import annotations

from typing import Any

import ceql.spark as cs

NAN = float("nan")
ROWS = [(1.0, "A", NAN), (2.0, "A", 1.0), (3.0, "B", NAN), (4.0, "B", 1.0), (5.0, "B", NAN)]


def test_nan_partition_keys_are_one_key(spark: Any) -> None:
    df = spark.createDataFrame(ROWS, "t double, type string, k double")
    got = cs.match(df, "SELECT * FROM t WHERE A ; B PARTITION BY [k] WITHIN 10 SECONDS",
                   time="t").select("match_start", "match_end").collect()
    assert sorted((r[0], r[1]) for r in got) == [(1.0, 3.0), (1.0, 5.0), (2.0, 4.0)]


def test_an_implied_key_of_nan_fails_its_equality(spark: Any) -> None:
    df = spark.createDataFrame(ROWS, "t double, type string, k double")
    got = cs.match(df, "SELECT * FROM t WHERE A ; B FILTER B[k = A.k] WITHIN 10 SECONDS",
                   time="t").select("match_start", "match_end").collect()
    assert sorted((r[0], r[1]) for r in got) == [(2.0, 4.0)]
