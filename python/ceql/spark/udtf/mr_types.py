"""The Spark type of a MATCH_RECOGNIZE measure, derived in ``analyze`` from the input's schema.

``analyze`` runs without a Spark session, so it cannot ask Spark what an expression's type is;
it derives it as Spark would for what measures are made of: columns, navigation (the argument's
type), aggregates (``COUNT`` BIGINT, ``SUM`` of integers BIGINT and of decimals wider, ``AVG``
DOUBLE or a wider decimal, ``MIN``/``MAX`` the argument's), ``CLASSIFIER()`` STRING,
``MATCH_NUMBER()`` BIGINT, literals, arithmetic (Spark's promotion and decimal rules), time
arithmetic, comparisons and the other predicates (BOOLEAN), ``||`` (STRING), CASE and COALESCE
(the branches' common type), CAST (its type), and a table of Spark's common functions
(:data:`FUNCTIONS`). A measure whose type this cannot tell is refused with the advice to write
``CAST(… AS type)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    IntegralType,
    LongType,
    NullType,
    ShortType,
    StringType,
    TimestampNTZType,
    TimestampType,
)

from ceql.frontends.mr import ast as A
from ceql.spark.errors import MatchCeqlError

__all__ = ["FUNCTIONS", "cast_type", "expr_type"]

_STRING, _INT, _LONG, _DOUBLE, _BOOL = StringType(), IntegerType(), LongType(), DoubleType(), \
    BooleanType()

#: Spark functions by the type they return: a type, or ``"arg"`` (the first argument's),
#: ``"common"`` (all arguments' common type), ``"floor"`` (BIGINT, or a decimal of no scale).
FUNCTIONS: dict[str, DataType | str] = {
    **dict.fromkeys(
        ["UPPER", "LOWER", "UCASE", "LCASE", "CONCAT", "CONCAT_WS", "SUBSTR", "SUBSTRING",
         "LEFT", "RIGHT", "TRIM", "LTRIM", "RTRIM", "LPAD", "RPAD", "REPLACE", "REGEXP_REPLACE",
         "REGEXP_EXTRACT", "INITCAP", "REVERSE", "REPEAT", "FORMAT_STRING", "PRINTF",
         "DATE_FORMAT", "FROM_UNIXTIME", "TRANSLATE", "SPLIT_PART", "STRING", "HEX", "MD5",
         "SHA1", "SHA2", "BASE64", "FORMAT_NUMBER", "DAYNAME", "MONTHNAME", "TYPEOF",
         "CURRENT_USER", "UUID", "CHR", "CHAR", "SOUNDEX", "SPACE", "COLLATE"], _STRING),
    **dict.fromkeys(
        ["LENGTH", "CHAR_LENGTH", "CHARACTER_LENGTH", "OCTET_LENGTH", "BIT_LENGTH", "YEAR",
         "MONTH", "DAY", "DAYOFMONTH", "DAYOFWEEK", "DAYOFYEAR", "WEEKDAY", "WEEKOFYEAR",
         "QUARTER", "HOUR", "MINUTE", "DATEDIFF", "INSTR", "LOCATE", "POSITION", "ASCII",
         "SIGN", "INT", "SIZE", "CARDINALITY", "LEVENSHTEIN", "FIND_IN_SET"], _INT),
    **dict.fromkeys(["UNIX_TIMESTAMP", "UNIX_SECONDS", "UNIX_MILLIS", "UNIX_MICROS",
                     "BIGINT", "HASH64", "XXHASH64"], _LONG),
    **dict.fromkeys(
        ["SQRT", "CBRT", "EXP", "EXPM1", "LN", "LOG", "LOG10", "LOG2", "LOG1P", "POW", "POWER",
         "SIN", "COS", "TAN", "ASIN", "ACOS", "ATAN", "ATAN2", "SINH", "COSH", "TANH", "COT",
         "DEGREES", "RADIANS", "RAND", "RANDN", "RANDOM", "MONTHS_BETWEEN", "DOUBLE", "PI", "E",
         "HYPOT", "RINT"], _DOUBLE),
    **dict.fromkeys(
        ["STARTSWITH", "ENDSWITH", "CONTAINS", "ISNULL", "ISNOTNULL", "ISNAN", "RLIKE",
         "REGEXP_LIKE", "REGEXP", "BOOLEAN", "EQUAL_NULL", "ILIKE"], _BOOL),
    **dict.fromkeys(["TO_DATE", "DATE_ADD", "DATE_SUB", "DATEADD", "CURRENT_DATE",
                     "LAST_DAY", "NEXT_DAY", "TRUNC", "ADD_MONTHS", "MAKE_DATE", "DATE"],
                    DateType()),
    **dict.fromkeys(["TO_TIMESTAMP", "DATE_TRUNC", "CURRENT_TIMESTAMP", "NOW",
                     "TIMESTAMP_SECONDS", "TIMESTAMP_MILLIS", "TIMESTAMP_MICROS",
                     "TIMESTAMP", "FROM_UTC_TIMESTAMP", "TO_UTC_TIMESTAMP", "MAKE_TIMESTAMP",
                     "TRY_TO_TIMESTAMP"], TimestampType()),
    **dict.fromkeys(["ABS", "NEGATIVE", "POSITIVE", "ROUND", "BROUND"], "arg"),
    **dict.fromkeys(["COALESCE", "NVL", "IFNULL", "GREATEST", "LEAST", "NULLIF"], "common"),
    **dict.fromkeys(["FLOOR", "CEIL", "CEILING"], "floor"),
}

_SIMPLE: dict[str, DataType] = {
    "TINYINT": ByteType(), "BYTE": ByteType(), "SMALLINT": ShortType(), "SHORT": ShortType(),
    "INT": _INT, "INTEGER": _INT, "BIGINT": _LONG, "LONG": _LONG, "FLOAT": FloatType(),
    "REAL": FloatType(), "DOUBLE": _DOUBLE, "STRING": _STRING, "VARCHAR": _STRING,
    "CHAR": _STRING, "BOOLEAN": _BOOL, "DATE": DateType(), "TIMESTAMP": TimestampType(),
    "TIMESTAMP_LTZ": TimestampType(), "TIMESTAMP_NTZ": TimestampNTZType(),
    "BINARY": BinaryType(), "DECIMAL": DecimalType(10, 0), "DEC": DecimalType(10, 0),
    "NUMERIC": DecimalType(10, 0),
}
_DECIMAL = re.compile(r"(?:DECIMAL|DEC|NUMERIC)\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)$")
_SIZED = re.compile(r"(?:VARCHAR|CHAR)\s*\(\s*\d+\s*\)$")


class UnknownType(MatchCeqlError):
    """A measure's type that ``analyze`` cannot derive (the message says what to write)."""


def cast_type(name: str) -> DataType:
    """The Spark type ``CAST(… AS name)`` gives."""
    text = name.strip().upper()
    if text in _SIMPLE:
        return _SIMPLE[text]
    m = _DECIMAL.match(text)
    if m:
        return DecimalType(int(m.group(1)), int(m.group(2) or 0))
    if _SIZED.match(text):
        return _STRING
    raise UnknownType(f"CAST to {name} in a measure: ceql cannot tell that type's Spark type "
                      "here; cast to a simple type (BIGINT, DOUBLE, DECIMAL(p, s), STRING, "
                      "BOOLEAN, DATE, TIMESTAMP, …)")


def _bounded(p: int, s: int) -> DecimalType:
    """Spark's ``DecimalType.adjustPrecisionScale`` (precision loss allowed, the default)."""
    if p <= 38:
        return DecimalType(p, s)
    if s < 0:
        return DecimalType(38, s)
    digits = p - s
    scale = max(38 - digits, min(s, 6))
    return DecimalType(38, scale)


def _as_decimal(t: DataType) -> DecimalType | None:
    if isinstance(t, DecimalType):
        return t
    if isinstance(t, ByteType):
        return DecimalType(3, 0)
    if isinstance(t, ShortType):
        return DecimalType(5, 0)
    if isinstance(t, IntegerType):
        return DecimalType(10, 0)
    if isinstance(t, LongType):
        return DecimalType(20, 0)
    return None


_INTEGRAL_ORDER = (ByteType, ShortType, IntegerType, LongType)


def _wider(a: DataType, b: DataType) -> DataType:
    """The common type of two values (CASE branches, COALESCE, arithmetic operands)."""
    if isinstance(a, NullType):
        return b
    if isinstance(b, NullType) or a == b:
        return a
    if isinstance(a, (FloatType, DoubleType)) or isinstance(b, (FloatType, DoubleType)):
        if isinstance(a, FloatType) and isinstance(b, FloatType):
            return FloatType()
        return _DOUBLE
    if isinstance(a, IntegralType) and isinstance(b, IntegralType):
        rank = [i for i, c in enumerate(_INTEGRAL_ORDER) for t in (a, b) if isinstance(t, c)]
        return _INTEGRAL_ORDER[max(rank)]()
    da, db = _as_decimal(a), _as_decimal(b)
    if da is not None and db is not None:
        scale = max(da.scale, db.scale)
        return _bounded(max(da.precision - da.scale, db.precision - db.scale) + scale, scale)
    if isinstance(a, StringType) or isinstance(b, StringType):
        return _STRING
    if {type(a), type(b)} <= {TimestampType, TimestampNTZType, DateType}:
        return TimestampType() if TimestampType in (type(a), type(b)) else TimestampNTZType()
    return a


def _arith(op: str, a: DataType, b: DataType) -> DataType:
    temporal = (TimestampType, TimestampNTZType, DateType)
    if op == "-" and isinstance(a, temporal) and isinstance(b, temporal):
        return DayTimeIntervalType()
    if isinstance(a, temporal) and isinstance(b, DayTimeIntervalType):
        return a if not isinstance(a, DateType) else TimestampType()
    if isinstance(b, temporal) and isinstance(a, DayTimeIntervalType):
        return b if not isinstance(b, DateType) else TimestampType()
    if isinstance(a, DayTimeIntervalType) or isinstance(b, DayTimeIntervalType):
        return DayTimeIntervalType()
    if isinstance(a, NullType) and isinstance(b, NullType):
        return _DOUBLE if op == "/" else NullType()
    if isinstance(a, StringType) or isinstance(b, StringType):
        return _DOUBLE
    if isinstance(a, (FloatType, DoubleType)) or isinstance(b, (FloatType, DoubleType)):
        return _DOUBLE if op == "/" or not (isinstance(a, FloatType)
                                            and isinstance(b, FloatType)) else FloatType()
    da, db = _as_decimal(b if isinstance(a, NullType) else a), \
        _as_decimal(a if isinstance(b, NullType) else b)
    if da is None or db is None:
        return _DOUBLE
    integral = not isinstance(a, DecimalType) and not isinstance(b, DecimalType)
    if op == "/":
        if integral:
            return _DOUBLE
        scale = max(6, da.scale + db.precision + 1)
        return _bounded(da.precision - da.scale + db.scale + scale, scale)
    if integral:
        return _wider(a, b)
    p1, s1, p2, s2 = da.precision, da.scale, db.precision, db.scale
    if op in ("+", "-"):
        scale = max(s1, s2)
        return _bounded(max(p1 - s1, p2 - s2) + scale + 1, scale)
    if op == "*":
        return _bounded(p1 + p2 + 1, s1 + s2)
    # %
    scale = max(s1, s2)
    return _bounded(min(p1 - s1, p2 - s2) + scale, scale)


def _literal(v: object) -> DataType:
    import datetime
    from decimal import Decimal

    if v is None:
        return NullType()
    if isinstance(v, bool):
        return _BOOL
    if isinstance(v, int):
        return _INT if -2**31 <= v < 2**31 else _LONG if -2**63 <= v < 2**63 \
            else DecimalType(38, 0)
    if isinstance(v, Decimal):
        _, digits, exp = v.as_tuple()
        scale = max(0, -int(exp))
        return DecimalType(max(len(digits), scale, 1), scale)
    if isinstance(v, float):
        return _DOUBLE
    if isinstance(v, str):
        return _STRING
    if isinstance(v, datetime.timedelta):
        return DayTimeIntervalType()
    return TimestampType()


def _int_literal(e: A.Expr) -> DecimalType | None:
    """An integer literal's decimal type of just its digits (Spark's ``fromLiteral``)."""
    while isinstance(e, A.Negate):
        e = e.operand
    if isinstance(e, A.Literal) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return DecimalType(max(1, len(str(abs(e.value)))), 0)
    return None


def _aggregate(e: A.Aggregate, arg: DataType | None) -> DataType:
    if e.name == "COUNT" or arg is None:
        return _LONG
    if e.name in ("MIN", "MAX"):
        return arg
    if e.name == "SUM":
        if isinstance(arg, IntegralType):
            return _LONG
        if isinstance(arg, DecimalType):
            return _bounded(arg.precision + 10, arg.scale)
        if isinstance(arg, DayTimeIntervalType):
            return arg
        return _DOUBLE
    if isinstance(arg, DecimalType):  # AVG
        return _bounded(arg.precision + 4, arg.scale + 4)
    if isinstance(arg, DayTimeIntervalType):
        return arg
    return _DOUBLE


def expr_type(e: A.Expr, column: Callable[[str], DataType]) -> DataType:
    """The Spark type of measure expression ``e``; ``column`` gives an input column's type.
    Raises :class:`UnknownType` (a :class:`MatchCeqlError`) naming what it cannot type."""
    def of(x: A.Expr) -> DataType:
        return expr_type(x, column)

    if isinstance(e, A.Literal):
        return _literal(e.value)
    if isinstance(e, A.Column):
        return column(e.name)
    if isinstance(e, A.Navigation):
        return of(e.arg)
    if isinstance(e, A.Aggregate):
        return _aggregate(e, None if e.arg is None else of(e.arg))
    if isinstance(e, A.Classifier):
        return _STRING
    if isinstance(e, A.MatchNumber):
        return _LONG
    if isinstance(e, A.Negate):
        return of(e.operand)
    if isinstance(e, A.Binary):
        if e.op in ("+", "-", "*", "/", "%"):
            left, right = of(e.left), of(e.right)
            # Spark types an integer literal beside a decimal by its digits alone
            if isinstance(right, DecimalType):
                left = _int_literal(e.left) or left
            if isinstance(left, DecimalType):
                right = _int_literal(e.right) or right
            return _arith(e.op, left, right)
        if e.op == "||":
            return _STRING
        return _BOOL
    if isinstance(e, (A.Not, A.IsNull, A.Between, A.InList, A.Like)):
        return _BOOL
    if isinstance(e, A.Case):
        out: DataType = NullType()
        for _, result in e.whens:
            out = _wider(out, of(result))
        return out if e.default is None else _wider(out, of(e.default))
    if isinstance(e, A.Cast):
        return cast_type(e.type_name)
    assert isinstance(e, A.Call)
    rule = FUNCTIONS.get(e.name)
    if rule is None or (isinstance(rule, str) and not e.args):
        raise UnknownType(
            f"the type of {e.name}(…) in a measure: ceql derives measures' Spark types in "
            f"analyze, without Spark, and does not know {e.name}'s; say it with a cast, "
            f"CAST({e.name}(…) AS <type>)")
    if isinstance(rule, DataType):
        return rule
    first = of(e.args[0])
    if rule == "arg":
        if e.name in ("ROUND", "BROUND") and isinstance(first, DecimalType) and len(e.args) > 1:
            d = e.args[1]
            digits = d.value if isinstance(d, A.Literal) and isinstance(d.value, int) else 0
            scale = max(0, min(first.scale, digits))
            return _bounded(first.precision - first.scale + scale + 1, scale)
        if e.name in ("ROUND", "BROUND") and isinstance(first, DecimalType):
            return _bounded(first.precision - first.scale + 1, 0)
        return first
    if rule == "common":
        out = first
        for a in e.args[1:]:
            out = _wider(out, of(a))
        return out
    if isinstance(first, DecimalType):  # floor / ceil
        return _bounded(first.precision - first.scale + 1, 0)
    return _LONG
