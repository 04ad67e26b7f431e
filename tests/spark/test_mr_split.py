"""Which parts of MATCH_RECOGNIZE's expressions Spark computes (ceql.spark.udtf.mr_split), the
Spark SQL written for them, the body the engine then runs, the Spark types of measures
(ceql.spark.udtf.mr_types), and a partition's runner (ties, types, batches) — without a Spark
session."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DateType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ceql.frontends.mr import ast as A
from ceql.frontends.mr import parse_body
from ceql.mr import MatchRecognizeQuery
from ceql.spark.udtf.batching import BatchLimits
from ceql.spark.udtf.call import CallInfo
from ceql.spark.udtf.mr_plan import MrSpec, plan_recognize
from ceql.spark.udtf.mr_runner import MrRunner
from ceql.spark.udtf.mr_split import ROW_COLUMN, Split, bind, split_body
from ceql.spark.udtf.mr_types import UnknownType, expr_type

TYPES: dict[str, DataType] = {"x": IntegerType(), "name": StringType(),
                              "price": DecimalType(10, 2), "ts": TimestampType(),
                              "d": DoubleType()}


def split(text: str) -> Split:
    return split_body(parse_body(text), lambda n: n, lambda n: TYPES[n].simpleString())


def hidden_sql(s: Split) -> list[str]:
    return [h.sql for h in s.hidden]


def test_a_condition_of_the_current_row_is_sparks_whole() -> None:
    s = split("PATTERN (A) DEFINE A AS upper(name) LIKE 'AB%' AND A.x > 1")
    assert hidden_sql(s) == ["((UPPER(`name`) LIKE 'AB%') AND (`x` > 1))"]
    assert s.body.defines[0].condition == A.Column(None, s.hidden[0].alias)
    assert s.select == ((s.hidden[0].sql, s.hidden[0].alias),)  # no default: no ROW_COLUMN


def test_what_relates_rows_stays_with_the_engine() -> None:
    s = split("PATTERN (A B) DEFINE B AS B.ts - INTERVAL '90' SECOND <= PREV(B.ts) "
              "AND upper(name) <> upper(A.name)")
    sqls = hidden_sql(s)
    assert sqls[0] == ("(`ts` - INTERVAL '0 00:01:30.000000' DAY TO SECOND)")
    assert "UPPER(`name`)" in sqls
    navs = [n for n in A.walk(s.body.defines[0].condition) if isinstance(n, A.Navigation)]
    assert [(n.kind, n.arg) for n in navs] == [("PREV", A.Column("B", "ts"))]
    # A's row may not exist yet: its part has a default, the same over NULLs
    a_part = next(h for h in s.hidden if h.default is not None)
    default = next(h for h in s.hidden if h.alias == a_part.default)
    assert default.constant and default.sql == "UPPER(CAST(NULL AS string))"
    assert s.select[-1] == ("TRUE", ROW_COLUMN)


def test_navigation_and_aggregate_arguments_are_one_row() -> None:
    s = split("MEASURES PREV(concat(name, '!')) AS p, SUM(A.x * 2) AS s, "
              "LAST(B.x) - A.x AS d PATTERN (A B)")
    p, sm, d = (m.expr for m in s.body.measures)
    assert isinstance(p, A.Navigation) and isinstance(p.arg, A.Column) and p.arg.var is None
    assert isinstance(sm, A.Aggregate) and sm.arg == A.Column("A", sm.arg.name)  # type: ignore[union-attr]
    assert d == parse_body("MEASURES LAST(B.x) - A.x AS d PATTERN (A B)").measures[0].expr
    assert all(h.default is None for h in s.hidden)


def test_constants_and_defaults_are_bound_from_a_row() -> None:
    s = split("MEASURES COALESCE(B.x, -1) AS b, lower('AB') AS l PATTERN (A B?)")
    b_part = next(h for h in s.hidden if h.default is not None)
    const = next(h for h in s.hidden if h.sql == "LOWER('AB')")
    first = {b_part.default: -1, const.alias: "ab"}
    body = bind(s, first)
    b, low = (m.expr for m in body.measures)
    assert low == A.Literal("ab")
    assert isinstance(b, A.Case) and b.whens[0][1] == A.Literal(-1)
    rows = [{"x": 5, b_part.alias: 5, ROW_COLUMN: True, const.alias: "ab",
             b_part.default: -1}]
    assert MatchRecognizeQuery(body).run_sorted(rows) == [{"b": -1, "l": "ab"}]


def test_a_null_default_leaves_the_column_as_it_is() -> None:
    s = split("MEASURES B.x + 1 AS b PATTERN (A B?)")
    part = next(h for h in s.hidden if h.default is not None)
    assert part.sql == "(`x` + 1)"
    body = bind(s, {part.default: None})
    assert body.measures[0].expr == A.Column("B", part.alias)


@pytest.mark.parametrize(("measure", "want"), [
    ("LAST(B.price)", DecimalType(10, 2)), ("COUNT(*)", LongType()), ("AVG(x)", DoubleType()),
    ("AVG(price)", DecimalType(14, 6)), ("SUM(price)", DecimalType(20, 2)),
    ("SUM(x)", LongType()), ("SUM(d)", DoubleType()), ("MIN(name)", StringType()),
    ("CLASSIFIER()", StringType()), ("MATCH_NUMBER()", LongType()),
    ("x + 1", IntegerType()), ("x / 2", DoubleType()), ("price * 2", DecimalType(12, 2)),
    ("price + x", DecimalType(13, 2)), ("price / 3", DecimalType(14, 6)),
    ("price + 1.5", DecimalType(11, 2)), ("d * x", DoubleType()),
    ("LAST(ts) - FIRST(ts)", DayTimeIntervalType()), ("ts - INTERVAL 1 MINUTE", TimestampType()),
    ("x > 1 AND name LIKE 'a%'", BooleanType()), ("name || '!'", StringType()),
    ("CASE WHEN x > 1 THEN x ELSE 2.5 END", DecimalType(11, 1)),
    ("COALESCE(B.price, -1)", DecimalType(12, 2)), ("CAST(x AS DECIMAL(5, 1))", DecimalType(5, 1)),
    ("to_date(ts)", DateType()), ("ROUND(price, 1)", DecimalType(10, 1)),
    ("FLOOR(d)", LongType()), ("length(name)", IntegerType()), ("NULL", None),
])
def test_measure_types_follow_sparks_rules(measure: str, want: DataType | None) -> None:
    body = parse_body(f"MEASURES {measure} AS m PATTERN (A B)")
    got = expr_type(body.measures[0].expr, TYPES.__getitem__)
    assert got == want if want is not None else got.typeName() == "void"


def test_an_unknown_function_asks_for_a_cast() -> None:
    body = parse_body("MEASURES made_up(x) AS m PATTERN (A)")
    with pytest.raises(UnknownType, match=r"CAST\(MADE_UP\(…\) AS <type>\)"):
        expr_type(body.measures[0].expr, TYPES.__getitem__)


def test_literals_become_sparks() -> None:
    s = split("PATTERN (A) DEFINE A AS ts > TIMESTAMP '2024-01-01 09:00:00' AND d < 1e3 "
              "AND price <> 1.50 AND name <> 'it''s'")
    sql = s.hidden[0].sql
    assert "TIMESTAMP '2024-01-01 09:00:00'" in sql and "1000.0D" in sql
    assert "1.50BD" in sql and "CAST(X'" in sql  # a quote: the text's bytes


# ---------------------------------------------------------------- a partition's runner


def _runner(body: str, schema: StructType, **options: str) -> tuple[MrRunner, MrSpec]:
    spec = plan_recognize(schema, {"body": body, **options}, CallInfo())
    return MrRunner(spec, lambda first: MatchRecognizeQuery(bind(spec.split, first)), ()), spec


SCHEMA = StructType([StructField("o", IntegerType()), StructField("v", StringType()),
                     StructField("price", DecimalType(10, 2))])


def _batch(rows: list[tuple[object, ...]], spec: MrSpec) -> pa.RecordBatch:
    """Rows as a task gets them: the input's columns, then Spark's hidden ones (computed
    here by hand for the bodies below)."""
    cols = {"o": pa.array([r[0] for r in rows], pa.int32()),
            "v": pa.array([r[1] for r in rows], pa.string()),
            "price": pa.array([r[2] for r in rows], pa.decimal128(10, 2))}
    for h in spec.split.hidden:
        assert h.sql == "UPPER(`v`)", h  # the only hidden column these bodies have
        cols[h.alias] = pa.array([str(r[1]).upper() for r in rows], pa.string())
    return pa.RecordBatch.from_pydict(cols)


def test_rows_no_key_orders_are_told_once(capsys: pytest.CaptureFixture[str]) -> None:
    runner, spec = _runner("ORDER BY o MEASURES COUNT(*) AS n PATTERN (A+)", SCHEMA)
    limits = BatchLimits()
    list(runner.feed(_batch([(1, "a", Decimal("1.00")), (1, "b", Decimal("2.00"))], spec),
                     limits))
    err = capsys.readouterr().err
    assert "TieOrderWarning" in err and "tie_break => 'v'" in err and "o = 1" in err
    out = list(runner.close(limits))
    assert out[0].to_pylist() == [{"n": 2}]
    # another body (a warning is said once per body and process)
    tied, spec = _runner("ORDER BY o MEASURES COUNT(*) AS m PATTERN (A+)", SCHEMA,
                         tie_break="price")
    list(tied.feed(_batch([(1, "a", Decimal("1.00")), (1, "b", Decimal("2.00"))], spec),
                   limits))
    assert "TieOrderWarning" not in capsys.readouterr().err


def test_the_engines_values_take_the_measures_types() -> None:
    runner, spec = _runner("ORDER BY o MEASURES AVG(price) AS ap, SUM(o) AS so, "
                           "LAST(upper(v)) AS u PATTERN (A+)", SCHEMA)
    list(runner.feed(_batch([(1, "a", Decimal("1.00")), (2, "b", Decimal("2.05"))], spec),
                     BatchLimits()))
    (batch,) = runner.close(BatchLimits())
    assert batch.schema.field("ap").type == pa.decimal128(14, 6)
    assert batch.to_pylist() == [{"ap": Decimal("1.525000"), "so": 3, "u": "B"}]


def test_output_batches_keep_within_the_row_limit() -> None:
    runner, spec = _runner("ORDER BY o MEASURES CLASSIFIER() AS c ALL ROWS PER MATCH "
                           "PATTERN (A)", SCHEMA)
    rows = [(i, "x", Decimal(i)) for i in range(5)]
    list(runner.feed(_batch(rows, spec), BatchLimits(2, 1 << 20)))
    out = list(runner.close(BatchLimits(2, 1 << 20)))
    assert [b.num_rows for b in out] == [2, 2, 1]
    assert [r["o"] for b in out for r in b.to_pylist()] == [0, 1, 2, 3, 4]
