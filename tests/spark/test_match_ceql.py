"""MATCH_CEQL on a real local Spark: every SQL spelling and the DataFrame API give the engine's
matches; partitions, time types, NULLs, output shapes and the errors a user sees."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.errors import AnalysisException, PythonException
from spark_helpers import engine, spark_rows, sql_string

import ceql
import ceql.spark as cs
from ceql.spark.conf import PARSER_ENABLED
from ceql.spark.dataframe import _call
from ceql.spark.session.local import register
from ceql.spark.udtf.call import CallInfo

pytestmark = pytest.mark.spark

BASE = dt.datetime(2024, 1, 1, 9, 0, 0)
STOCK = [("SELL", "MSFT", 101.0), ("SELL", "MSFT", 102.0), ("SELL", "INTL", 80.0),
         ("BUY", "INTL", 80.0), ("SELL", "AMZN", 1900.0), ("SELL", "INTL", 81.0),
         ("SELL", "AMZN", 1920.0)]
STOCK_ROWS = [{"seq": i, "type": t, "name": n, "price": p, "ts": BASE + dt.timedelta(seconds=i)}
              for i, (t, n, p) in enumerate(STOCK)]
PAPER = ("SELECT * FROM stock WHERE SELL AS msft; SELL AS intel; SELL AS amzn "
         "FILTER msft[name = 'MSFT'] AND msft[price > 100] AND intel[name = 'INTL'] "
         "AND amzn[name = 'AMZN'] AND amzn[price < 2000]")
PAPER_VARS = ("SELL", "amzn", "intel", "msft")
PAIRS = "SELECT a, b FROM stock WHERE SELL AS a ; SELL AS b WITHIN 10 SECONDS"
PAIRS_P = "SELECT a, b FROM stock WHERE SELL AS a ; SELL AS b PARTITION BY [name] WITHIN 10 SECONDS"


@pytest.fixture(scope="module")
def stock(spark: Any) -> Iterator[Any]:
    df = spark.createDataFrame(STOCK_ROWS, "seq int, type string, name string, price double, "
                                            "ts timestamp")
    df.createOrReplaceTempView("stock")
    yield df
    spark.catalog.dropTempView("stock")


# ---------------------------------------------------------------- the spellings agree

def test_paper_example_gives_the_six_complex_events(spark: Any, stock: Any) -> None:
    rows = spark.sql(f"SELECT * FROM MATCH_CEQL(TABLE(stock) WITH SINGLE PARTITION ORDER BY ts,"
                     f" query => {sql_string(PAPER)})").collect()
    got = spark_rows(rows, PAPER_VARS)
    assert got == engine(PAPER, STOCK_ROWS)
    assert sorted(dict(b)["msft"] + dict(b)["intel"] + dict(b)["amzn"] for _, _, b in got) == \
        sorted([(1, 2, 4), (0, 2, 4), (1, 2, 6), (0, 2, 6), (1, 5, 6), (0, 5, 6)])
    assert {r.match_end for r in rows} == {BASE + dt.timedelta(seconds=4),
                                           BASE + dt.timedelta(seconds=6)}


SPELLINGS = {
    "table partition/order": "SELECT * FROM MATCH_CEQL(TABLE(stock) PARTITION BY name ORDER BY "
                             f"ts, query => {sql_string(PAIRS)})",
    "query partition": f"SELECT * FROM MATCH_CEQL(TABLE(stock), query => {sql_string(PAIRS_P)})",
    "both agree": "SELECT * FROM MATCH_CEQL(TABLE(stock) PARTITION BY name ORDER BY (ts), "
                  f"query => {sql_string(PAIRS_P)})",
    "inline": "SELECT m.* FROM MATCH_CEQL( SELECT a, b FROM stock WHERE SELL AS a; SELL AS b "
              "PARTITION BY [name] WITHIN INTERVAL '10' SECOND ) AS m",
    "inline escaped": "SELECT * FROM MATCH_CEQL( SELECT a, b FROM stock WHERE SELL AS a \\; "
                      "SELL AS b PARTITION BY [name] WITHIN 10 SECONDS, time => 'ts' )",
    "string literal": f"SELECT * FROM MATCH_CEQL({sql_string(PAIRS_P)})",
    "double-quoted literal": f'SELECT * FROM MATCH_CEQL("{PAIRS_P}")',
}


@pytest.mark.parametrize("sql", SPELLINGS.values(), ids=SPELLINGS.keys())
def test_every_sql_spelling_gives_the_engines_matches(spark: Any, stock: Any, sql: str) -> None:
    df = spark.sql(sql)
    assert df.columns == ["match_id", "name", "match_start", "match_end", "a", "b"]
    got = spark_rows(df.collect(), ("a", "b"), partition=("name",))
    assert got == engine(PAIRS_P, STOCK_ROWS, partition=("name",))
    assert len(got) == 3


def test_dataframe_api_gives_the_same_rows(spark: Any, stock: Any) -> None:
    by_sql = spark.sql(SPELLINGS["query partition"]).collect()
    by_api = cs.match(stock, PAIRS, partition_by="name", time="ts").collect()
    assert spark_rows(by_api, ("a", "b"), partition=("name",)) == \
        spark_rows(by_sql, ("a", "b"), partition=("name",))
    ran = cs.run(spark, PAIRS_P).collect()
    assert spark_rows(ran, ("a", "b"), partition=("name",)) == \
        spark_rows(by_sql, ("a", "b"), partition=("name",))
    # without the shim (a session lacking the extension) the same UDTF is registered from Python
    plain_df = _call(stock, PAIRS, CallInfo(partition_by=("name",)), time="ts",
                     type_col="type", rows="matches", time_unit="s", jvm=False)
    plain = plain_df.collect()
    assert spark_rows(plain, ("a", "b"), partition=("name",)) == \
        spark_rows(by_sql, ("a", "b"), partition=("name",))
    # nothing applies the prefilter there, so its hand-off key is not left in the schema
    assert all(not f.metadata for f in plain_df.schema.fields)
    assert all(not f.metadata for f in spark.sql(SPELLINGS["query partition"]).schema.fields)


def test_run_reads_a_query_file(spark: Any, stock: Any, tmp_path: Any) -> None:
    path = tmp_path / "pairs.ceql"
    path.write_text(PAIRS_P + "\n")
    got = cs.run(spark, str(path), "stock").collect()
    assert spark_rows(got, ("a", "b"), partition=("name",)) == \
        engine(PAIRS_P, STOCK_ROWS, partition=("name",))


# ---------------------------------------------------------------- selection strategies

TH = [("T", 2, 25), ("T", 0, 45), ("H", 0, 20), ("H", 1, 25), ("T", 1, 40), ("T", 0, 42),
      ("T", 1, 25), ("H", 1, 70), ("H", 0, 18)]
TH_ROWS = [{"seq": i, "type": t, "id": k, "value": v, "ts": float(i)}
           for i, (t, k, v) in enumerate(TH)]
TH_EXPECTED = {"ALL": [(1, 2), (1, 8), (5, 8)], "STRICT": [(1, 2)], "NEXT": [(1, 2), (1, 8)],
               "LAST": [(1, 2), (5, 8)], "MAX": [(1, 2), (1, 8), (5, 8)]}


@pytest.mark.parametrize("strategy", TH_EXPECTED)
def test_selection_strategies_match_the_semantics(spark: Any, strategy: str) -> None:
    df = spark.createDataFrame(TH_ROWS, "seq int, type string, id int, value int, ts double")
    q = (f"SELECT {strategy} * FROM S WHERE (T AS x ; H AS y) FILTER x[value > 40] AND "
         "y[value < 25] AND x[id = 0] AND y[id = 0]")
    rows = cs.match(df, q).collect()
    got = spark_rows(rows, ("x", "y"))
    assert got == engine(q, TH_ROWS)
    assert sorted(dict(b)["x"] + dict(b)["y"] for _, _, b in got) == TH_EXPECTED[strategy]


# ---------------------------------------------------------------- partitions

def _random_rows(n: int, names: int, seed: int) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    rows = []
    t = BASE
    for i in range(n):
        t += dt.timedelta(seconds=rnd.choice([0, 1, 1, 2]))
        name = f"n{min(rnd.randrange(names), rnd.randrange(names))}"  # skewed sizes
        rows.append({"seq": i, "type": rnd.choice("AABC"), "name": name,
                     "v": rnd.randrange(100), "ts": t})
    return rows


def test_many_partitions_and_small_batches_give_the_engines_matches(spark: Any) -> None:
    rows = _random_rows(3000, 60, seed=7)
    df = spark.createDataFrame(rows, "seq int, type string, name string, v int, ts timestamp")
    q = ("SELECT a, c FROM t WHERE A AS a ; B ; C AS c FILTER a[v > 50] PARTITION BY [name] "
         "WITHIN 5 MINUTES")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "16")
    try:
        got = spark_rows(cs.match(df, q).collect(), ("a", "c"), partition=("name",))
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    expected = engine(q, rows, partition=("name",))
    assert len({k for _, k, _ in expected}) > 40
    assert got == expected


def test_empty_partitions_and_empty_input(spark: Any) -> None:
    rows = [{"seq": 0, "type": "A", "name": "x", "ts": 1.0},
            {"seq": 1, "type": "B", "name": "x", "ts": 2.0}]
    df = spark.createDataFrame(rows, "seq int, type string, name string, ts double")
    q = "SELECT * FROM t WHERE A ; B PARTITION BY [name]"
    got = cs.match(df.repartition(4), q).collect()
    assert spark_rows(got, ("A", "B"), partition=("name",)) == engine(q, rows,
                                                                       partition=("name",))
    assert cs.match(df.where("seq < 0"), q).collect() == []


# ---------------------------------------------------------------- time columns

def test_timestamp_date_and_numeric_time_agree(spark: Any) -> None:
    rows = _random_rows(400, 5, seed=3)
    secs = [{**r, "ts": (r["ts"] - BASE).total_seconds()} for r in rows]
    millis = [{**r, "ts": int((r["ts"] - BASE).total_seconds() * 1000)} for r in rows]
    q = "SELECT a, c FROM t WHERE A AS a ; C AS c PARTITION BY [name] WITHIN 6 SECONDS"
    schema = "seq int, type string, name string, v int, ts {}"
    as_ts = cs.match(spark.createDataFrame(rows, schema.format("timestamp")), q).collect()
    as_s = cs.match(spark.createDataFrame(secs, schema.format("double")), q).collect()
    as_ms = cs.match(spark.createDataFrame(millis, schema.format("bigint")), q,
                     time_unit="ms").collect()
    # the same matches; their ids hash the rows, times in each one's own terms (issue 28)
    for got, want in ((as_ts, engine(q, rows, partition=("name",))),
                      (as_s, engine(q, secs, partition=("name",))),
                      (as_ms, engine(q, millis, partition=("name",), time_unit="ms"))):
        assert spark_rows(got, ("a", "c"), partition=("name",)) == want
        assert sorted((m[1:] for m in want), key=repr) == \
            sorted((m[1:] for m in engine(q, rows, partition=("name",))), key=repr)
    assert isinstance(as_ts[0].match_start, dt.datetime)
    assert isinstance(as_s[0].match_start, float)
    assert isinstance(as_ms[0].match_start, int)
    days = [{**r, "ts": dt.date(2024, 1, 1) + dt.timedelta(days=r["seq"] // 50)} for r in rows]
    qd = "SELECT a, c FROM t WHERE A AS a ; C AS c PARTITION BY [name] WITHIN 24 HOURS"
    got = cs.match(spark.createDataFrame(days, schema.format("date")), qd).collect()
    assert spark_rows(got, ("a", "c"), partition=("name",)) == \
        engine(qd, days, partition=("name",))
    assert isinstance(got[0].match_start, dt.date)


# ---------------------------------------------------------------- NULLs

def test_nulls_in_partition_and_attribute_columns(spark: Any) -> None:
    rows = [{"seq": i, "type": t, "name": n, "v": v, "ts": float(i)}
            for i, (t, n, v) in enumerate([("A", "x", 60), ("B", None, 1), ("B", "x", None),
                                           ("A", None, 70), ("B", "x", 5), ("A", "y", None),
                                           ("B", "y", 9), ("B", None, 3)])]
    df = spark.createDataFrame(rows, "seq int, type string, name string, v int, ts double")
    q = ("SELECT * FROM t WHERE A AS x ; B AS y FILTER x[v > 50] AND y[NOT v > 100] "
         "PARTITION BY [name]")
    got = spark_rows(cs.match(df, q).collect(), ("x", "y"), partition=("name",))
    assert got == engine(q, rows, partition=("name",))
    assert [k for _, k, _ in got] == [("x",)]  # NULL names are dropped; NULL v fails b's test


def test_a_null_time_is_a_clear_error(spark: Any) -> None:
    df = spark.createDataFrame([(0, "A", None), (1, "B", 2.0)], "seq int, type string, ts double")
    with pytest.raises(PythonException) as err:
        cs.match(df, "SELECT * FROM t WHERE A ; B").collect()
    assert ("MATCH_CEQL: the time column 'ts' is NULL in 1 row(s); every event needs a time. "
            "Filter them out first (WHERE ts IS NOT NULL).") in str(err.value)


# ---------------------------------------------------------------- output shapes

def test_rows_events_gives_one_row_per_event_with_its_variable(spark: Any, stock: Any) -> None:
    per_match = spark.sql(SPELLINGS["query partition"]).collect()
    events = spark.sql(f"SELECT * FROM MATCH_CEQL(TABLE(stock), query => {sql_string(PAIRS_P)}, "
                       "rows => 'events')")
    assert events.columns == ["match_id", "match_start", "match_end", "variable", "seq", "type",
                              "name", "price", "ts"]
    got = sorted((r.match_id, r.variable, r.seq) for r in events.collect())
    want = sorted((m.match_id, v, e.seq) for m in per_match for v in ("a", "b") for e in m[v])
    assert got == want
    paper = spark.sql(f"SELECT variable, seq FROM MATCH_CEQL(TABLE(stock), query => "
                      f"{sql_string(PAPER)}, rows => 'events') WHERE seq = 0").collect()
    assert {(r.variable, r.seq) for r in paper} == {("msft", 0)}  # not the type name SELL


def test_bounds_name_the_rows_that_start_and_end_the_interval(spark: Any) -> None:
    rows = [{"seq": i, "type": "ABCAACBBCCAB"[i % 12] if i % 5 else "CAB"[i % 3],
             "name": "xy"[(i // 3) % 2], "ts": float(i // 4)} for i in range(48)]
    df = spark.createDataFrame(rows, "seq int, type string, name string, ts double")
    df.createOrReplaceTempView("tied")
    q = "SELECT b FROM tied WHERE A AS a ; B AS b ; C AS c PARTITION BY [name] WITHIN 3 SECONDS"
    out = spark.sql(f"SELECT * FROM MATCH_CEQL(TABLE(tied) PARTITION BY name ORDER BY (ts, seq), "
                    f"bounds => 'seq', query => {sql_string(q)})")
    assert out.columns == ["match_id", "name", "match_start", "match_end", "match_start_seq",
                           "match_end_seq", "b"]
    got = sorted((r.name, r.match_start_seq, r.match_end_seq, tuple(e.seq for e in r.b))
                 for r in out.collect())
    want = []
    for name in "xy":
        part = [r for r in rows if r["name"] == name]
        for m in ceql.compile(q).run(part, time="ts"):
            want.append((name, part[m.start_position]["seq"], part[m.end_position]["seq"],
                         tuple(part[p]["seq"] for p in m.positions)))
    assert got == sorted(want)
    # the start is not always the first row at its time: times alone could not say which
    assert any(r.match_start_seq != min(x["seq"] for x in rows if x["ts"] == r.match_start
                                        and x["name"] == r.name) for r in out.collect())
    api = cs.match(df, q, bounds=["seq", "ts"], rows="events")
    assert api.columns[:7] == ["match_id", "match_start", "match_end", "match_start_seq",
                               "match_end_seq", "match_start_ts", "match_end_ts"]
    spark.catalog.dropTempView("tied")


def test_match_ids_are_deterministic(spark: Any, stock: Any) -> None:
    sql = SPELLINGS["query partition"]
    first = sorted(r.match_id for r in spark.sql(sql).collect())
    assert first == sorted(r.match_id for r in spark.sql(sql).collect())
    assert len(set(first)) == len(first)


def test_several_from_tables_merge_by_time_and_name_the_types(spark: Any) -> None:
    sells = [{"name": "a", "price": 10.0, "ts": 1.0, "seq": 0},
             {"name": "a", "price": 12.0, "ts": 3.0, "seq": 1}]
    buys = [{"name": "a", "price": 11.0, "ts": 2.0, "seq": 2, "qty": 5},
            {"name": "a", "price": 13.0, "ts": 3.0, "seq": 3, "qty": 1}]
    spark.createDataFrame(sells, "name string, price double, ts double, seq int") \
        .createOrReplaceTempView("sells")
    spark.createDataFrame(buys, "name string, price double, ts double, seq int, qty int") \
        .createOrReplaceTempView("buys")
    q = "SELECT * FROM sells, buys WHERE sells AS s ; buys AS b PARTITION BY [name]"
    merged = [{**r, "type": "sells", "stream": "sells"} for r in sells] + \
             [{**r, "type": "buys", "stream": "buys"} for r in buys]
    # the ids hash the table's columns; the type and the stream are ceql's own there
    expected = engine(q, merged, partition=("name",),
                      columns=("name", "price", "ts", "seq", "qty"))
    assert len(expected) == 3  # (0,2) (0,3) (1,3): the tie at ts 3 puts sells first
    for df in (spark.sql(f"SELECT * FROM MATCH_CEQL( {q} )"), cs.run(spark, q)):
        assert "qty" in df.schema["s"].dataType.elementType.names
        assert df.columns[-2:] == ["s", "b"]  # pattern order; sells, buys repeat s, b
        assert spark_rows(df.collect(), ("b", "s"), partition=("name",)) == expected


# ---------------------------------------------------------------- errors at analysis

def _analysis_error(spark: Any, sql: str) -> str:
    with pytest.raises(AnalysisException) as err:
        spark.sql(sql)
    return str(err.value)


ERRORS = {
    "attribute typo": (
        "SELECT * FROM MATCH_CEQL(TABLE(stock), query => 'SELECT * FROM stock WHERE SELL AS a "
        "FILTER a[prce > 1]')",
        "MATCH_CEQL: Unknown attribute 'prce' in FILTER: the schema has name, price, seq, ts, "
        "type (did you mean 'price'?) (line 1, column 46)\n"
        "SELECT * FROM stock WHERE SELL AS a FILTER a[prce > 1]\n"
        "                                             ^^^^"),
    "syntax": (
        "SELECT * FROM MATCH_CEQL( SELECT * FROM stock WHERE SELL ;; BUY )",
        "(line 1, column 33)\nSELECT * FROM stock WHERE SELL ;; BUY\n"
        "                                ^"),
    "time column": (
        "SELECT * FROM MATCH_CEQL(TABLE(stock), query => 'SELECT * FROM stock WHERE SELL', "
        "time => 'tss')",
        "MATCH_CEQL: the time column 'tss' is not in the input table; its columns are seq, "
        "type, name, price, ts. Name one of them."),
    "partition column": (
        "SELECT * FROM MATCH_CEQL(TABLE(stock) PARTITION BY nme ORDER BY ts, "
        "query => 'SELECT * FROM stock WHERE SELL')",
        "MATCH_CEQL: the PARTITION BY column 'nme' is not in the input table; its columns are "
        "seq, type, name, price, ts. Name one of them."),
    "disagreeing partitions": (
        "SELECT * FROM MATCH_CEQL(TABLE(stock) PARTITION BY type ORDER BY ts, "
        f"query => {sql_string(PAIRS_P)})",
        "MATCH_CEQL: the table argument is PARTITION BY type but the query says PARTITION BY "
        "[name]; make them the same or keep only one."),
    "disagreeing times": (
        "SELECT * FROM MATCH_CEQL(TABLE(stock) WITH SINGLE PARTITION ORDER BY (seq), "
        "time => 'ts', query => 'SELECT * FROM stock WHERE SELL')",
        "MATCH_CEQL: the table argument is ORDER BY seq but time => 'ts'; they must name the "
        "same column (or give only one)."),
    "bounds column": (
        "SELECT * FROM MATCH_CEQL(TABLE(stock), query => 'SELECT * FROM stock WHERE SELL', "
        "bounds => 'seq, sq')",
        "MATCH_CEQL: the bounds column 'sq' is not in the input table; its columns are seq, "
        "type, name, price, ts. Name one of them."),
    "descending": (
        "SELECT * FROM MATCH_CEQL(TABLE(stock) PARTITION BY name ORDER BY ts DESC, "
        "query => 'SELECT * FROM stock WHERE SELL')",
        "MATCH_CEQL: the table argument's ORDER BY must be ascending (events are read oldest "
        "first); drop DESC."),
    "case clash": (
        "SELECT * FROM MATCH_CEQL(TABLE(stock), query => 'SELECT * FROM stock WHERE SELL AS sell "
        "; SELL')",
        "MATCH_CEQL: output columns 'SELL' and 'sell' clash (a variable has the name of another "
        "output column); Spark SQL does not tell apart names that differ only in case: SELECT "
        "the variables you need (SELECT a, b) or rename one with AS."),
    "unknown option": (
        "SELECT * FROM MATCH_CEQL(TABLE(stock), query => 'SELECT * FROM stock WHERE SELL', "
        "tiem => 'ts')",
        "MATCH_CEQL has no option tiem; its options are query, time, time_unit, time_format, "
        "tie_break, type, rows, bounds."),
    "no type column": (
        "SELECT * FROM MATCH_CEQL(TABLE(SELECT name, ts FROM stock), "
        "query => 'SELECT * FROM stock WHERE SELL')",
        "MATCH_CEQL: the input has no column 'type' to read event types from; name the column "
        "with type => 'col' (a table given by name, TABLE(t), uses its name as the type)."),
    "missing table": (
        "SELECT * FROM MATCH_CEQL( SELECT * FROM no_such_table WHERE SELL )",
        "no_such_table"),
}


@pytest.mark.parametrize("sql, message", ERRORS.values(), ids=ERRORS.keys())
def test_wrong_calls_fail_at_analysis_with_a_clear_message(spark: Any, stock: Any, sql: str,
                                                           message: str) -> None:
    assert message in _analysis_error(spark, sql)


def test_a_table_without_type_column_uses_its_name(spark: Any) -> None:
    spark.createDataFrame([(1.0, 5), (2.0, 7)], "ts double, v int").createOrReplaceTempView("ping")
    rows = spark.sql("SELECT * FROM MATCH_CEQL(TABLE(ping), "
                     "query => 'SELECT * FROM ping WHERE ping AS p ; ping AS q')").collect()
    assert [(r.p[0].v, r.q[0].v) for r in rows] == [(5, 7)]


# ---------------------------------------------------------------- the shim's parser

def _split(spark: Any, text: str) -> tuple[list[str], str]:
    r = spark._jsparkSession.sessionState().sqlParser().splitStatements(text)
    st = r.completeStatements()
    return [st.apply(i).statement() for i in range(st.size())], r.partialStatement()


def test_statement_splitting_keeps_a_ceql_query_whole(spark: Any) -> None:
    text = ("SELECT 1; SELECT * FROM MATCH_CEQL( SELECT * FROM s WHERE A; B ); "
            "SELECT ';' AS x; SELECT * FROM MATCH_CEQL( SELECT * FROM s WHERE A \\; B )")
    assert _split(spark, text) == (
        ["SELECT 1", "SELECT * FROM MATCH_CEQL( SELECT * FROM s WHERE A; B )",
         "SELECT ';' AS x"],
        "SELECT * FROM MATCH_CEQL( SELECT * FROM s WHERE A \\; B )")


def test_rewrite_of_the_inline_syntax(spark: Any) -> None:
    syntax = spark._jvm.org.apache.spark.sql.ceql.CeqlSyntax
    assert syntax.rewrite("SELECT * FROM match_ceql( SELECT a FROM s WHERE A AS a \\; "
                          "B FILTER a[n = 'it''s (x)'] -- c)\n, time => 'ts') AS m") == (
        "SELECT * FROM match_ceql(query => 'SELECT a FROM s WHERE A AS a ; B FILTER "
        "a[n = \\'it\\'\\'s (x)\\'] -- c)', time => 'ts') AS m")
    untouched = "SELECT 'MATCH_CEQL( SELECT' AS x, * FROM MATCH_CEQL(TABLE(t), query => 'q')"
    assert syntax.rewrite(untouched) == untouched
    assert syntax.fromNames("SELECT * FROM s1, `my t` WHERE A").mkString("|") == "s1|my t"
    assert syntax.fromNames("SELECT * WHERE A").isEmpty()


def test_unclosed_inline_query_and_the_switch(spark: Any) -> None:
    assert "MATCH_CEQL( at position 14 has no closing parenthesis; end the CEQL query with " \
           "')'." in _parse_error(spark, "SELECT * FROM MATCH_CEQL( SELECT * FROM s WHERE A")
    PARSER_ENABLED.set(spark, False)
    try:
        assert "PARSE_SYNTAX_ERROR" in _parse_error(
            spark, "SELECT * FROM MATCH_CEQL( SELECT * FROM s WHERE A )")
    finally:
        spark.conf.unset(PARSER_ENABLED.key)


def _parse_error(spark: Any, sql: str) -> str:
    from pyspark.errors import ParseException

    with pytest.raises(ParseException) as err:
        spark.sql(sql)
    return str(err.value)


# ---------------------------------------------------------------- session helpers

def test_session_helpers(spark: Any, stock: Any) -> None:
    assert cs.EXTENSION_CLASS in spark.conf.get("spark.sql.extensions")
    assert cs.jar_path() in spark.conf.get("spark.jars")
    assert cs.enable(spark) is spark
    register(spark)  # what enable() does for a session started without the extension
    again = spark.sql(SPELLINGS["query partition"]).collect()
    assert len(again) == 3


class _Builder:
    def __init__(self) -> None:
        self._options: dict[str, str] = {"spark.jars": "a.jar"}

    def config(self, key: str, value: str) -> _Builder:
        self._options[key] = value
        return self


def test_configure_adds_the_jar_and_the_extension() -> None:
    b = cs.configure(_Builder())
    assert b._options == {"spark.jars": f"a.jar,{cs.jar_path()}",
                          "spark.sql.extensions": cs.EXTENSION_CLASS,
                          "spark.python.daemon.module": "ceql.spark._daemon"}
    assert cs.configure(b)._options == b._options  # idempotent


def test_inline_ceql_in_a_parameterized_statement(spark: Any, stock: Any) -> None:
    rows = spark.sql("SELECT count(*) AS n FROM MATCH_CEQL( SELECT * FROM stock WHERE SELL : "
                     "SELL PARTITION BY [name] ) WHERE :one = 1", args={"one": 1}).collect()
    assert rows[0].n == len(engine("SELECT * FROM s WHERE SELL : SELL PARTITION BY [name]",
                                   STOCK_ROWS, partition=("name",))) == 2
