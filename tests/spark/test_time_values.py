"""Times through MATCH_CEQL (issue 27): Spark TIMESTAMPs subtract to seconds as datetimes do in
the engine, shift by seconds or INTERVALs, compare with ISO 8601 text; a comparison that cannot
mean anything, a misspelt column or numbers held as text are said on the driver."""

from __future__ import annotations

import datetime as dt
import warnings
from typing import Any

import pytest
from pyspark.errors import AnalysisException
from spark_helpers import sql_string

import ceql
import ceql.spark as cs
from ceql.spark import MatchCeqlError

pytestmark = pytest.mark.spark

T0 = dt.datetime(2020, 1, 1)
ROWS = [("A", T0, "10", 1.0), ("B", T0 + dt.timedelta(seconds=100), "9", 2.0),
        ("A", T0 + dt.timedelta(seconds=400), "7", 3.0),
        ("B", T0 + dt.timedelta(seconds=430), "30", 4.0)]


@pytest.fixture(scope="module")
def clicks(spark: Any) -> Any:
    df = spark.createDataFrame(ROWS, "type string, ts timestamp, amount string, n double")
    df.createOrReplaceTempView("tclicks")
    yield df
    spark.catalog.dropTempView("tclicks")


def spans(spark: Any, query: str) -> list[tuple[float, float]]:
    rows = spark.sql(f"SELECT match_start, match_end FROM MATCH_CEQL(TABLE(tclicks), "
                     f"query => {sql_string(query)}, time => 'ts')").collect()
    return sorted(((r.match_start - T0).total_seconds(), (r.match_end - T0).total_seconds())
                  for r in rows)


@pytest.mark.parametrize(("cond", "want"), [
    ("b[ts - a.ts >= 60]", [(0, 100), (0, 430)]),
    ("b[ts - a.ts >= INTERVAL 1 MINUTE]", [(0, 100), (0, 430)]),
    ("b[ts - a.ts < INTERVAL '90' SECOND]", [(400, 430)]),
    ("b[ts > a.ts + 60]", [(0, 100), (0, 430)]),
    ("b[ts - INTERVAL 5 MINUTES > a.ts]", [(0, 430)]),
    ("[MAX(b.ts) - MIN(a.ts) > 120]", [(0, 430)]),
])
def test_timestamps_subtract_to_seconds(spark: Any, clicks: Any, cond: str,
                                        want: list[tuple[float, float]]) -> None:
    query = f"SELECT * FROM tclicks WHERE A AS a ; B AS b FILTER {cond}"
    assert spans(spark, query) == want
    assert sorted(((r.match_start - T0).total_seconds(), (r.match_end - T0).total_seconds())
                  for r in cs.match(clicks, query, time="ts").collect()) == want


def test_timestamps_compare_with_iso_text(spark: Any, clicks: Any) -> None:
    assert spans(spark, "SELECT * FROM tclicks WHERE A FILTER A[ts > '2020-01-01 00:05:00']") \
        == [(400, 400)]


def test_what_cannot_mean_anything_is_said_on_the_driver(spark: Any, clicks: Any) -> None:
    refused = (MatchCeqlError, AnalysisException)
    with pytest.raises(refused, match="ts is timestamp but 5 is number"):
        cs.match(clicks, "SELECT * FROM tclicks WHERE A FILTER A[ts > 5]", time="ts")
    with pytest.raises(refused, match=r"Unknown attribute 'ammount'.*did you mean 'amount'"):
        cs.match(clicks, "SELECT * FROM tclicks WHERE A FILTER A[ammount > '1']", time="ts")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        cs.match(clicks, "SELECT * FROM tclicks WHERE A AS a ; B AS b FILTER "
                         "b[amount < a.amount]", time="ts")
    assert [w for w in said if w.category is ceql.ValueTypeWarning
            and "compared as text" in str(w.message)]
