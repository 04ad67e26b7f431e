"""What MATCH_CEQL says from Spark's Python workers, once per query (issue 27, items 2 and 5):
rows of equal time that nothing orders, and ``analyze``'s compile-time warnings, which
``ceql.spark.match``/``run`` issue in the caller's process instead."""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType
from pyspark.sql.udtf import AnalyzeArgument

import ceql
import ceql.spark
from ceql.spark.notices import Notices, key_of, notice_line
from ceql.spark.session import quiet
from ceql.spark.udtf.call import CallInfo
from ceql.spark.udtf.ceql_plan import plan_match
from ceql.spark.udtf.match_ceql import MatchCeql
from ceql.spark.udtf.runner import MatchRunner

pytestmark = pytest.mark.spark

SCHEMA = StructType([StructField("seq", LongType()), StructField("type", StringType()),
                     StructField("k", StringType()), StructField("ts", DoubleType())])
NOTICE = re.compile(r"^ceql: (\w+) \[[0-9a-f]{16}\]: (.*)$", re.M)


def said(text: str) -> list[tuple[str, str]]:
    """The notices a worker wrote in ``text`` (its standard error)."""
    return [(m[1], m[2]) for m in NOTICE.finditer(text)]


def batch(rows: list[tuple[int, str, str, float]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(
        [dict(zip(("seq", "type", "k", "ts"), r, strict=True)) for r in rows],
        schema=pa.schema([("seq", pa.int64()), ("type", pa.string()), ("k", pa.string()),
                          ("ts", pa.float64())]))


def feed(query: str, batches: list[list[tuple[int, str, str, float]]],
         call: CallInfo | None = None, **options: str) -> None:
    runner = MatchRunner(plan_match(SCHEMA, {"query": query, **options}, call or CallInfo()))
    for rows in batches:
        list(runner.feed(batch(rows)))
    list(runner.close())


# ------------------------------------------------------------------ a task's rows, no Spark

def test_equal_times_without_tie_break_are_said_once_naming_the_column(
        capsys: pytest.CaptureFixture[str]) -> None:
    q = "SELECT * FROM S WHERE A ; B WITHIN 5 SECONDS -- said once"
    rows = [(1, "A", "x", 1.0), (2, "B", "x", 1.0), (3, "A", "x", 2.0)]
    feed(q, [rows])
    feed(q, [rows])  # another partition, or task, of the query in this worker
    (notice,) = said(capsys.readouterr().err)
    assert notice[0] == "TieOrderWarning"
    assert "same time (ts = 1.0)" in notice[1]
    assert "tie_break => 'seq'" in notice[1], notice
    assert "telling two such rows apart: seq, type." in notice[1], notice


def test_a_tie_break_that_orders_them_says_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [(1, "A", "x", 1.0), (2, "B", "x", 1.0), (3, "A", "x", 2.0)]
    feed("SELECT * FROM S WHERE A ; B WITHIN 5 SECONDS -- ordered", [rows], tie_break="seq")
    feed("SELECT * FROM S WHERE A ; B WITHIN 5 SECONDS -- ordered by call",
         [rows], CallInfo(order_by=("ts", "`seq`"), order_by_column="ts"))
    assert said(capsys.readouterr().err) == []


def test_tie_break_values_that_tie_too_are_said(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [(1, "A", "x", 1.0), (2, "B", "x", 1.0)]
    feed("SELECT * FROM S WHERE A ; B WITHIN 5 SECONDS -- k ties", [rows], tie_break="k")
    (notice,) = said(capsys.readouterr().err)
    assert "same time and k (ts = 1.0)" in notice[1]
    assert "tie_break => 'k, seq'" in notice[1], notice


def test_ties_across_batches_are_found_and_identical_rows_are_not_ties(
        capsys: pytest.CaptureFixture[str]) -> None:
    same = [(1, "A", "x", 1.0), (1, "A", "x", 1.0), (2, "B", "x", 2.0)]
    feed("SELECT * FROM S WHERE A ; B WITHIN 5 SECONDS -- identical", [same])
    assert said(capsys.readouterr().err) == []
    keys = [(1, "A", "x", 1.0), (2, "A", "y", 1.0), (3, "B", "x", 2.0)]
    feed("SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 5 SECONDS -- one task",
         [keys], CallInfo(single_partition=True))
    assert said(capsys.readouterr().err) == []  # the engine orders rows of two keys
    feed("SELECT * FROM S WHERE A ; B WITHIN 5 SECONDS -- across",
         [[(1, "A", "x", 1.0)], [(2, "B", "x", 1.0)]])
    assert [n[0] for n in said(capsys.readouterr().err)] == ["TieOrderWarning"]


def test_the_driver_prints_each_notice_once_without_its_key() -> None:
    notices = Notices()
    key = key_of("q", "TieOrderWarning")
    line = notice_line(key, "TieOrderWarning", "two rows\nof one time")
    assert notices.line(line) == "ceql: TieOrderWarning: two rows of one time\n"
    assert notices.line(line) is None
    assert notices.line("other\n") == "other\n"
    assert notices.passed() == [("TieOrderWarning", "two rows of one time")]


# ------------------------------------------------------------------ analyze

def _analyze(query: str, **named: str) -> Any:
    table = AnalyzeArgument(dataType=SCHEMA, value=None, isTable=True,
                            isConstantExpression=False)
    args = {k: AnalyzeArgument(dataType=StringType(), value=v, isTable=False,
                               isConstantExpression=True) for k, v in named.items()}
    return MatchCeql.analyze(table, query=args.pop("query", None) or AnalyzeArgument(
        dataType=StringType(), value=query, isTable=False, isConstantExpression=True), **args)


LIKE = "SELECT * FROM S WHERE A ; B FILTER A[k LIKE 'x%'] PARTITION BY [k]"


def test_analyze_says_its_warnings_as_notices_not_as_a_workers_warning(
        capsys: pytest.CaptureFixture[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning printed by the worker would raise here
        _analyze(LIKE)
    assert [n[0] for n in said(capsys.readouterr().err)] == ["LikePatternWarning"]


def test_analyze_is_silent_after_match_or_run_warned(capsys: pytest.CaptureFixture[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _analyze(LIKE + " -- warned", _warned="1")
    assert said(capsys.readouterr().err) == []


# ------------------------------------------------------------------ through the session

def _wait_for(found: Callable[[], bool], seconds: float = 30) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if found():
            return True
        time.sleep(0.2)
    return found()


def _notices(marker: str) -> list[tuple[str, str]]:
    return [n for n in quiet.NOTICES.passed() if marker in n[1]]


@pytest.fixture(scope="module")
def tied(spark: Any) -> Any:
    """Keys t0…t7, each with a SELL and a BUY at one second: four tasks see ties."""
    rows = [(2 * i + j, kind, f"t{i}", float(i)) for i in range(8)
            for j, kind in enumerate(("SELL", "BUY"))]
    df = spark.createDataFrame(rows, "seq long, type string, tkey string, ts double")
    df.createOrReplaceTempView("tied")
    return df


def test_match_ceql_says_equal_times_once_per_query(spark: Any, tied: Any) -> None:
    spark.sql("SELECT * FROM MATCH_CEQL(TABLE(tied), query => 'SELECT * FROM tied WHERE SELL "
              "; BUY PARTITION BY [tkey] WITHIN 9 SECONDS')").collect()
    assert _wait_for(lambda: bool(_notices("in partition {'tkey': 't")))
    time.sleep(1)  # every task's worker has said it: the console has it once
    (notice,) = _notices("in partition {'tkey': 't")
    assert notice[0] == "TieOrderWarning"
    assert "tie_break => 'seq'" in notice[1]


def test_with_tie_break_match_ceql_says_nothing(spark: Any, tied: Any) -> None:
    tied.withColumnRenamed("tkey", "tb").createOrReplaceTempView("tied_b")
    spark.sql("SELECT * FROM MATCH_CEQL(TABLE(tied_b), query => 'SELECT * FROM tied_b WHERE "
              "SELL ; BUY PARTITION BY [tb] WITHIN 8 SECONDS', tie_break => 'seq')").collect()
    # a later query that ties: its notice comes after any of the first one's
    ceql.spark.match(tied.withColumnRenamed("tkey", "tkey2"),
                     "SELECT * FROM tied WHERE BUY ; SELL PARTITION BY [tkey2] WITHIN 8 SECONDS"
                     ).collect()
    assert _wait_for(lambda: bool(_notices("{'tkey2': 't")))
    assert _notices("{'tb': 't") == []


def test_a_like_warning_from_spark_sql_is_said_once(spark: Any, tied: Any) -> None:
    q = ("SELECT * FROM tied WHERE SELL AS s ; BUY FILTER s[tkey LIKE ''t1%''] "
         "PARTITION BY [tkey] WITHIN 7 SECONDS")
    for _ in range(2):
        spark.sql(f"SELECT * FROM MATCH_CEQL(TABLE(tied), query => '{q}', tie_break => 'seq')"
                  ).collect()
    assert _wait_for(lambda: bool(_notices("LIKE 't1%'")))
    time.sleep(1)
    assert [n[0] for n in _notices("LIKE 't1%'")] == ["LikePatternWarning"]


def test_a_like_warning_of_match_is_caught_in_the_callers_process(spark: Any, tied: Any) -> None:
    q = ("SELECT * FROM tied WHERE SELL AS s ; BUY FILTER s[tkey LIKE 't2%'] "
         "PARTITION BY [tkey] WITHIN 7 SECONDS")
    with pytest.warns(ceql.LikePatternWarning) as caught:
        ceql.spark.match(tied, q, tie_break="seq").collect()
    assert [w.category for w in caught] == [ceql.LikePatternWarning]
    assert {w.filename for w in caught} == {__file__}
    # and the worker that ran analyze did not say it again: a later notice is the next one
    ceql.spark.match(tied.withColumnRenamed("tkey", "tkey3"),
                     "SELECT * FROM tied WHERE BUY ; SELL PARTITION BY [tkey3] WITHIN 8 SECONDS"
                     ).collect()
    assert _wait_for(lambda: bool(_notices("{'tkey3': 't")))
    assert _notices("LIKE 't2%'") == []


# ------------------------------------------------------------------ the worker daemon

def test_a_worker_whose_reader_went_away_ends_quietly(capfd: pytest.CaptureFixture[str]) -> None:
    from ceql.spark.session.daemon import quiet_worker

    def closed(sock: Any, authenticated: bool) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def done(sock: Any, authenticated: bool) -> int:
        return 0

    assert quiet_worker(closed)(None, True) == 1  # type: ignore[arg-type]
    assert quiet_worker(done)(None, True) == 0  # type: ignore[arg-type]
    assert capfd.readouterr().err == ""

    def broken(sock: Any, authenticated: bool) -> int:
        raise ValueError("not the socket")

    with pytest.raises(ValueError):
        quiet_worker(broken)(None, True)  # type: ignore[arg-type]


# ------------------------------------------------------------------ a stream's key

@pytest.mark.parametrize("tie_break", [(), ("seq",)])
def test_a_streams_equal_times_are_said_unless_tie_break_orders_them(
        capsys: pytest.CaptureFixture[str], tie_break: tuple[str, ...]) -> None:
    """A stream's key releases rows of equal time as they arrived: the same ambiguity."""
    from ceql.spark.stream.keystate import TIME_US, KeyState, stream_plan

    options = {"query": "SELECT * FROM S WHERE A ; B WITHIN 9 SECONDS -- a stream",
               "time": "ts", **({"tie_break": "seq"} if tie_break else {})}
    plan = stream_plan(plan_match(SCHEMA, options, CallInfo()), "ALL", timestamp=False,
                       tie_break=tie_break, delay_ms=1000)
    ks = KeyState()
    rows = [{"seq": s, "type": t, "k": "x", "ts": ts, TIME_US: int(ts * 10**6)}
            for s, t, ts in ((1, "A", 1.0), (2, "B", 1.0), (3, "A", 2.0))]
    ks.accept(plan, pa.RecordBatch.from_pylist(rows), 0)
    ks.saw(10 * 10**6)
    list(ks.release(plan, 0))
    notices = said(capsys.readouterr().err)
    assert [n[0] for n in notices] == ([] if tie_break else ["TieOrderWarning"])
