"""MATCH_CEQL's output built from arrays (issue 31, columnar output): the chain engines give
their matches as arrays (:class:`ceql.runtime.match_arrays.MatchBlock`) and the runner builds
the output rows from them without a Python object per match; every other engine gives
:class:`ceql.Match` objects, whose arrays the runner gathers. Either way the rows must be what
the matches say: here they are compared, row by row, with rows built from the engine's
:class:`ceql.Match` objects by the rules MATCH_CEQL documents (ids by
:func:`ceql.spark.match_ids`, the interval's times, each variable's events in time order, and
with ``rows => 'events'`` the variable an event is shown under)."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

import ceql
from ceql.runtime.match_arrays import (
    MatchBlock,
    arrays_of,
    concat_arrays,
    cut_arrays,
    flat_positions,
)
from ceql.spark import match_ids
from ceql.spark.udtf import runner as runner_module
from ceql.spark.udtf.batching import BatchLimits
from ceql.spark.udtf.call import CallInfo
from ceql.spark.udtf.ceql_plan import plan_match
from ceql.spark.udtf.runner import MatchRunner
from strategies import PROFILE

pytestmark = pytest.mark.spark

SCHEMA = StructType([StructField("seq", LongType()), StructField("type", StringType()),
                     StructField("k", StringType()), StructField("v", DoubleType()),
                     StructField("ts", LongType())])
ARROW = pa.schema([("seq", pa.int64()), ("type", pa.string()), ("k", pa.string()),
                   ("v", pa.float64()), ("ts", pa.int64())])

#: query → the engine it runs on (checked: a query that moved engine tests nothing here)
QUERIES = {
    "SELECT * FROM S WHERE A AS a ; B AS b FILTER b[v > a.v] WITHIN 3 SECONDS": "join",
    "SELECT * FROM S WHERE A AS a : B AS b FILTER b[v >= a.v] PARTITION BY [k]": "dense",
    "SELECT b FROM S WHERE A AS a ; B AS b ; C FILTER b[v >= a.v] PARTITION BY [k] "
    "WITHIN 4 SECONDS": "join",
    "SELECT * FROM S WHERE A ; B ; A WITHIN 3 SECONDS CONSUME BY ANY": "join",
    "SELECT * FROM S WHERE (A OR B) AS x ; A AS y PARTITION BY [k] WITHIN 2 SECONDS "
    "CONSUME BY ANY": "join",
    "SELECT * FROM S WHERE (A OR B) ; A AS y PARTITION BY [k] WITHIN 2 SECONDS "
    "CONSUME BY PARTITION": "join",
    "SELECT * FROM S WHERE A : B : A PARTITION BY [k]": "dense",
    "SELECT * FROM S WHERE A AS a ; B+ AS b ; C WITHIN 4 SECONDS": "core",
}


def test_each_query_runs_on_the_engine_it_is_here_for() -> None:
    for query, base in QUERIES.items():
        assert ceql.compile(query).engine().base == base, query


def _table(steps: list[tuple[int, str, int, int]]) -> pa.Table:
    times = np.cumsum([d for d, *_ in steps]).tolist()
    return pa.Table.from_pylist(
        [{"seq": i, "type": t, "k": "xy"[k], "v": float(v), "ts": ts}
         for i, ((_, t, k, v), ts) in enumerate(zip(steps, times, strict=True))], schema=ARROW)


def _runner_rows(query: str, table: pa.Table, rows: str, cuts: list[int], limit: int
                 ) -> list[dict[str, Any]]:
    spec = plan_match(SCHEMA, {"query": query, "time": "ts", "time_unit": "s",
                               "tie_break": "seq", "rows": rows}, CallInfo())
    runner = MatchRunner(spec)
    limits = BatchLimits(rows=limit)
    out: list[dict[str, Any]] = []
    bounds = sorted({0, *(c for c in cuts if 0 < c < table.num_rows), table.num_rows})
    for a, b in pairwise(bounds):
        for rb in table.slice(a, b - a).to_batches():
            for got in runner.feed(rb, limits):
                assert got.num_rows <= limit
                out += got.to_pylist()
    for got in runner.close(limits):
        out += got.to_pylist()
    return out


def _expected(query: str, table: pa.Table, rows: str) -> list[dict[str, Any]]:
    """The output rows, built from the engine's Match objects."""
    q = ceql.compile(query)
    ms = q.evaluator(time="ts").feed(table)
    records = table.to_pylist()
    order = {v: i for i, v in enumerate(q.variables)}
    out = []
    for m in ms:
        (mid,) = match_ids(m.partition, [m], table)
        head = {"match_id": mid, "match_start": records[m.start_position]["ts"],
                "match_end": records[m.end_position]["ts"]}
        if rows == "matches":
            row = dict(head)
            if q.partition_by:
                row.update({c: v for c, v in zip(q.partition_by, m.partition, strict=True)})
            for var in q.variables:
                row[var] = [records[p] for p in m.variables.get(var, ())]
            out.append(row)
            continue
        by_pos: dict[int, list[str]] = {}
        for var, ps in m.variables.items():
            for p in ps:
                by_pos.setdefault(p, []).append(var)
        for p in m.positions:
            labels = sorted(by_pos.get(p, []), key=lambda v: (order.get(v, len(order)), v))
            kind = records[p]["type"]
            shown = next((v for v in labels if v != kind), labels[0] if labels else None)
            out.append({**head, "variable": shown, **records[p]})
    return out


def _key(row: dict[str, Any]) -> str:
    return repr(sorted(row.items()))


@PROFILE
@given(query=st.sampled_from(sorted(QUERIES)),
       rows=st.sampled_from(["matches", "events"]),
       steps=st.lists(st.tuples(st.integers(0, 1), st.sampled_from("AAABBBCX"),
                                st.integers(0, 1), st.integers(0, 3)), min_size=4, max_size=30),
       cuts=st.lists(st.integers(1, 29), max_size=4),
       limit=st.integers(1, 5), positions=st.integers(1, 8))
def test_output_rows_equal_those_the_match_objects_give(
        query: str, rows: str, steps: list[tuple[int, str, int, int]], cuts: list[int],
        limit: int, positions: int) -> None:
    """In any cut of the rows, with output batches of a few rows and chunks of a few events
    (so matches are split and merged across the engine's chunks)."""
    table = _table(steps)
    saved = runner_module.CHUNK_POSITIONS
    runner_module.CHUNK_POSITIONS = positions
    try:
        got = _runner_rows(query, table, rows, cuts, limit)
    finally:
        runner_module.CHUNK_POSITIONS = saved
    want = _expected(query, table, rows)
    event(f"{QUERIES[query]}: {'matches' if want else 'none'}"
          f"{', cut in batches' if len(want) > limit else ''}")
    assert Counter(map(_key, got)) == Counter(map(_key, want))


# ------------------------------------------------------------------ the arrays themselves

def _matches(query: str, table: pa.Table) -> list[ceql.Match]:
    return ceql.compile(query).evaluator(time="ts").feed(table)


@PROFILE
@given(query=st.sampled_from(sorted(QUERIES)),
       steps=st.lists(st.tuples(st.integers(0, 1), st.sampled_from("AAABBBC"),
                                st.integers(0, 1), st.integers(0, 3)), min_size=4, max_size=30),
       at=st.lists(st.integers(0, 60), max_size=3))
def test_arrays_cut_and_joined_are_the_matches(query: str, steps: list[tuple[int, str, int,
                                                                               int]],
                                               at: list[int]) -> None:
    """A block's arrays are its matches' (as objects), and cutting them into pieces and
    joining the pieces again gives the same matches in the same order."""
    table = _table(steps)
    ev = ceql.compile(query).evaluator(time="ts")
    chunks = list(ev.feed_chunks(table))
    event(f"{QUERIES[query]}: {min(len(chunks), 2)} chunk(s), {min(len(at), 2)} cut(s)")
    ms = [m for c in chunks for m in c]
    assert ms == _matches(query, table)
    whole = concat_arrays([arrays_of(c) for c in chunks]) if chunks else arrays_of([])
    listed = arrays_of(ms)
    n = len(ms)
    bounds = sorted({0, *(min(a, n) for a in at), n})
    pieces = [cut_arrays(whole, a, b) for a, b in pairwise(bounds) if b > a]
    again = concat_arrays(pieces) if pieces else whole
    for arrays in (whole, again):
        assert arrays.starts.tolist() == listed.starts.tolist() == [m.start_position
                                                                     for m in ms]
        assert arrays.ends.tolist() == [m.end_position for m in ms]
        flat, offsets = flat_positions(arrays)
        assert [tuple(flat[a:b].tolist()) for a, b in pairwise(offsets.tolist())] == [
            m.positions for m in ms]
        labels = [None] * n
        for shape in arrays.shapes:
            for i in shape.members.tolist():
                labels[i] = shape.labels
        assert labels == [m.labels for m in ms]


def test_a_block_builds_its_objects_once_and_only_when_read() -> None:
    table = _table([(1, "A", 0, 1), (0, "B", 0, 2), (1, "C", 0, 3), (1, "B", 0, 2)])
    query = next(q for q, e in QUERIES.items() if e == "join")
    blocks = [c for c in ceql.compile(query).evaluator(time="ts").feed_chunks(table)
              if isinstance(c, MatchBlock)]
    assert blocks, "the join engine gives its matches as arrays"
    block = blocks[0]
    assert len(block) == len(block.arrays)
    first = list(block)
    assert list(block) == first and block[0] is first[0]  # built once
