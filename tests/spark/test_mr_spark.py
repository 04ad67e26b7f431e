"""MATCH_RECOGNIZE in Spark (issue 30, items 1 and 3): ``MATCH_RECOGNIZE_TABLE`` in SQL and
``ceql.spark.match_recognize`` give what the Python engine gives on the same rows — every
worked example of docs/match_recognize.md (tests/test_mr_reference.py's tests, run through
Spark), random queries of tests/mr_strategies.py —; DEFINE and MEASURES take Spark's own
expressions (built-ins outside the Python subset, CASE, casts, interval arithmetic), checked
against answers computed by hand; the output's columns and types are the standard's; errors
come back as ceql's through ``ceql.spark.unwrap``."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from pyspark.sql.types import (
    BooleanType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
)

import ceql
import ceql.spark as cs
import test_mr_reference as worked
from ceql.frontends.mr import ast as A
from ceql.frontends.mr import errors as front_errors
from ceql.frontends.mr import format_body, parse_body
from ceql.mr import MatchRecognizeQuery
from ceql.mr import errors as engine_errors
from ceql.spark.udtf.call import sql_string
from mr_strategies import cases

pytestmark = pytest.mark.spark

#: The column that keeps the rows' input order in Spark (their tie_break).
POS = "pos__"
#: The measure that gives a body without output columns one.
NUM = "num__"

_SESSION: list[Any] = []


# ---------------------------------------------------------------- running a body in Spark

def _spark_type(values: Sequence[object]) -> str:
    v = next((x for x in values if x is not None), None)
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, float):
        return "double"
    if isinstance(v, Decimal):
        return "decimal(18, 6)"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dt.datetime):
        return "timestamp_ntz"
    return "bigint"  # integers, and columns of NULLs only


def frame(spark: Any, rows: Sequence[dict[str, object]]) -> Any:
    """``rows`` as a DataFrame (types from the values), with their positions in ``POS``."""
    names = list(dict.fromkeys(k for r in rows for k in r)) or ["x"]
    schema = ", ".join(f"`{n}` {_spark_type([r.get(n) for r in rows])}" for n in names)
    data = [(*(r.get(n) for n in names), i) for i, r in enumerate(rows)]
    return spark.createDataFrame(data, f"{schema}, {POS} bigint")


def _key(values: Sequence[object]) -> tuple[object, ...]:
    return tuple(("nan",) if isinstance(v, float) and math.isnan(v) else v for v in values)


def _in_engine_order(body: A.MatchRecognize, rows: Sequence[dict[str, object]],
                     got: list[dict[str, object]]) -> list[dict[str, object]]:
    """Spark's output rows (a partition's contiguous and in order) with the partitions in the
    order of their first input row, as the Python engine gives them."""
    lower = {k.lower(): k for r in rows for k in r}
    cols = [lower.get(c.lower(), c) for c in body.partition_by]
    out_cols = list(body.partition_by) if body.rows_per_match == "ONE" else cols
    first: dict[tuple[object, ...], int] = {}
    for i, r in enumerate(rows):
        first.setdefault(_key([r.get(c) for c in cols]), i)
    groups: dict[tuple[object, ...], list[dict[str, object]]] = {}
    for r in got:
        groups.setdefault(_key([r.get(c) for c in out_cols]), []).append(r)
    return [r for k in sorted(groups, key=lambda k: first.get(k, -1)) for r in groups[k]]


_ERRORS: dict[str, type[ceql.CeqlError]] = {
    c.__name__: c for c in (*(getattr(front_errors, n) for n in front_errors.__all__),
                            *(getattr(engine_errors, n) for n in engine_errors.__all__),
                            ceql.CeqlSyntaxError, ceql.CeqlValidationError)
    if isinstance(c, type) and issubclass(c, ceql.CeqlError)}


def ceql_error(e: BaseException) -> ceql.CeqlError:
    """ceql's error in Spark's exception, as the class its message names."""
    found = cs.unwrap(e)
    assert found is not None, e
    m = re.search(r"\b(\w+Error): ", str(found))
    cls = _ERRORS.get(m.group(1)) if m else None
    if cls is None or m is None:
        return found
    return cls(str(found)[m.end():])


def in_spark(text: str, rows: Sequence[dict[str, object]], *, sql: bool) -> list[dict[str, Any]]:
    """MATCH_RECOGNIZE ``text`` over ``rows`` in Spark (SQL's table function, or the
    DataFrame API), ties in input order, partitions in the engine's order."""
    spark = _SESSION[0]
    df = frame(spark, rows)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cs.TieOrderWarning)
            if sql:
                df.createOrReplaceTempView("mr_input")
                out = spark.sql("SELECT * FROM MATCH_RECOGNIZE_TABLE(TABLE(mr_input), body => "
                                f"{sql_string(text)}, tie_break => '{POS}')")
            else:
                out = cs.match_recognize(df, text, tie_break=POS)
            got = [r.asDict() for r in out.collect()]
    except ceql.CeqlError:
        raise
    except Exception as e:
        raise ceql_error(e) from None
    for r in got:
        r.pop(POS, None)
    body = parse_body(text)
    return _in_engine_order(body, rows, got)


def _evaluate(sql: bool) -> Callable[[A.MatchRecognize, Sequence[dict[str, object]]],
                                     list[dict[str, Any]]]:
    def evaluate(body: A.MatchRecognize, rows: Sequence[dict[str, object]]
                 ) -> list[dict[str, Any]]:
        if not rows:
            return []
        if body.rows_per_match == "ONE" and not body.partition_by and not body.measures:
            # a Spark table has a column at least: count the matches in one, then drop it
            numbered = dataclasses.replace(body, measures=(A.Measure(A.MatchNumber(), NUM),))
            return [{} for _ in in_spark(format_body(numbered), rows, sql=sql)]
        return in_spark(format_body(body), rows, sql=sql)
    return evaluate


@pytest.fixture(autouse=True, scope="module")
def _session(spark: Any) -> Iterator[None]:
    _SESSION[:] = [spark]
    yield
    _SESSION.clear()


# ---------------------------------------------------------------- the worked examples

# Every example of tests/test_mr_reference.py, its ``evaluate`` replaced by Spark's: through
# the DataFrame API (the shim's path), and through SQL's table function. Left out: the random
# invariants (tested below against the engine), and two where Spark's meaning is not the
# Python subset's by design: SQRT is one of Spark's functions, and Spark 4 raises on a cast of
# 'nope' to INT and on x / 0 (ANSI mode), where the Python engine gives NULL.
_SPARK_DIFFERS = {"test_unsupported_functions_are_named", "test_functions_and_operators"}
_NOT_EXAMPLES = {"test_the_row_generator_draws",
                 "test_random_queries_terminate_and_keep_the_contracts_invariants",
                 "test_preferment_agrees_with_pythons_re", *_SPARK_DIFFERS}
_EXAMPLES = [n for n, t in vars(worked).items()
             if n.startswith("test_") and n not in _NOT_EXAMPLES and callable(t)]


@pytest.fixture
def through(request: pytest.FixtureRequest) -> Iterator[None]:
    saved = worked.evaluate
    worked.evaluate = _evaluate(request.param == "sql")
    yield
    worked.evaluate = saved


def _params(name: str) -> list[Any]:
    marks = getattr(vars(worked)[name], "pytestmark", [])
    params = [m for m in marks if m.name == "parametrize"]
    if not params:
        return [()]
    _, values = params[0].args
    return [v if isinstance(v, tuple) else (v,) for v in values]


# Each case through one surface, the two taking turns: what differs between them is the
# surface alone (both hand Spark the same table function call), which test_mr_inline tests.
_CASES = [(n, p, ("dataframe", "sql")[i % 2])
          for i, (n, p) in enumerate((n, p) for n in _EXAMPLES for p in _params(n))]


@pytest.mark.parametrize(("name", "args", "through"), _CASES,
                         ids=[f"{n}{list(p)}-{t}" for n, p, t in _CASES], indirect=["through"])
def test_worked_examples_in_spark(through: None, name: str, args: tuple[object, ...]) -> None:
    vars(worked)[name](*args)


def test_the_worked_examples_are_all_there() -> None:
    assert len(_EXAMPLES) > 40
    assert {t for _, _, t in _CASES} == {"dataframe", "sql"}
    assert "test_oracle_ticker_v_shapes" in _EXAMPLES


# ---------------------------------------------------------------- random queries

@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(cases())
def test_random_queries_give_the_engines_output(
        case: tuple[A.MatchRecognize, list[dict[str, object]]]) -> None:
    body, rows = case
    if not rows:
        return
    text = format_body(body)

    def outcome(f: Callable[[], list[dict[str, Any]]]) -> str:
        try:
            return repr([sorted(r.items()) for r in f()])
        except front_errors.MatchSkipError:  # which partition's error comes first may differ
            return "MatchSkipError"

    if body.rows_per_match == "ONE" and not body.partition_by and not body.measures:
        # rows without columns: the engine's are empty mappings; a Spark table needs a column
        with pytest.raises(front_errors.ClauseError, match="has no output column"):
            in_spark(text, rows, sql=False)
        return
    expected = outcome(lambda: MatchRecognizeQuery(body).run(rows))
    # the engine's values are Spark's without ANSI mode (a division by zero is NULL); in ANSI
    # mode Spark raises on any row its part of a body divides by zero, matched or not
    # (docs/spark.md), so the two are compared with ANSI mode off
    conf = _SESSION[0].conf
    ansi = conf.get("spark.sql.ansi.enabled")
    conf.set("spark.sql.ansi.enabled", "false")
    try:
        assert outcome(lambda: in_spark(text, rows, sql=False)) == expected, text
    finally:
        conf.set("spark.sql.ansi.enabled", ansi)


# ---------------------------------------------------------------- Spark's expressions

T0 = dt.datetime(2024, 1, 1, 9, 58, 0)
EVENTS = [{"id": i, "name": n, "ts": T0 + dt.timedelta(minutes=m), "price": Decimal(p)}
          for i, (n, m, p) in enumerate([("abx", 0, "10.50"), ("ABy", 1, "9.25"),
                                         ("zz", 2, "11.00"), ("abq", 3, "12.75"),
                                         ("ab", 4, "12.00"), ("cd", 130, "1.00")])]
EVENTS_SCHEMA = "id bigint, name string, ts timestamp_ntz, price decimal(10, 2)"


def events(spark: Any) -> Any:
    return spark.createDataFrame([tuple(r.values()) for r in EVENTS], EVENTS_SCHEMA)


def both(spark: Any, body: str, df: Any | None = None) -> list[dict[str, Any]]:
    """The rows of ``body`` over EVENTS (or ``df``), through SQL, the DataFrame API and the
    Python UDTF without the shim, which must agree; in the order of their ``repr``."""
    df = events(spark) if df is None else df
    df.createOrReplaceTempView("mr_events")
    a = spark.sql(f"SELECT * FROM MATCH_RECOGNIZE_TABLE(TABLE(mr_events), "
                  f"body => {sql_string(body)})")
    b = cs.match_recognize(df, body)
    c = cs.match_recognize(df, body, jvm=False)  # Spark's own path for a Python UDTF
    assert a.schema == b.schema == c.schema
    rows_a = sorted((r.asDict() for r in a.collect()), key=repr)
    assert sorted((r.asDict() for r in b.collect()), key=repr) == rows_a
    assert sorted((r.asDict() for r in c.collect()), key=repr) == rows_a
    return rows_a


def test_define_with_spark_functions(spark: Any) -> None:
    # rows 0, 1, 3, 4 start with 'ab' in any case; of those at 10 o'clock: 3 (10:01) and 4
    out = both(spark, """ORDER BY ts MEASURES FIRST(A.id) AS first_id, COUNT(*) AS n
        PATTERN (A+) DEFINE A AS upper(name) LIKE 'AB%' AND date_format(ts, 'HH') = '10'""")
    assert out == [{"first_id": 3, "n": 2}]


def test_case_casts_and_interval_arithmetic(spark: Any) -> None:
    # B within a minute and a half of the row before, and dearer by CASE's measure
    out = both(spark, """ORDER BY ts
        MEASURES A.id AS a, LAST(B.id) AS b,
          CASE WHEN LAST(B.price) > A.price THEN 'up' ELSE 'down' END AS way,
          CAST(LAST(B.price) AS INT) AS whole, LAST(B.ts) - INTERVAL 1 MINUTE AS before_b
        AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B+)
        DEFINE B AS B.ts - INTERVAL '90' SECOND <= PREV(B.ts)
                    AND CAST(B.price AS INT) >= CAST(PREV(B.price) AS INT) - 1""")
    # from row 0: B 1 (9 >= 10 - 1), 2 (11 >= 8), 3 (12 >= 10), 4 (12 >= 11), not 5 (2 h later)
    assert out == [{"a": 0, "b": 4, "way": "up", "whole": 12,
                    "before_b": dt.datetime(2024, 1, 1, 10, 1)}]


def test_the_spark_guides_example(spark: Any) -> None:
    # docs/spark.md, "Spark's expressions": A+ is rows 3 and 4 (10 o'clock, 'AB…'); no B
    # follows row 4 within 90 s, so A+ gives row 4 back to B (10:02 is 60 s after 10:01)
    out = both(spark, """ORDER BY ts
      MEASURES FIRST(A.id) AS first_id, COUNT(*) AS n, LAST(B.ts) - INTERVAL 1 MINUTE AS before_b
      PATTERN (A+ B)
      DEFINE A AS upper(name) LIKE 'AB%' AND date_format(ts, 'HH') = '10',
             B AS B.ts - INTERVAL '90' SECOND <= PREV(B.ts) AND CAST(B.price AS INT) > 10""")
    assert out == [{"first_id": 3, "n": 2, "before_b": dt.datetime(2024, 1, 1, 10, 1)}]


def test_partitions_with_spark_expressions(spark: Any) -> None:
    df = events(spark).selectExpr("*", "id % 2 AS g")
    out = both(spark, """PARTITION BY g ORDER BY ts
        MEASURES COUNT(*) AS n, LAST(upper(name)) AS last_name
        PATTERN (A+) DEFINE A AS length(name) <= 3""", df)
    assert out == [{"g": 0, "n": 3, "last_name": "AB"}, {"g": 1, "n": 3, "last_name": "CD"}]


def test_row_local_measures_keep_nulls_and_defaults(spark: Any) -> None:
    # COALESCE over a variable's row that does not exist is the default, not NULL; an empty
    # match's measures see no row either
    out = both(spark, """ORDER BY id
        MEASURES MATCH_NUMBER() AS m, COALESCE(B.price, -1) AS bp, B.name IS NULL AS no_b,
                 length(name) + 1 AS len1, COALESCE(upper(name), 'none') AS un
        PATTERN (A B?) DEFINE A AS id IN (0, 3), B AS name = 'ABy'""")
    assert out == [
        {"m": 1, "bp": Decimal("9.25"), "no_b": False, "len1": 4, "un": "ABY"},
        {"m": 2, "bp": Decimal("-1.00"), "no_b": True, "len1": 4, "un": "ABQ"}]
    empty = both(spark, """ORDER BY id MEASURES MATCH_NUMBER() AS m,
        COALESCE(upper(name), 'none') AS un, COALESCE(length(name), 0) + 1 AS l
        PATTERN (A*) DEFINE A AS name LIKE 'a%'""")
    assert [(r["m"], r["un"], r["l"]) for r in empty] == [
        (1, "ABX", 4), (2, "none", 1), (3, "none", 1), (4, "AB", 3), (5, "none", 1)]


def test_navigation_and_aggregates_of_spark_expressions(spark: Any) -> None:
    out = both(spark, """ORDER BY id
        MEASURES SUM(length(name) * 2) AS s, LAST(upper(name), 1) AS second_last,
                 PREV(concat(name, '!')) AS before, MAX(hour(ts)) AS h
        PATTERN (A{3}) DEFINE A AS id > 0""")
    # one match, rows 1–3 (ABy, zz, abq); then rows 4 and 5 are too few; PREV of the current
    # (last) row is row 2
    assert out == [{"s": 2 * (3 + 2 + 3), "second_last": "ZZ", "before": "zz!", "h": 10}]


def test_measure_types_are_sparks(spark: Any) -> None:
    df = events(spark)
    out = cs.match_recognize(df, """PARTITION BY name ORDER BY ts
        MEASURES LAST(B.price) AS lp, COUNT(*) AS n, AVG(id) AS ai, AVG(price) AS ap,
                 SUM(price) AS sp, SUM(id) AS si, CLASSIFIER() AS c, MATCH_NUMBER() AS m,
                 price > 10 AS dear, upper(name) AS u, LAST(B.ts) AS t
        PATTERN (A B*)""")
    assert out.schema == StructType([
        StructField("name", StringType()), StructField("lp", DecimalType(10, 2)),
        StructField("n", LongType()), StructField("ai", DoubleType()),
        StructField("ap", DecimalType(14, 6)), StructField("sp", DecimalType(20, 2)),
        StructField("si", LongType()), StructField("c", StringType()),
        StructField("m", LongType()), StructField("dear", BooleanType()),
        StructField("u", StringType()), StructField("t", TimestampNTZType())])
    rows = {r["name"]: r.asDict() for r in out.collect()}
    assert rows["abx"] == {"name": "abx", "lp": None, "n": 1, "ai": 0.0,
                           "ap": Decimal("10.500000"), "sp": Decimal("10.50"), "si": 0,
                           "c": "A", "m": 1, "dear": True, "u": "ABX", "t": None}
    every = cs.match_recognize(df, """ORDER BY ts MEASURES CLASSIFIER() AS c, COUNT(*) AS n
        ALL ROWS PER MATCH PATTERN (A B)""")
    assert [f.name for f in every.schema.fields] == ["ts", "c", "n", "id", "name", "price"]
    assert every.schema["n"].dataType == LongType()
    assert every.schema["id"].dataType == LongType()


@pytest.mark.parametrize("expr", [
    "price * 2", "price + id", "price / 3", "price + 1.5", "id / 2", "price * price",
    "CASE WHEN id > 1 THEN id ELSE 2.5 END", "COALESCE(price, -1)", "ROUND(price, 1)",
    "FLOOR(price)", "FLOOR(id / 2)", "length(name)", "to_date(ts)", "ts - INTERVAL 1 MINUTE",
    "price % 3", "-price", "upper(name) || '!'", "CAST(id AS DECIMAL(5, 1))", "id + 1e0",
    "hour(ts)", "abs(price - 20)", "GREATEST(id, 2)"])
def test_derived_types_are_the_ones_spark_gives(spark: Any, expr: str) -> None:
    from ceql.spark.udtf.mr_types import expr_type

    df = events(spark)
    types = {f.name: f.dataType for f in df.schema.fields}
    measure = parse_body(f"MEASURES {expr} AS m PATTERN (A)").measures[0].expr
    assert expr_type(measure, types.__getitem__) == df.selectExpr(expr).schema[0].dataType


def test_a_cast_says_the_type_of_an_unknown_function(spark: Any) -> None:
    with pytest.raises(ceql.CeqlError, match=r"CAST\(SOUNDEXISH\(…\) AS <type>\)"):
        cs.match_recognize(events(spark), "MEASURES soundexish(A.name) AS s PATTERN (A)")


# ---------------------------------------------------------------- ties and order

def test_tie_break_orders_rows_the_order_by_leaves_equal(spark: Any) -> None:
    rows = [{"g": 1, "o": 1, "seq": s, "v": v} for s, v in [(2, "b"), (0, "a"), (1, "c")]]
    df = spark.createDataFrame([tuple(r.values()) for r in rows], "g int, o int, seq int, v string")
    body = "ORDER BY o MEASURES CLASSIFIER() AS c ALL ROWS PER MATCH PATTERN (A B C)"
    out = cs.match_recognize(df, body, tie_break="seq").collect()
    assert [(r["seq"], r["c"]) for r in out] == [(0, "A"), (1, "B"), (2, "C")]
    by_seq = sorted(rows, key=lambda r: r["seq"])
    assert [r.asDict() for r in out] == MatchRecognizeQuery(
        parse_body(body)).run(by_seq)


def test_a_body_without_order_by_warns_on_the_driver(spark: Any) -> None:
    with pytest.warns(cs.TieOrderWarning, match="no ORDER BY"):
        cs.match_recognize(events(spark), "MEASURES COUNT(*) AS n PATTERN (A)")


# ---------------------------------------------------------------- errors

def _sql_error(spark: Any, body: str) -> ceql.CeqlError:
    events(spark).createOrReplaceTempView("mr_events")
    with pytest.raises(Exception) as info:
        spark.sql("SELECT * FROM MATCH_RECOGNIZE_TABLE(TABLE(mr_events), "
                  f"body => {sql_string(body)})").collect()
    found = cs.unwrap(info.value)
    assert isinstance(found, ceql.CeqlError), info.value
    return found


def test_a_syntax_error_has_its_caret(spark: Any) -> None:
    body = "PATTERN (A B+ DEFINE B AS price > 1"
    e = _sql_error(spark, body)
    assert "^" in str(e) and "MATCH_RECOGNIZE_TABLE" in str(e)
    with pytest.raises(ceql.CeqlSyntaxError):
        cs.match_recognize(events(spark), body)


def test_an_unknown_column_is_named_with_its_caret(spark: Any) -> None:
    body = "ORDER BY ts PATTERN (A B) DEFINE B AS B.cost > A.price"
    e = _sql_error(spark, body)
    assert "No column 'cost'" in str(e) and "id, name, ts, price" in str(e)
    assert "^^^^" in str(e)
    with pytest.raises(engine_errors.UnknownColumnError, match="No column 'cost'"):
        cs.match_recognize(events(spark), body)


def test_a_function_between_rows_outside_the_python_subset_is_named(spark: Any) -> None:
    body = "ORDER BY ts MEASURES sqrt(LAST(B.price) - A.price) AS s PATTERN (A B)"
    e = _sql_error(spark, body)
    assert "SQRT" in str(e) and "PREV(f(x)) rather than f(PREV(x))" in str(e)
    with pytest.raises(front_errors.UnsupportedFunctionError, match="SQRT"):
        cs.match_recognize(events(spark), body)
    # the same function over one row's columns is Spark's
    assert both(spark, "ORDER BY ts MEASURES LAST(sqrt(B.price)) - A.price AS s "
                       "PATTERN (A B) DEFINE A AS id = 2")[0]["s"] == pytest.approx(
                           math.sqrt(12.75) - 11.0)


def test_a_body_with_no_output_column_is_refused(spark: Any) -> None:
    e = _sql_error(spark, "PATTERN (A)")
    assert "add a measure" in str(e)


def test_partitioning_the_table_argument_is_refused(spark: Any) -> None:
    events(spark).createOrReplaceTempView("mr_events")
    with pytest.raises(Exception) as info:
        spark.sql("SELECT * FROM MATCH_RECOGNIZE_TABLE(TABLE(mr_events) PARTITION BY name, "
                  "body => 'PATTERN (A)')").collect()
    assert "inside the body" in str(cs.unwrap(info.value))


def test_a_task_error_names_its_kind(spark: Any) -> None:
    df = spark.createDataFrame([(1, 1), (2, 2)], "t int, x int")
    with pytest.raises(Exception) as info:
        cs.match_recognize(df, "ORDER BY t MEASURES COUNT(*) AS n "
                           "AFTER MATCH SKIP TO FIRST A PATTERN (A B)").collect()
    assert isinstance(ceql_error(info.value), front_errors.MatchSkipError)


def test_integer_columns_stay_integers(spark: Any) -> None:
    df = spark.createDataFrame([(1, 5), (2, 7)], "t int, x int")
    out = cs.match_recognize(df, "ORDER BY t MEASURES LAST(B.x) - A.x AS d, A.x * 2 AS dbl "
                                 "PATTERN (A B)")
    assert out.schema["d"].dataType == IntegerType()
    assert [r.asDict() for r in out.collect()] == [{"d": 2, "dbl": 10}]
