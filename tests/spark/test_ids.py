"""``match_id`` is what a match is — its partition key, its events' rows with their variables,
its interval's ends — so that nothing counts matches (issue 28 item 2): the same however the
rows are cut into batches or which rows no variable uses are dropped, distinct for matches
that differ only in events of equal time, and the runner's ids equal
:func:`ceql.spark.match_ids`."""

from __future__ import annotations

import datetime as dt
from itertools import pairwise
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql.types import LongType, StringType, StructField, StructType

import ceql
from ceql.spark import match_ids
from ceql.spark.udtf.call import CallInfo
from ceql.spark.udtf.ceql_plan import plan_match
from ceql.spark.udtf.ids import row_hashes
from ceql.spark.udtf.runner import MatchRunner
from strategies import PROFILE

pytestmark = pytest.mark.spark

SCHEMA = StructType([StructField("seq", LongType()), StructField("type", StringType()),
                     StructField("k", StringType()), StructField("ts", LongType())])
ARROW = pa.schema([("seq", pa.int64()), ("type", pa.string()), ("k", pa.string()),
                   ("ts", pa.int64())])


def _runner_ids(query: str, rows: list[dict[str, Any]], cuts: list[int]) -> list[int]:
    spec = plan_match(SCHEMA, {"query": query, "time": "ts", "tie_break": "seq"}, CallInfo())
    runner = MatchRunner(spec)
    table = pa.Table.from_pylist(rows, schema=ARROW)
    out: list[int] = []
    bounds = sorted({0, *(c for c in cuts if 0 < c < len(rows)), len(rows)})
    for a, b in pairwise(bounds):
        for rb in table.slice(a, b - a).to_batches():
            for got in runner.feed(rb):  # bounded output batches
                out += got.column("match_id").to_pylist()
    for got in runner.close():
        out += got.column("match_id").to_pylist()
    return out


QUERIES = ("SELECT * FROM S WHERE S AS s ; B AS b WITHIN 4 SECONDS",
           "SELECT * FROM S WHERE S AS s ; B+ AS b ; C WITHIN 5 SECONDS",
           "SELECT * FROM S WHERE S AS s ; NOT C ; B AS b WITHIN 3 SECONDS",
           "SELECT * FROM S WHERE (S OR B)+ AS x WITHIN 2 SECONDS")


@PROFILE
@given(query=st.sampled_from(QUERIES),
       steps=st.lists(st.tuples(st.integers(0, 1), st.sampled_from("SBCX")), min_size=1,
                      max_size=14),
       cuts=st.lists(st.integers(1, 13), max_size=4))
def test_ids_are_distinct_and_do_not_depend_on_cuts_or_unused_rows(
        query: str, steps: list[tuple[int, str]], cuts: list[int]) -> None:
    """Rows with many equal times, fed in any cut, with and without the rows (type X) no
    variable uses: the same ids, one per match, and :func:`match_ids`'s."""
    times = np.cumsum([d for d, _ in steps]).tolist()
    rows = [{"seq": i, "type": t, "k": "x", "ts": ts}
            for i, ((_, t), ts) in enumerate(zip(steps, times, strict=True))]
    ids = _runner_ids(query, rows, cuts)
    assert len(set(ids)) == len(ids)
    used = [r for r in rows if r["type"] != "X"]
    assert sorted(_runner_ids(query, used, [])) == sorted(ids)
    ms = list(ceql.compile(query).run(rows, time="ts"))
    assert sorted(match_ids((), ms, rows)) == sorted(ids)
    assert set(match_ids(("x",), ms, rows)).isdisjoint(ids) or not ids  # the key counts


def test_matches_differing_only_in_tied_events_get_distinct_ids() -> None:
    query = "SELECT * FROM S WHERE S AS s ; B AS b WITHIN 10 SECONDS"
    rows = [{"seq": i, "type": t, "k": "x", "ts": ts}
            for i, (t, ts) in enumerate([("S", 1), ("S", 1), ("B", 2), ("B", 2)])]
    ids = _runner_ids(query, rows, [1])
    assert len(ids) == 4 and len(set(ids)) == 4


def test_row_hashes_read_values_not_types_or_column_order() -> None:
    t = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    a = pa.table({"x": pa.array([1, 2], pa.int32()), "s": ["ab", None], "t": [t, t]})
    b = pa.table({"t": pa.array([t, t], pa.timestamp("us", tz="UTC")),
                  "x": pa.array([1.0, 2.0]), "s": pa.array(["ab", None], pa.large_string())})
    c = pa.table({"t": [t, t], "x": [1, 2]})  # a column left out is a NULL one
    assert row_hashes(a).tolist() == row_hashes(b).tolist()
    assert row_hashes(a).tolist()[1] == row_hashes(c).tolist()[1]
    assert row_hashes(a).tolist()[0] != row_hashes(c).tolist()[0]
    assert len(set(row_hashes(pa.table({"s": ["ab", "ba", "", "a", None]})).tolist())) == 5
    # a slice reads its own values (Arrow offsets), -0.0 is 0.0
    assert row_hashes(pa.table({"s": ["zz", "ab"]}).slice(1)).tolist() == \
        row_hashes(pa.table({"s": ["ab"]})).tolist()
    assert row_hashes(pa.table({"x": [-0.0]})).tolist() == row_hashes(pa.table({"x": [0]})).tolist()
