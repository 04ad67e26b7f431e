"""Static checks of CEQL queries: names, scopes, schemas, types, clause values."""

from __future__ import annotations

import datetime
import decimal
import os
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pytest

import ceql
from ceql.analysis import KINDS, normalize_schema, validate
from ceql.errors import (
    CeqlError,
    CeqlTypeError,
    CeqlValidationError,
    TypeClashError,
    UnknownAttributeError,
    UnknownStreamError,
    UnknownVariableError,
    UnsafeVariableError,
)
from ceql.frontends.ceql import parse
from ceql.ir import nodes as A

STOCK = {"name": "string", "price": "number", "volume": "number", "id": "number",
         "value": "number", "ts": "timestamp", "flag": "bool", "tags": "other"}


def check(text: str, schema: object = None) -> A.Query:
    return validate(parse(text), text, schema)


def fails(text: str, cls: type[CeqlValidationError], message: str, column: int,
          caret: str, schema: object = None, line: int = 1) -> CeqlValidationError:
    with pytest.raises(CeqlValidationError) as info:
        check(text, schema)
    err = info.value
    assert type(err) is cls
    assert err.message == message
    assert (err.line, err.column) == (line, column)
    assert err.snippet == f"{text.splitlines()[line - 1]}\n{caret}"
    assert isinstance(err, CeqlError)
    return err


def _anchor_dir() -> Path | None:
    root = Path(__file__).resolve().parent.parent
    candidates: list[str | Path] = [os.environ.get("CEQL_ANCHORS_DIR", ""),
                                    root / "anchors" / "queries",
                                    root.parent / "shared" / "anchors" / "queries"]
    for c in candidates:
        if c and Path(c).is_dir():
            return Path(c)
    return None


# ---------------------------------------------------------------- sound queries

def test_sound_queries_come_back_unchanged() -> None:
    text = ("SELECT NEXT a, SELL FROM S, T WHERE T>SELL AS a ; (BUY AS b FILTER b[price > 1])+ "
            "FILTER a[name LIKE '^MS' AND price * 2 + 1 >= 3] AND SELL[volume IN {1, 2}] "
            "PARTITION BY [name] WITHIN 5 [ts] CONSUME BY ANY LIMIT 1")
    q = parse(text)
    assert validate(q, text) is q
    assert validate(q, text, STOCK) is q


def test_semantics_worked_examples_validate() -> None:
    check("""SELECT * FROM Stock
WHERE SELL AS msft; SELL AS intel; SELL AS amzn
FILTER msft[name = 'MSFT'] AND msft[price > 100] AND intel[name = 'INTL']
   AND amzn[name = 'AMZN'] AND amzn[price < 2000]""", STOCK)
    check("SELECT * FROM S WHERE (T AS x ; H AS y) FILTER x[value > 40] AND y[value < 25] "
          "AND x[id = 0] AND y[id = 0]", STOCK)
    check("SELECT * FROM S WHERE H AS x ; (T AS y FILTER y[id = 1])+ ; H AS z "
          "FILTER x[value < 30] AND z[value > 60] AND x[id = 1] AND z[id = 1]", STOCK)


def test_all_anchor_queries_validate() -> None:
    directory = _anchor_dir()
    assert directory is not None, "anchor queries not found: set CEQL_ANCHORS_DIR"
    schema = {"type": str, "id": int, "name": str, "volume": int, "price": float, "ts": int}
    files = sorted(directory.glob("*.ceql"))
    assert len(files) == 42
    for f in files:
        check(f.read_text(encoding="utf-8"), schema)


def test_event_types_are_variables() -> None:
    check("SELECT SELL FROM S WHERE SELL ; BUY FILTER SELL[price > 1] AND BUY[price < 2]")
    check("SELECT x FROM S WHERE (SELL OR BUY) AS x FILTER x[price > 1]")
    check("SELECT * FROM S WHERE (A AS x OR B) FILTER x[v > 1]")


def test_empty_select_and_timestamp_comparisons() -> None:
    check("SELECT NONE FROM S WHERE A", STOCK)
    check("SELECT * FROM S WHERE A FILTER A[ts > '2024-01-02 10:00:00' AND ts - ts < 60 "
          "AND flag = TRUE AND ts - 5 > ts]", STOCK)
    # a time is no number (epoch seconds): the engine would find every comparison unknown
    with pytest.raises(TypeClashError, match="ts is timestamp but 1700000000 is number"):
        check("SELECT * FROM S WHERE A FILTER A[ts < 1700000000]", STOCK)


# ---------------------------------------------------------------- variables and streams

def test_unknown_variable_in_filter() -> None:
    fails("SELECT * FROM S WHERE SELL AS a; SELL AS b FILTER y[price > 1]",
          UnknownVariableError,
          "Unknown variable 'y' in FILTER: the WHERE formula binds a, b, SELL; bind it with AS "
          "or fix the name", 51, " " * 50 + "^")
    fails("SELECT * FROM S WHERE SELL AS msft FILTER msf[price > 1]", UnknownVariableError,
          "Unknown variable 'msf' in FILTER: the WHERE formula binds msft, SELL; bind it with "
          "AS or fix the name (did you mean 'msft'?)", 43, " " * 42 + "^^^")


def test_unknown_variable_in_select() -> None:
    fails("SELECT a, c FROM S WHERE SELL AS a; SELL AS b", UnknownVariableError,
          "Unknown variable 'c' in SELECT: the WHERE formula binds a, b, SELL; bind it with AS "
          "or fix the name", 11, " " * 10 + "^")


def test_unsafe_variable() -> None:
    fails("SELECT * FROM S WHERE SELL AS a; (SELL AS b FILTER a[price > 1])",
          UnsafeVariableError,
          "FILTER on 'a' can never reject anything: 'a' is bound outside the formula this "
          "FILTER applies to (which binds only b, SELL). Move the FILTER after the part of the "
          "formula that binds 'a', or add parentheses so that the FILTER covers it",
          52, " " * 51 + "^")
    fails("SELECT * FROM S WHERE A ; (B FILTER A[x > 1])+", UnsafeVariableError,
          "FILTER on 'A' can never reject anything: 'A' is bound outside the formula this "
          "FILTER applies to (which binds only B). Move the FILTER after the part of the "
          "formula that binds 'A', or add parentheses so that the FILTER covers it",
          37, " " * 36 + "^")


def test_unknown_stream() -> None:
    fails("SELECT * FROM S WHERE U>SELL", UnknownStreamError,
          "Unknown stream 'U' in 'U>SELL': FROM lists S; add it to FROM or fix the name",
          23, " " * 22 + "^")
    fails("SELECT * FROM Stock, News WHERE Stocks>SELL", UnknownStreamError,
          "Unknown stream 'Stocks' in 'Stocks>SELL': FROM lists News, Stock; add it to FROM "
          "or fix the name (did you mean 'Stock'?)", 33, " " * 32 + "^^^^^^")


def test_duplicates() -> None:
    fails("SELECT * FROM S, T, S WHERE SELL", CeqlValidationError,
          "Stream 'S' is listed twice in FROM", 21, " " * 20 + "^")
    fails("SELECT a, a FROM S WHERE SELL AS a", CeqlValidationError,
          "Variable 'a' is selected twice", 11, " " * 10 + "^")
    fails("SELECT * FROM S WHERE SELL PARTITION BY [name], [name]", CeqlValidationError,
          "Attribute 'name' is listed twice in PARTITION BY", 50, " " * 49 + "^^^^")


def test_limit_zero_is_valid_and_outputs_nothing() -> None:
    # as in SQL (CORE's own test suite uses it): valid, no output, whatever the input
    q = ceql.compile("SELECT * FROM S WHERE SELL ; BUY LIMIT 0")
    assert q.ast.limit == 0
    events = [{"type": t} for t in "SELL SELL BUY BUY".split()]
    assert list(q.run(events)) == []
    assert len(list(ceql.compile("SELECT * FROM S WHERE SELL ; BUY LIMIT 1").run(events))) == 2
    with pytest.raises(ceql.CeqlSyntaxError, match="Expected a number after 'LIMIT', found '-'"):
        ceql.compile("SELECT * FROM S WHERE SELL LIMIT -1")


def test_first_error_in_text_order() -> None:
    fails("SELECT zz FROM S WHERE U>A FILTER q[x > 1]", UnknownVariableError,
          "Unknown variable 'zz' in SELECT: the WHERE formula binds A, U>A; bind it with AS or "
          "fix the name", 8, " " * 7 + "^^")
    fails("SELECT * FROM S WHERE U>A FILTER q[x > 1]", UnknownStreamError,
          "Unknown stream 'U' in 'U>A': FROM lists S; add it to FROM or fix the name",
          23, " " * 22 + "^")


def test_multiline_location() -> None:
    fails("SELECT *\nFROM S\nWHERE A\n  FILTER B[x > 1]", UnknownVariableError,
          "Unknown variable 'B' in FILTER: the WHERE formula binds A; bind it with AS or fix "
          "the name", 10, " " * 9 + "^", line=4)


# ---------------------------------------------------------------- schema: attributes and types

def test_unknown_attribute() -> None:
    fails("SELECT * FROM S WHERE SELL FILTER SELL[prize > 1]", UnknownAttributeError,
          "Unknown attribute 'prize' in FILTER: the schema has flag, id, name, price, tags, ts, "
          "value, volume (did you mean 'price'?)", 40, " " * 39 + "^^^^^", STOCK)
    fails("SELECT * FROM S WHERE SELL PARTITION BY [name, nam]", UnknownAttributeError,
          "Unknown attribute 'nam' in PARTITION BY: the schema has flag, id, name, price, tags, "
          "ts, value, volume (did you mean 'name'?)", 48, " " * 47 + "^^^", STOCK)
    fails("SELECT * FROM S WHERE SELL WITHIN 5 [time]", UnknownAttributeError,
          "Unknown attribute 'time' in WITHIN: the schema has flag, id, name, price, tags, ts, "
          "value, volume", 28, " " * 27 + "^" * 15, STOCK)


def test_no_schema_no_attribute_checks() -> None:
    check("SELECT * FROM S WHERE SELL FILTER SELL[anything > 1] PARTITION BY [x] WITHIN 1 [y]")


def test_type_clash_in_comparison() -> None:
    fails("SELECT * FROM S WHERE SELL FILTER SELL[price = 'a']", TypeClashError,
          "Type clash in comparison price = 'a': price is number but 'a' is string",
          40, " " * 39 + "^" * 11, STOCK)
    fails("SELECT * FROM S WHERE SELL FILTER SELL[name > price]", TypeClashError,
          "Type clash in comparison name > price: name is string but price is number",
          40, " " * 39 + "^" * 12, STOCK)
    fails("SELECT * FROM S WHERE SELL FILTER SELL[flag = 1]", TypeClashError,
          "Type clash in comparison flag = 1: flag is bool but 1 is number",
          40, " " * 39 + "^" * 8, STOCK)


def test_literal_type_clash_without_schema() -> None:
    fails("SELECT * FROM S WHERE SELL FILTER SELL[x + 1 = 'a' + 2]", TypeClashError,
          "Type clash in arithmetic 'a' + 2: '+' needs numbers, but 'a' is string and 2 is "
          "number", 48, " " * 47 + "^" * 7)
    fails("SELECT * FROM S WHERE SELL FILTER SELL[1 = 'a']", TypeClashError,
          "Type clash in comparison 1 = 'a': 1 is number but 'a' is string",
          40, " " * 39 + "^" * 7)


def test_type_clash_in_like_and_arithmetic() -> None:
    fails("SELECT * FROM S WHERE SELL FILTER SELL[price LIKE 'a']", TypeClashError,
          "LIKE needs a string, but price is number", 40, " " * 39 + "^" * 14, STOCK)
    fails("SELECT * FROM S WHERE SELL FILTER SELL[name + 1 > 3]", TypeClashError,
          "Type clash in arithmetic name + 1: '+' needs numbers, but name is string and 1 is "
          "number", 40, " " * 39 + "^" * 8, STOCK)
    fails("SELECT * FROM S WHERE SELL FILTER SELL[-name > 1]", TypeClashError,
          "Type clash in unary minus: name is string, not a number", 40, " " * 39 + "^" * 5,
          STOCK)
    fails("SELECT * FROM S WHERE SELL FILTER SELL[x * y > 'a']", TypeClashError,
          "Type clash in comparison x * y > 'a': x * y is number but 'a' is string",
          40, " " * 39 + "^" * 11, {"x": int, "y": float})


def test_type_clash_in_in_and_range() -> None:
    fails("SELECT * FROM S WHERE SELL FILTER SELL[x IN {1, 'a'}]", TypeClashError,
          "Type clash in IN set: 1 is number but 'a' is string", 49, " " * 48 + "^^^")
    fails("SELECT * FROM S WHERE SELL FILTER SELL[name NOT IN {1, 2}]", TypeClashError,
          "Type clash in IN: name is string but 1 is number", 40, " " * 39 + "^" * 18, STOCK)
    fails("SELECT * FROM S WHERE SELL FILTER SELL[price IN RANGE('a', 'b')]", TypeClashError,
          "Type clash in IN RANGE: price is number but 'a' is string", 40,
          " " * 39 + "^" * 24, STOCK)
    fails("SELECT * FROM S WHERE SELL FILTER SELL[price IN RANGE(10, 1)]", CeqlValidationError,
          "RANGE(10, 1) is empty: its lower bound is above its upper bound, so the test never "
          "holds", 40, " " * 39 + "^" * 21, STOCK)


def test_attribute_of_unusable_type() -> None:
    check("SELECT * FROM S WHERE SELL FILTER SELL[tags = 1] PARTITION BY [tags]", STOCK)


def test_within_attribute_type() -> None:
    fails("SELECT * FROM S WHERE SELL WITHIN 5 [name]", TypeClashError,
          "WITHIN ... [name] needs a number or timestamp attribute, but 'name' is string",
          28, " " * 27 + "^" * 15, STOCK)
    check("SELECT * FROM S WHERE SELL WITHIN 5 [ts]", STOCK)
    check("SELECT * FROM S WHERE SELL WITHIN 5 [price]", STOCK)


def test_invalid_regex() -> None:
    fails("SELECT * FROM S WHERE SELL FILTER SELL[name LIKE '(a)\\1']", CeqlValidationError,
          "Invalid regular expression in LIKE: invalid escape sequence: \\1. LIKE patterns use "
          "RE2 syntax, which has no backreferences and no lookaround", 50, " " * 49 + "^" * 7)
    fails("SELECT * FROM S WHERE SELL FILTER SELL[name NOT LIKE 'it''s(?=a)']",
          CeqlValidationError,
          "Invalid regular expression in LIKE: invalid perl operator: (?=. LIKE patterns use "
          "RE2 syntax, which has no backreferences and no lookaround", 54, " " * 53 + "^" * 12)
    check("SELECT * FROM S WHERE SELL FILTER SELL[name LIKE '^(MS|IN)[A-Z]{2}\\d*$']")


def test_division_by_zero() -> None:
    fails("SELECT * FROM S WHERE SELL FILTER SELL[price % 0 > 1]", CeqlValidationError,
          "Division by zero in price % 0", 40, " " * 39 + "^" * 9)


# ---------------------------------------------------------------- queries built by hand

def test_hand_built_queries_without_spans() -> None:
    q = A.Query(strategy="ANY", select=("x",), streams=("S",), where=A.EventType("A"))
    with pytest.raises(UnknownVariableError) as info:
        validate(q, "")
    assert info.value.line == 0 and info.value.snippet == ""
    bad = A.Query(strategy="SOME", select=None, streams=("S",), where=A.EventType("A"))
    with pytest.raises(CeqlValidationError, match="Unknown selection strategy 'SOME'"):
        validate(bad, "")
    neg = A.Query(strategy="ANY", select=None, streams=("S",), where=A.EventType("A"),
                  within=A.Within("events", Fraction(-1)))
    with pytest.raises(CeqlValidationError, match="cannot be negative"):
        validate(neg, "")
    empty = A.Query(strategy="ANY", select=None, streams=("S",), where=A.Filter(
        A.EventType("A"), A.FilterAtom("A", A.InSet(A.Attr("x"), ()))))
    with pytest.raises(CeqlValidationError, match="at least one value"):
        validate(empty, "")


def test_deep_queries_validate_without_recursion() -> None:
    text = ("SELECT * FROM S WHERE " + " ; ".join(f"E{i}" for i in range(1500))
            + " FILTER E0[" + " + ".join(["x"] * 1500) + " > 1]")
    check(text)


# ---------------------------------------------------------------- schemas

def test_normalize_schema_from_names_and_python_types() -> None:
    assert normalize_schema({"a": "number", "b": "STRING", "c": "Bool", "d": "timestamp",
                             "e": "double", "f": "varchar", "g": "decimal(10,2)",
                             "h": "timestamp[us]", "i": "bigint", "j": "boolean"}) == {
        "a": "number", "b": "string", "c": "bool", "d": "timestamp", "e": "number",
        "f": "string", "g": "number", "h": "timestamp", "i": "number", "j": "bool"}
    assert normalize_schema({"a": int, "b": float, "c": str, "d": bool, "e": datetime.datetime,
                             "f": datetime.date, "g": decimal.Decimal}) == {
        "a": "number", "b": "number", "c": "string", "d": "bool", "e": "timestamp",
        "f": "timestamp", "g": "number"}
    assert normalize_schema([("a", int), ("b", "string")]) == {"a": "number", "b": "string"}
    assert set(normalize_schema(STOCK).values()) <= set(KINDS)


def test_normalize_schema_from_pyarrow() -> None:
    schema = pa.schema([("a", pa.int64()), ("b", pa.string()), ("c", pa.timestamp("us")),
                        ("d", pa.list_(pa.int8())), ("e", pa.dictionary(pa.int8(), pa.string())),
                        ("f", pa.bool_()), ("g", pa.float32()), ("h", pa.large_string()),
                        ("i", pa.date32()), ("j", pa.decimal128(10, 2))])
    assert normalize_schema(schema) == {
        "a": "number", "b": "string", "c": "timestamp", "d": "other", "e": "string",
        "f": "bool", "g": "number", "h": "string", "i": "timestamp", "j": "number"}
    assert normalize_schema({"a": pa.int8(), "b": pa.field("b", pa.utf8())}) == \
        {"a": "number", "b": "string"}
    assert normalize_schema(list(schema)[:2]) == {"a": "number", "b": "string"}


def test_normalize_schema_from_spark_like_struct() -> None:
    @dataclass
    class DataType:
        name: str

        def typeName(self) -> str:
            return self.name

    @dataclass
    class Field:
        name: str
        dataType: DataType

    @dataclass
    class Struct:
        fields: list[Field]

    struct = Struct([Field("a", DataType("long")), Field("b", DataType("string")),
                     Field("c", DataType("timestamp")), Field("d", DataType("array"))])
    assert normalize_schema(struct) == {"a": "number", "b": "string", "c": "timestamp",
                                        "d": "other"}


def test_normalize_schema_errors() -> None:
    with pytest.raises(CeqlValidationError, match="Unknown type 'money' for attribute 'p'"):
        normalize_schema({"p": "money"})
    with pytest.raises(CeqlValidationError, match="Unsupported Python type list"):
        normalize_schema({"p": list})
    with pytest.raises(CeqlTypeError, match="Cannot read a schema from int"):
        normalize_schema(3)
    with pytest.raises(CeqlValidationError, match="Cannot read a schema entry"):
        normalize_schema([("a",)])


def test_validate_accepts_any_schema_form() -> None:
    text = "SELECT * FROM S WHERE A FILTER A[price > 1]"
    check(text, pa.schema([("price", pa.float64())]))
    with pytest.raises(TypeClashError):
        check(text, pa.schema([("price", pa.string())]))
    with pytest.raises(UnknownAttributeError):
        check(text, {"cost": float})


# ---------------------------------------------------------------- issue 10: scopes and names

def test_filter_on_a_variable_bound_in_one_branch_of_an_or_is_sound() -> None:
    """Defect 3: ``((A AS a) OR B) FILTER a[x > 1]`` raises no UnsafeVariableError, and that is
    right. SEMANTICS.md: ``φ FILTER X[P]`` keeps the valuations of φ whose X-events all satisfy
    P, "an empty V(X) satisfies it"; ``a`` is bound inside the filtered formula, so the FILTER
    does reject something (an A with x ≤ 1), and a B match (empty ``a``) passes. The engine
    gives exactly that."""
    import ceql

    text = "SELECT * FROM S WHERE ((A AS a) OR B) FILTER a[x > 1]"
    check(text)
    events = [{"type": "A", "x": 0}, {"type": "A", "x": 5}, {"type": "B", "x": 0},
              {"type": "B"}, {"type": "A"}]
    matches = list(ceql.compile(text + " WITHIN 1 EVENTS").run(events))
    assert [m.positions for m in matches] == [(1,), (2,), (3,)]
    assert [m.variables.get("a") for m in matches] == [(1,), None, None]


def test_a_variable_read_as_an_attribute() -> None:
    message = ("'a' is a variable of this query, not an attribute: inside b[…] a plain name is "
               "an attribute of b's events; to compare with an attribute of a's events, qualify "
               "it: b[temp > a.temp]. If the events have an attribute 'a', rename the variable "
               "(AS a1) or compile with a schema that lists the attribute")
    text = "SELECT * FROM S WHERE A AS a ; B AS b FILTER b[temp > a]"
    fails(text, CeqlValidationError, message, 55, " " * 54 + "^")
    fails(text, CeqlValidationError, message, 55, " " * 54 + "^", {"temp": "number"})
    # a schema with an attribute 'a' makes it unambiguous
    check(text, {"temp": "number", "a": "number"})
    # so does renaming the variable
    check("SELECT * FROM S WHERE A AS a1 ; B AS b FILTER b[temp > a]")
    # type names are not flagged: types and attributes often share a name
    check("SELECT * FROM S WHERE temp AS t FILTER t[temp > 30]")
    fails("SELECT * FROM S WHERE A AS a FILTER a[a IN {1, 2}]", CeqlValidationError,
          "'a' is a variable of this query, not an attribute: inside a[…] a plain name is an "
          "attribute of a's events; write the attribute's name alone (attr) or qualified "
          "(a.attr). If the events have an attribute 'a', rename the variable (AS a1) or "
          "compile with a schema that lists the attribute", 39, " " * 38 + "^")


def test_null_is_not_a_value() -> None:
    fails("SELECT * FROM S WHERE A FILTER A[x = NULL]", CeqlValidationError,
          "NULL is not a value in CEQL: a comparison with a missing or NULL attribute is false, "
          "so no test for NULL can hold; write `NULL` in backquotes for an attribute of that "
          "name", 38, " " * 37 + "^^^^")
    check("SELECT * FROM S WHERE A FILTER A[x = `NULL`]")
    # the formatter keeps the backquotes, so its text validates too
    from ceql.frontends.ceql import format_query

    text = format_query(parse("SELECT * FROM S WHERE A FILTER A[x = `NULL`]"))
    assert "`NULL`" in text
    check(text)
    check("SELECT * FROM S WHERE A FILTER A[x = null]", {"x": "number", "null": "number"})
