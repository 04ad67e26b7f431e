"""The row filter MATCH_CEQL pushes below its shuffle (``ceql.spark.udtf.pushdown.prefilter``).

* the SQL written for representative queries, exactly;
* on a grid of awkward values (NULL, NaN, -0.0, infinities, 64-bit extremes, quotes, backslashes,
  non-ASCII), Spark keeps every row whose guard the engine finds TRUE (through
  ``ceql.predicates``, rows and Arrow batches alike), and exactly those rows where every atom is
  one the writer may write out;
* end to end: MATCH_CEQL gives the same rows with ``spark.ceql.prefilter.enabled`` on and off,
  and the optimized plan has the Filter only where it should;
* the Spark settings and column kinds that could make Spark's comparison differ from the engine's
  (``escapedStringLiterals``, CHAR(n) padding, names equal but for case, NaN times).
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from pyspark.errors import PythonException
from pyspark.sql.types import (
    ByteType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)
from spark_helpers import engine, spark_rows, sql_string

import ceql
import ceql.spark as cs
from ceql.analysis import Relevance, relevance
from ceql.constants import PREFILTER_KEY
from ceql.predicates import AtomTable, tri_state
from ceql.spark.conf import PREFILTER_ENABLED
from ceql.spark.udtf.call import CallInfo
from ceql.spark.udtf.ceql_plan import plan_match
from ceql.spark.udtf.match_ceql import _with_prefilter
from ceql.spark.udtf.pushdown import prefilter

pytestmark = pytest.mark.spark

CONF = PREFILTER_ENABLED.key


@pytest.fixture(autouse=True)
def _reset_conf(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "spark" in request.fixturenames:
        session = request.getfixturevalue("spark")
        for key in (CONF, "spark.sql.parser.escapedStringLiterals"):
            session.conf.unset(key)


# ---------------------------------------------------------------- the SQL text

_TYPES: dict[str, DataType] = {
    "string": StringType(), "double": DoubleType(), "float": FloatType(), "bigint": LongType(),
    "int": IntegerType(), "tinyint": ByteType(), "timestamp": TimestampType(),
}


def schema_of(ddl: str) -> StructType:
    """``"a int, b string"`` as a StructType (no session needed)."""
    fields = []
    for part in ddl.split(","):
        name, kind = part.strip().rsplit(" ", 1)
        fields.append(StructField(name.strip("`"), _TYPES[kind], True))
    return StructType(fields)


STOCK = schema_of("type string, name string, price double, volume bigint, qty int, "
                  "rate float, `my col` string, ts timestamp")


def written(query: str, schema: StructType = STOCK, call: CallInfo | None = None,
            **options: str) -> str | None:
    """The condition for ``query`` (compiled without the schema: mixed kinds are allowed)."""
    call = call or CallInfo(table_name="s")
    spec = plan_match(schema, {"query": f"SELECT * FROM {call.table_name or 's'} WHERE X",
                               **options}, call)
    return prefilter(ceql.compile(query), schema, spec)


SELL = "coalesce(`type` = 'SELL', FALSE)"
BUY = "coalesce(`type` = 'BUY', FALSE)"
TS = "`ts` IS NULL"


def price(op: str, v: str) -> str:
    return f"nanvl(CAST(`price` AS DOUBLE), CAST(NULL AS DOUBLE)) {op} CAST({v} AS DOUBLE)"


SQL_TEXT = {
    "string equality": (
        "SELECT * FROM s WHERE SELL AS a FILTER a[name = 'MSFT']",
        f"(({SELL} AND `name` = 'MSFT')) OR {TS}"),
    "integer column, fractional bounds": (
        "SELECT * FROM s WHERE SELL AS a ; BUY AS b FILTER a[volume > 4000.5] "
        "AND b[volume <= 4000.5]",
        f"((({SELL} AND `volume` >= 4001) OR ({BUY} AND `volume` <= 4000))) OR {TS}"),
    "integer column, bounds the other way": (
        "SELECT * FROM s WHERE SELL AS a FILTER a[volume < 4000.5 AND qty >= -0.5]",
        f"(({SELL} AND `volume` <= 4000 AND `qty` >= 0)) OR {TS}"),
    "literal on the left": (
        "SELECT * FROM s WHERE SELL AS a FILTER a[-0.5 > qty AND 7 <= volume]",
        f"(({SELL} AND `qty` <= -1 AND `volume` >= 7)) OR {TS}"),
    "integral float literal": (
        "SELECT * FROM s WHERE SELL AS a FILTER a[volume = 1e3 AND qty <> 2.0]",
        f"(({SELL} AND `volume` = 1000 AND `qty` != 2)) OR {TS}"),
    "a fractional literal cannot equal an integer column: no atom": (
        "SELECT * FROM s WHERE SELL AS a FILTER a[volume = 0.5]",
        f"({SELL}) OR {TS}"),
    "double and float columns read NaN as NULL": (
        "SELECT * FROM s WHERE SELL AS a FILTER a[price < 3 AND rate >= -1.5]",
        f"(({SELL} AND {price('<', '3')} AND nanvl(CAST(`rate` AS DOUBLE), CAST(NULL AS "
        f"DOUBLE)) >= CAST('-1.5' AS DOUBLE))) OR {TS}"),
    "IN lists": (
        "SELECT * FROM s WHERE SELL AS a FILTER a[name IN {'a', 'b'} AND qty NOT IN {1, -2}]",
        f"(({SELL} AND `name` IN ('a', 'b') AND `qty` NOT IN (1, -2))) OR {TS}"),
    "IN RANGE": (
        "SELECT * FROM s WHERE SELL AS a FILTER a[price IN RANGE(1, 2.5)]",
        f"(({SELL} AND ({price('>=', '1')} AND {price('<=', chr(39) + '2.5' + chr(39))}))) "
        f"OR {TS}"),
    "NOT through De Morgan": (
        "SELECT * FROM s WHERE SELL AS a FILTER a[NOT (price > 100 AND name = 'X')]",
        f"(({SELL} AND (NOT {price('>', '100')} OR NOT `name` = 'X'))) OR {TS}"),
    "NOT of OR": (
        "SELECT * FROM s WHERE SELL AS a FILTER a[name = 'x' AND NOT (name IN {'y'} OR qty > 2)]",
        f"(({SELL} AND `name` = 'x' AND (NOT `name` IN ('y') AND NOT `qty` > 2))) OR {TS}"),
    "LIKE, arithmetic and two attributes are not written": (
        "SELECT * FROM s WHERE SELL AS a ; BUY AS b FILTER a[name LIKE '^M'] "
        "AND b[NOT qty * 2 > volume]",
        f"(({SELL} OR {BUY})) OR {TS}"),
    "an unwritten atom inside OR makes the OR TRUE": (
        "SELECT * FROM s WHERE SELL AS a FILTER a[name LIKE '^M' OR qty > 1]",
        f"({SELL}) OR {TS}"),
    "mixed kinds are not written": (
        "SELECT * FROM s WHERE SELL AS a FILTER a[qty IN {1, 2.0} OR name IN {1}]",
        f"({SELL}) OR {TS}"),
    "a column that needs quoting": (
        "SELECT * FROM s WHERE SELL AS a FILTER a[`my col` != 'q']",
        f"(({SELL} AND `my col` != 'q')) OR {TS}"),
    "non-ASCII strings": (
        "SELECT * FROM s WHERE SELL AS a FILTER a[name >= 'é日本']",
        f"(({SELL} AND `name` >= 'é日本')) OR {TS}"),
    "quotes and backslashes as UTF-8 bytes": (
        "SELECT * FROM s WHERE SELL AS a FILTER a[name = 'O''Brien \\ x' OR name IN {'é', 'a\\'}]",
        f"(({SELL} AND (`name` = CAST(X'4F27427269656E205C2078' AS STRING) OR `name` IN "
        f"('é', CAST(X'615C' AS STRING))))) OR {TS}"),
    "no filter, all types": (
        "SELECT * FROM s WHERE SELL ; BUY+",
        f"(({SELL} OR {BUY})) OR {TS}"),
    "time windows, partitions and strategies keep it": (
        "SELECT NEXT a FROM s WHERE SELL AS a ; BUY FILTER a[qty > 1] PARTITION BY [name] "
        "WITHIN 10 SECONDS CONSUME BY PARTITION LIMIT 2",
        f"((({SELL} AND `qty` > 1) OR {BUY})) OR {TS}"),
}


@pytest.mark.parametrize("query, sql", SQL_TEXT.values(), ids=SQL_TEXT.keys())
def test_the_sql_written_for_a_query(query: str, sql: str) -> None:
    assert written(query) == sql


NOTHING = {
    "contiguity": "SELECT * FROM s WHERE SELL : BUY",
    "contiguous iteration": "SELECT * FROM s WHERE SELL ; BUY:+",
    "STRICT": "SELECT STRICT * FROM s WHERE SELL AS a ; BUY FILTER a[qty > 1]",
    "WITHIN n EVENTS": "SELECT * FROM s WHERE SELL AS a ; BUY FILTER a[qty > 1] WITHIN 3 EVENTS",
    "WITHIN n [attr]": "SELECT * FROM s WHERE SELL AS a ; BUY FILTER a[qty > 1] WITHIN 3 [qty]",
}


@pytest.mark.parametrize("query", NOTHING.values(), ids=NOTHING.keys())
def test_no_filter_where_skipped_events_count(query: str) -> None:
    assert written(query) is None


def test_a_table_without_type_column_has_its_name_as_type() -> None:
    ping = schema_of("v int, ts double")
    call = CallInfo(table_name="ping")
    # its own type is TRUE: only the condition is left (a double time keeps NaN times too)
    assert written("SELECT * FROM ping WHERE ping AS p FILTER p[v > 5]", ping, call) == \
        "(`v` > 5) OR `ts` IS NULL OR isnan(`ts`)"
    # every row is of its type, and the second one has no condition: no filter at all
    assert written("SELECT * FROM ping WHERE ping AS p ; ping FILTER p[v > 5]", ping,
                   call) is None
    # another type is FALSE
    either = "SELECT * FROM ping WHERE (ping AS p FILTER p[v > 5]) OR pong"
    assert written(either, ping, call) == "(`v` > 5) OR `ts` IS NULL OR isnan(`ts`)"
    assert written("SELECT * FROM ping WHERE pong AS p FILTER p[v > 5]", ping, call) == \
        "(FALSE) OR `ts` IS NULL OR isnan(`ts`)"


MERGED = schema_of("name string, price double, ts double, __ceql_stream string, "
                   "__ceql_from int")
MERGED_TYPED = schema_of("type string, name string, price double, ts double, "
                         "__ceql_stream string, __ceql_from int")


def test_several_from_tables_use_the_stream_column() -> None:
    call = CallInfo(streams=("sells", "buys"))
    assert written("SELECT * FROM sells, buys WHERE sells AS s ; buys FILTER s[price > 1]",
                   MERGED, call) == (
        "(((coalesce(`__ceql_stream` = 'sells', FALSE) AND "
        f"{price('>', '1')}) OR coalesce(`__ceql_stream` = 'buys', FALSE))) "
        "OR `ts` IS NULL OR isnan(`ts`)")
    # a type column filled, where NULL, from the stream name; S>T checks the stream
    assert written("SELECT * FROM sells, buys WHERE sells>SELL ; BUY", MERGED_TYPED, call) == (
        "(((coalesce(coalesce(`type`, `__ceql_stream`) = 'SELL', FALSE) AND "
        "(`__ceql_stream` IS NULL OR `__ceql_stream` = 'sells')) OR "
        "coalesce(coalesce(`type`, `__ceql_stream`) = 'BUY', FALSE))) "
        "OR `ts` IS NULL OR isnan(`ts`)")


def test_a_stream_column_of_the_table_and_a_missing_one() -> None:
    with_stream = schema_of("type string, stream string, ts bigint")
    q = "SELECT * FROM S, T WHERE S>A ; B"
    assert written(q, with_stream) == (
        "(((coalesce(`type` = 'A', FALSE) AND (`stream` IS NULL OR `stream` = 'S')) OR "
        "coalesce(`type` = 'B', FALSE))) OR `ts` IS NULL")
    # no stream column: every event is of every stream (StreamIs is TRUE)
    assert written(q, schema_of("type string, ts bigint")) == (
        "((coalesce(`type` = 'A', FALSE) OR coalesce(`type` = 'B', FALSE))) OR `ts` IS NULL")
    # ... and under NOT nothing can make it FALSE; a numeric stream column is not written
    assert written(q, schema_of("type string, stream int, ts bigint")) == (
        "((coalesce(`type` = 'A', FALSE) OR coalesce(`type` = 'B', FALSE))) OR `ts` IS NULL")


def test_the_condition_reaches_the_shim_in_the_first_columns_metadata() -> None:
    q = "SELECT a FROM s WHERE SELL AS a ; BUY FILTER a[qty > 1]"
    spec = plan_match(STOCK, {"query": q}, CallInfo(table_name="s"))
    out = StructType([StructField("match_id", LongType(), True, {"k": 1}),
                      StructField("a", StringType(), True)])
    tagged = _with_prefilter(out, spec, STOCK)
    assert tagged.fields[0].metadata == {"k": 1, PREFILTER_KEY: written(q)}
    assert tagged.fields[1:] == out.fields[1:]
    none = replace(spec, query="SELECT * FROM s WHERE SELL : BUY")
    assert _with_prefilter(out, none, STOCK) is out


def test_a_deep_or_long_condition_is_not_pushed() -> None:
    deep = "a[" + "NOT (" * 250 + "qty > 1" + ")" * 250 + "]"
    assert written(f"SELECT * FROM s WHERE SELL AS a FILTER {deep}") is None
    def many(n: int) -> str:
        return " OR ".join(f"name = '{k:090}'" for k in range(n))
    assert written(f"SELECT * FROM s WHERE SELL AS a FILTER a[{many(1_200)}]") is None
    assert written(f"SELECT * FROM s WHERE SELL AS a FILTER a[{many(900)}]") is not None
    shallow = "a[" + "NOT (" * 150 + "qty > 1" + ")" * 150 + "]"
    assert written(f"SELECT * FROM s WHERE SELL AS a FILTER {shallow}") is not None


# ---------------------------------------------------------------- the grid

BIG = 2**63
GRID_SCHEMA = ("id int, type string, i bigint, b tinyint, n int, d double, f float, s string, "
               "stream string, ts double")
GRID_VALUES: dict[str, list[Any]] = {
    "type": ["A", "A", "A", "B", None, "a"],
    "i": [None, 0, 1, -1, 2, 4000, 4001, 2**53 + 1, BIG - 1, -BIG, 1000],
    "b": [None, -128, 127, 0, 1, 5, -1],
    "n": [None, 0, 1, -1, 2, 4000, 4001, 2**31 - 1, -(2**31)],
    "d": [None, math.nan, -0.0, 0.0, math.inf, -math.inf, 1.5, 4000.5, 2.0**53, 1e300, 5e-324,
          -1.0, 0.1, 1.0, 2.0, 4001.0],
    "f": [None, math.nan, -0.0, 1.5, math.inf, -math.inf, 0.1, 1.0, 3.4e38, -2.5],
    "s": [None, "", "a", "A", "b", "O'Brien", "back\\slash", "é", "日本", "\x00", "a\nb", "\\'",
          "'", "zz", "a%", "ab", "a\\"],
    "stream": [None, "S", "T", "S'"],
}


def _grid_rows(n: int = 200, seed: int = 11) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    rows = []
    for k in range(n):
        row: dict[str, Any] = {"id": k, "ts": float(k)}
        for c, vals in GRID_VALUES.items():
            # every value of every column shows up early; then random mixtures
            row[c] = vals[k % len(vals)] if k < 40 else rnd.choice(vals)
        rows.append(row)
    return rows


NUM_LITERALS: list[tuple[str, int | float]] = [
    ("0", 0), ("1", 1), ("-1", -1), ("2.0", 2.0), ("-0.0", -0.0), ("1.5", 1.5),
    ("4000.5", 4000.5), ("4001", 4001), ("0.1", 0.1), ("1e300", 1e300),
    ("9007199254740993", 2**53 + 1), ("9223372036854775807", BIG - 1),
    ("9223372036854775808", BIG), ("-9223372036854775808", -BIG), ("-2.5", -2.5),
]
STR_LITERALS: list[tuple[str, str]] = [
    ("'a'", "a"), ("''", ""), ("'O''Brien'", "O'Brien"), ("'back\\slash'", "back\\slash"),
    ("'é'", "é"), ("'zz'", "zz"), ("'\\'''", "\\'"), ("''''", "'"), ("'日本'", "日本"),
    ("'a\\'", "a\\"),
]
OPS = ["=", "!=", "<", "<=", ">", ">="]
KINDS = {"i": "int", "b": "int", "n": "int", "d": "float", "f": "float", "s": "str"}


def _exact_compare(kind: str, op: str, v: int | float | str) -> bool:
    """Whether ``column op literal`` has a Spark SQL form with the engine's 3-valued result."""
    if isinstance(v, str) or kind == "str":
        return isinstance(v, str) and kind == "str"
    if kind == "int":
        if isinstance(v, float):
            if not v.is_integer():
                return op not in ("=", "!=")
            v = int(v)
        return -BIG <= v < BIG
    return abs(v) <= 2**53 if isinstance(v, int) else math.isfinite(v)


def _atoms() -> list[tuple[str, bool]]:
    """Comparisons of every column with every literal (every operator for ``i``, ``d`` and
    ``s``, two for the other columns, two for a literal of the other kind) and the rest."""
    out: list[tuple[str, bool]] = []
    for col, kind in KINDS.items():
        lits: list[tuple[str, int | float | str]] = [*NUM_LITERALS, *STR_LITERALS]
        for k, (text, v) in enumerate(lits):
            mixed = isinstance(v, str) != (kind == "str")
            for j, op in enumerate(OPS):
                if mixed and (k % 4 or j % 3):
                    continue  # a few mixed kinds are enough
                if col in ("b", "n", "f") and (j - k) % 3:
                    continue
                if (k + j) % 4 == 0:  # the literal on the left now and then
                    flipped = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
                    out.append((f"{text} {flipped} {col}", _exact_compare(kind, op, v)))
                else:
                    out.append((f"{col} {op} {text}", _exact_compare(kind, op, v)))
    out += [
        ("i IN {1, 2, 4001}", True), ("i NOT IN {1, -1}", True), ("b IN {1000, 5}", True),
        ("n IN {9223372036854775807, 1}", True), ("b NOT IN {-128}", True),
        ("i IN {9223372036854775808, 1}", False), ("d IN {1.5, 2}", False),
        ("d NOT IN {1.5}", False), ("s IN {'a', 'O''Brien', ''}", True),
        ("s NOT IN {'zz', '\\'''}", True), ("s IN {'a\\', 'é'}", True),
        ("i IN {'a', 'b'}", False), ("s IN {1}", False), ("s NOT IN {1, 2}", False),
        ("i IN RANGE(0, 4001)", True), ("d IN RANGE(-0.0, 1.5)", True),
        ("d IN RANGE(1, 9007199254740993)", False), ("f IN RANGE(0.1, 1)", True),
        ("s IN RANGE('a', 'b')", True), ("b IN RANGE(-200, 200)", True),
        ("i IN RANGE(0.5, 2.5)", True), ("n IN RANGE(b, 5)", False),
        ("s IN RANGE(0, 1)", False), ("i IN RANGE('a', 'b')", False),
        ("s LIKE '^a'", False), ("NOT s LIKE 'b'", False), ("i + 1 > 2", False),
        ("-i > 1", False), ("i < d", False), ("d * 2 = f", False), ("b = TRUE", False),
        ("i % 2 = 0", False),
    ]
    return out


ATOMS = _atoms()


def _conditions() -> list[tuple[str, bool]]:
    """Each atom alone and negated; every fifth also combined with another atom."""
    out: list[tuple[str, bool]] = []
    for k, (p, ep) in enumerate(ATOMS):
        out += [(p, ep), (f"NOT ({p})", ep)]
        if k % 5 == 0:
            q, eq = ATOMS[(k * 7 + 1) % len(ATOMS)]
            both = ep and eq
            out += [(f"({p}) AND ({q})", both), (f"({p}) OR ({q})", both),
                    (f"NOT (({p}) AND ({q}))", both), (f"NOT (({p}) OR NOT ({q}))", both)]
    return out


def _table(rel: Relevance) -> AtomTable:
    table = AtomTable()
    for k, a in enumerate(rel.atoms):
        assert table.add(a) == k
    return table


@pytest.fixture(scope="module")
def grid(spark: Any) -> tuple[Any, list[dict[str, Any]], Any]:
    rows = _grid_rows()
    df = spark.createDataFrame(rows, GRID_SCHEMA).cache()
    collected = {r.id: r.asDict() for r in df.collect()}
    arrow = df.toArrow()
    assert arrow.column("id").to_pylist() == sorted(collected)
    return df, [collected[k] for k in sorted(collected)], arrow


def _engine_true(query: ceql.Query, rows: list[dict[str, Any]], arrow: Any) -> set[int]:
    """The rows whose relevance guard is TRUE, by the row path and the batch path."""
    rel = relevance(query)
    assert rel is not None
    table = _table(rel)
    by_row = {r["id"] for r in rows if tri_state(rel.guard, table.row_class(r)) is True}
    classes = table.batch_classes(arrow)
    ids = arrow.column("id").to_pylist()
    by_batch = {ids[k] for k, c in enumerate(classes) if tri_state(rel.guard, int(c)) is True}
    assert by_row == by_batch
    return by_row


def _kept(df: Any, conditions: list[str]) -> list[set[int]]:
    """The ids each condition keeps, as ``WHERE`` would (TRUE only), in one or two jobs (a
    job costs about the same for 100 or 1000 columns)."""
    out: list[set[int]] = []
    for start in range(0, len(conditions), 1200):
        chunk = conditions[start:start + 1200]
        cols = [f"({c}) AS c{k}" for k, c in enumerate(chunk)]
        got = df.selectExpr("id", *cols).collect()
        out += [{r.id for r in got if r[f"c{k}"] is True} for k in range(len(chunk))]
    return out


def test_spark_keeps_every_row_the_engine_can_use(spark: Any, grid: Any) -> None:
    df, rows, arrow = grid
    spec = plan_match(df.schema, {"query": "SELECT * FROM S WHERE A", "time": "ts"},
                      CallInfo())
    base = prefilter(ceql.compile("SELECT * FROM S WHERE A AS x"), df.schema, spec)
    assert base == "(coalesce(`type` = 'A', FALSE)) OR `ts` IS NULL OR isnan(`ts`)"
    cases: list[tuple[str, str, bool, set[int]]] = []
    for cond, exact in _conditions():
        q = ceql.compile(f"SELECT * FROM S WHERE A AS x FILTER x[{cond}]")
        sql = prefilter(q, df.schema, spec)
        assert sql is not None, cond
        # an atom is written out exactly when expected (else only the type check is left)
        if cond in dict(ATOMS):
            assert (sql != base) == exact, (cond, sql)
        cases.append((cond, sql, exact, _engine_true(q, rows, arrow)))
    kept = _kept(df, [sql for _, sql, _, _ in cases])
    wrong = [(cond, sql, sorted(want - got))
             for (cond, sql, _, want), got in zip(cases, kept, strict=True) if not want <= got]
    assert not wrong, f"{len(wrong)} conditions drop rows the engine uses: {wrong[:3]}"
    inexact = [(cond, sql, sorted(got - want))
               for (cond, sql, exact, want), got in zip(cases, kept, strict=True)
               if exact and got != want]
    assert not inexact, f"{len(inexact)} exact conditions keep more: {inexact[:3]}"
    assert sum(exact for _, _, exact, _ in cases) > len(cases) // 2
    assert sum(bool(want) for *_, want in cases) > len(cases) // 2
    # the projection reads the conditions as WHERE does
    for cond, sql, _, _ in cases[1::300]:
        assert {r.id for r in df.where(sql).select("id").collect()} == \
            kept[[c for c, *_ in cases].index(cond)]


STREAM_QUERIES = [
    "SELECT * FROM S, T WHERE S>A AS x FILTER x[i > 1]",
    "SELECT * FROM S, T WHERE (S>A AS x ; T>B) OR T>A FILTER x[NOT s = 'a']",
    "SELECT * FROM S, T WHERE S>A ; B ; T>C",
]


@pytest.mark.parametrize("text", STREAM_QUERIES)
def test_stream_checks_are_exact(spark: Any, grid: Any, text: str) -> None:
    df, rows, arrow = grid
    spec = plan_match(df.schema, {"query": text, "time": "ts"}, CallInfo())
    q = ceql.compile(text)
    sql = prefilter(q, df.schema, spec)
    assert sql is not None and "`stream` IS NULL OR `stream` = 'S'" in sql
    assert {r.id for r in df.where(sql).select("id").collect()} == _engine_true(q, rows, arrow)


# ---------------------------------------------------------------- end to end

BASE = dt.datetime(2024, 1, 1, 9, 0, 0)


def _event_rows(n: int = 160, seed: int = 5) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    rows, t = [], BASE
    for i in range(n):
        t += dt.timedelta(seconds=rnd.choice([1, 1, 2, 3]))  # no ties: one order only
        rows.append({"seq": i, "type": rnd.choice("AABBCD"), "name": f"n{rnd.randrange(4)}",
                     "v": rnd.choice([None, *range(0, 100, 7)]),
                     "price": rnd.choice([math.nan, None, 5.0, 20.5, 50.5, 75.0, 99.5]),
                     "ts": t})
    return rows


EVENTS = _event_rows()
EVENTS_SCHEMA = "seq int, type string, name string, v int, price double, ts timestamp"


@pytest.fixture(scope="module")
def events(spark: Any) -> Iterator[Any]:
    df = spark.createDataFrame(EVENTS, EVENTS_SCHEMA)
    df.createOrReplaceTempView("evts")
    yield df
    spark.catalog.dropTempView("evts")


def _plan(df: Any) -> str:
    return str(df._jdf.queryExecution().optimizedPlan().toString())


def _both(spark: Any, make: Any) -> tuple[list[Any], list[Any], str, str]:
    """Rows (sorted by their repr, which NaN equals) and optimized plan with the prefilter on,
    then off."""
    out = []
    for on in ("true", "false"):
        spark.conf.set(CONF, on)
        df = make()
        out.append((sorted(df.collect(), key=repr), _plan(df)))
    spark.conf.unset(CONF)
    (rows_on, plan_on), (rows_off, plan_off) = out
    return rows_on, rows_off, plan_on, plan_off


E2E = {  # query, whether a filter is pushed
    "partitioned": (
        "SELECT x, z FROM t WHERE A AS x ; B ; C AS z FILTER x[v > 50] PARTITION BY [name] "
        "WITHIN 20 SECONDS", True),
    "not partitioned, CONSUME BY ANY": (
        "SELECT * FROM t WHERE A AS x ; B AS y FILTER x[v > 60] AND y[name = 'n1'] "
        "CONSUME BY ANY", True),
    "NEXT with a projection": (
        "SELECT NEXT x FROM t WHERE A AS x ; (B AS y)+ ; C FILTER y[v < 30] "
        "PARTITION BY [name] WITHIN 5 MINUTES", True),
    "MAX over NaN prices": (
        "SELECT MAX * FROM t WHERE (A OR B) AS x ; C AS y FILTER x[price > 50.5] "
        "AND y[NOT price < 10] PARTITION BY [name] WITHIN 15 SECONDS", True),
    "LIMIT and CONSUME BY PARTITION": (
        "SELECT x FROM t WHERE A AS x ; B FILTER x[v IN {0, 7, 14, 21}] PARTITION BY [name] "
        "WITHIN 20 SECONDS CONSUME BY PARTITION LIMIT 1", True),
    "WITHIN n EVENTS": (
        "SELECT * FROM t WHERE A AS x ; B FILTER x[v > 50] PARTITION BY [name] "
        "WITHIN 3 EVENTS", False),
    "STRICT": ("SELECT STRICT * FROM t WHERE A ; B PARTITION BY [name]", False),
    "contiguity": ("SELECT * FROM t WHERE A AS x : C FILTER x[v > 30] PARTITION BY [name]",
                   False),
}


@pytest.mark.parametrize("query, pushed", E2E.values(), ids=E2E.keys())
def test_match_ceql_gives_the_same_rows_with_and_without_the_filter(
        spark: Any, events: Any, query: str, pushed: bool) -> None:
    on, off, plan_on, plan_off = _both(spark, lambda: cs.match(events, query))
    assert repr(on) == repr(off)
    assert on, "a query without matches shows nothing"
    assert ("Filter" in plan_on) == pushed, plan_on
    assert "Filter" not in plan_off
    variables = ceql.compile(query).variables
    partition = ("name",) if "PARTITION BY" in query else ()
    assert spark_rows(on, variables, partition=partition) == \
        engine(query, EVENTS, partition=partition)


def test_the_filter_drops_rows_before_the_shuffle(spark: Any, events: Any) -> None:
    query = E2E["partitioned"][0]
    spark.conf.set(CONF, "true")
    plan = _plan(cs.match(events, query))
    # Filter sits under the repartition, right on the scanned rows
    assert plan.index("RepartitionByExpression") < plan.index("Filter") < \
        plan.index("LogicalRDD")
    assert "coalesce((type#" in plan and "(v#" in plan and "> 50)" in plan


def test_sql_and_rows_events_agree(spark: Any, events: Any) -> None:
    q = ("SELECT * FROM evts WHERE A AS x ; B AS y FILTER x[price >= 50.5] AND y[v < 50] "
         "PARTITION BY [name] WITHIN 10 SECONDS")
    sql = f"SELECT * FROM MATCH_CEQL(TABLE(evts), query => {sql_string(q)}, rows => 'events')"
    on, off, plan_on, _ = _both(spark, lambda: spark.sql(sql))
    assert repr(on) == repr(off) and on
    assert "Filter" in plan_on


def test_several_from_tables(spark: Any) -> None:
    sells = [{"name": f"n{k % 2}", "price": 10.0 + k, "ts": float(2 * k), "seq": k}
             for k in range(12)]
    buys = [{"name": f"n{k % 2}", "price": 11.0 + k, "ts": 2.0 * k + 1, "seq": 100 + k,
             "qty": k % 5} for k in range(12)]
    spark.createDataFrame(sells, "name string, price double, ts double, seq int") \
        .createOrReplaceTempView("sells")
    spark.createDataFrame(buys, "name string, price double, ts double, seq int, qty int") \
        .createOrReplaceTempView("buys")
    try:
        q = ("SELECT * FROM sells, buys WHERE sells AS s ; buys AS b FILTER b[qty > 2] "
             "AND s[price < 18] PARTITION BY [name]")
        on, off, plan_on, plan_off = _both(
            spark, lambda: spark.sql(f"SELECT * FROM MATCH_CEQL( {q} )"))
        assert on == off and on
        assert "Filter" in plan_on and "__ceql_stream" in plan_on
        assert "Filter" not in plan_off
        merged = [{**r, "type": "sells", "stream": "sells"} for r in sells] + \
                 [{**r, "type": "buys", "stream": "buys"} for r in buys]
        # the ids hash the tables' columns; the type and the stream are ceql's own there
        assert spark_rows(on, ("b", "s"), partition=("name",)) == \
            engine(q, merged, partition=("name",), columns=("name", "price", "ts", "seq", "qty"))
    finally:
        spark.catalog.dropTempView("sells")
        spark.catalog.dropTempView("buys")


def test_a_table_without_type_column(spark: Any) -> None:
    spark.createDataFrame([(float(k), k) for k in range(12)], "ts double, v int") \
        .createOrReplaceTempView("ping")
    try:
        def call(q: str) -> Any:
            return spark.sql(f"SELECT * FROM MATCH_CEQL(TABLE(ping), query => {sql_string(q)})")
        filtered = "SELECT * FROM ping WHERE ping AS p ; ping AS q FILTER p[v > 8] AND q[v > 9]"
        on, off, plan_on, _ = _both(spark, lambda: call(filtered))
        assert on == off
        assert [(r.p[0].v, r.q[0].v) for r in sorted(on, key=lambda r: (r.p[0].v, r.q[0].v))] \
            == [(9, 10), (9, 11), (10, 11)]
        assert "Filter" in plan_on
        # the table's own type, no condition: nothing to filter
        _, _, plan_on, _ = _both(spark, lambda: call("SELECT * FROM ping WHERE ping ; ping"))
        assert "Filter" not in plan_on
    finally:
        spark.catalog.dropTempView("ping")


# ---------------------------------------------------------------- what could tell them apart

def test_a_null_time_is_still_reported(spark: Any) -> None:
    df = spark.createDataFrame([(0, "A", None), (1, "B", 2.0), (2, "Z", None)],
                               "seq int, type string, ts double")
    spark.conf.set(CONF, "true")
    with pytest.raises(PythonException, match="the time column 'ts' is NULL in 2 row"):
        cs.match(df, "SELECT * FROM t WHERE A ; B").collect()


def test_a_nan_time_is_still_reported(spark: Any) -> None:
    """A NaN time is the engine's error; the filter must not drop the row that shows it."""
    df = spark.createDataFrame([(0, "A", 1.0), (1, "Z", math.nan), (2, "B", 3.0)],
                               "seq int, type string, ts double")
    for on in ("true", "false"):
        spark.conf.set(CONF, on)
        # (a few rows go the row path, which writes nan; larger batches the Arrow path: NaN)
        with pytest.raises(PythonException, match=r"(?i)Event 2 has time nan"):
            cs.match(df, "SELECT * FROM t WHERE A ; B").collect()


def test_strings_under_escaped_string_literals(spark: Any) -> None:
    """``spark.sql.parser.escapedStringLiterals`` reads ``\\'`` and ``\\\\`` differently."""
    rows = [{"seq": 0, "type": "A", "name": "O'Brien", "ts": 1.0},
            {"seq": 1, "type": "A", "name": "x\\y", "ts": 2.0},
            {"seq": 2, "type": "A", "name": "x\\'y", "ts": 3.0},
            {"seq": 3, "type": "B", "name": "z", "ts": 4.0}]
    df = spark.createDataFrame(rows, "seq int, type string, name string, ts double")
    q = ("SELECT * FROM t WHERE A AS p ; B FILTER p[name = 'O''Brien' OR name IN {'x\\y'} "
         "OR name >= 'x\\''']")
    want = spark_rows(cs.match(df, q).collect(), ("p",))
    assert sorted(dict(b)["p"] for _, _, b in want) == [(0,), (1,), (2,)]
    spark.conf.set("spark.sql.parser.escapedStringLiterals", "true")
    for on in ("true", "false"):
        spark.conf.set(CONF, on)
        assert spark_rows(cs.match(df, q).collect(), ("p",)) == want


def test_columns_whose_names_differ_only_in_case(spark: Any) -> None:
    df = spark.createDataFrame([("A", 1, 5, 1.0), ("B", 2, 6, 2.0), ("A", 0, 9, 3.0),
                                ("B", 3, 0, 4.0)], "type string, v int, V int, ts double")
    q = "SELECT * FROM t WHERE A AS p ; B AS q FILTER p[v > 0] AND q[V < 6]"
    on, off, plan_on, _ = _both(spark, lambda: cs.match(df, q))
    assert on == off
    assert [(r.p[0].ts, r.q[0].ts) for r in on] == [(1.0, 4.0)]
    assert "Filter" in plan_on  # the types are still checked


def test_a_char_column_compares_without_padding(spark: Any, tmp_path: Any) -> None:
    """Spark pads CHAR(n) comparisons (``'ab ' = 'ab'``); the engine sees ``'ab '``."""
    location = (tmp_path / "chars").as_uri()
    spark.sql(f"CREATE TABLE ceql_chars (type STRING, c CHAR(3), ts DOUBLE) USING parquet "
              f"LOCATION '{location}'")
    try:
        spark.sql("INSERT INTO ceql_chars VALUES ('A', 'ab', 1.0), ('B', 'zz', 2.0)")
        for cond, n in [("p[c != 'ab']", 1), ("p[c = 'ab']", 0), ("p[c = 'ab ']", 1)]:
            q = f"SELECT * FROM ceql_chars WHERE A AS p ; B FILTER {cond}"
            sql = f"SELECT * FROM MATCH_CEQL(TABLE(ceql_chars), query => {sql_string(q)})"
            on, off, _, _ = _both(spark, lambda sql=sql: spark.sql(sql))
            assert on == off
            assert len(on) == n, cond
    finally:
        spark.sql("DROP TABLE IF EXISTS ceql_chars")


def test_char_and_ambiguous_columns_are_not_written() -> None:
    schema = StructType([
        StructField("type", StringType()),
        StructField("c", StringType(), metadata={"__CHAR_VARCHAR_TYPE_STRING": "char(3)"}),
        StructField("w", StringType(), metadata={"__CHAR_VARCHAR_TYPE_STRING": "varchar(3)"}),
        StructField("v", IntegerType()), StructField("V", IntegerType()),
        StructField("ts", DoubleType())])
    q = "SELECT * FROM s WHERE A AS p FILTER p[c != 'ab' AND w != 'ab' AND v > 1 AND V < 2]"
    assert written(q, schema) == \
        "((coalesce(`type` = 'A', FALSE) AND `w` != 'ab')) OR `ts` IS NULL OR isnan(`ts`)"

