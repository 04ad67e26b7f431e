"""The MATCH_RECOGNIZE front end (docs/match_recognize.md): every construct of the grammar
parses to the syntax tree it means, the surrounding SELECT and the body alone alike; syntax
errors and each rule of the standard the checks enforce come with their message, line, column
and caret; the formatter round-trips random bodies. Pure Python, no Spark."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest
from hypothesis import Phase, find, given, settings

from ceql.errors import CeqlSyntaxError, CeqlTypeError, CeqlValidationError, UnknownVariableError
from ceql.frontends import mr
from ceql.frontends.mr import ast as A
from ceql.frontends.mr.errors import AggregateError, ClauseError, NavigationError, PatternError
from mr_strategies import bodies, patterns


def body(text: str) -> A.MatchRecognize:
    return mr.parse_body(text)


def pattern(text: str) -> A.Pattern:
    return body(f"PATTERN ({text})").pattern


def cond(text: str) -> A.Expr:
    return body(f"PATTERN (A B) DEFINE A AS {text}").defines[0].condition


def measure(text: str) -> A.Expr:
    return body(f"MEASURES {text} AS m PATTERN (A B) SUBSET U = (A, B)").measures[0].expr


V = A.PatternVar
X = A.Column(None, "x")


# ---------------------------------------------------------------- surfaces

TROTT = """SELECT * FROM orders MATCH_RECOGNIZE(
     PARTITION BY custkey
     ORDER BY orderdate
     MEASURES
              A.totalprice AS starting_price,
              LAST(B.totalprice) AS bottom_price,
              LAST(U.totalprice) AS top_price
     ONE ROW PER MATCH
     AFTER MATCH SKIP PAST LAST ROW
     PATTERN (A B+ C+ D+)
     SUBSET U = (C, D)
     DEFINE
              B AS totalprice < PREV(totalprice),
              C AS totalprice > PREV(totalprice) AND totalprice <= A.totalprice,
              D AS totalprice > PREV(totalprice)
     )"""


def test_trinos_v_shape_query_parses_whole() -> None:
    # Trino's documentation's first example (trino.io/docs/current/sql/match-recognize.html)
    q = mr.parse(TROTT)
    assert isinstance(q, A.Query)
    assert q.source == ("orders",) and q.select == () and q.alias is None
    b = q.body
    assert b.partition_by == ("custkey",)
    assert b.order_by == (A.SortKey("orderdate"),)
    assert [m.name for m in b.measures] == ["starting_price", "bottom_price", "top_price"]
    assert b.measures[1].expr == A.Navigation("LAST", A.Column("B", "totalprice"), 0)
    assert b.rows_per_match == "ONE" and b.skip == A.Skip("PAST LAST ROW")
    assert b.pattern == A.Concatenation((V("A"), A.Quantified(V("B"), 1, None),
                                         A.Quantified(V("C"), 1, None),
                                         A.Quantified(V("D"), 1, None)))
    assert b.subsets == (A.Subset("U", ("C", "D")),)
    assert [d.var for d in b.defines] == ["B", "C", "D"]
    assert b.variables() == ("A", "B", "C", "D")
    assert b.condition("A") is None and b.subset("U") == ("C", "D")


@pytest.mark.parametrize("text", [
    "PATTERN (A) DEFINE A AS x > 1",
    "(PATTERN (A) DEFINE A AS x > 1)",
    "MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS x > 1)",
    "match_recognize (pattern (a) define a as x > 1) AS m",
    "SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS x > 1) m",
])
def test_the_body_alone_or_in_a_query(text: str) -> None:
    assert mr.parse_body(text) == A.MatchRecognize(V("A"), defines=(
        A.Define("A", A.Binary(">", X, A.Literal(1))),))


def test_select_list_source_and_alias() -> None:
    q = mr.parse("SELECT m.sym, price AS p, m.* FROM db.ticks MATCH_RECOGNIZE ("
                 "PATTERN (A)) AS m")
    assert isinstance(q, A.Query)
    assert q.source == ("db", "ticks") and q.alias == "m"
    assert q.select == (A.SelectItem(A.Column("M", "sym")),
                        A.SelectItem(A.Column(None, "price"), "p"), A.SelectItem(None, None, "m"))
    assert mr.parse(mr.format_query(q)) == q


def test_not_a_string() -> None:
    with pytest.raises(CeqlTypeError, match="must be a string"):
        mr.parse(42)  # type: ignore[arg-type]


# ---------------------------------------------------------------- clauses

def test_every_clause() -> None:
    b = body("""PARTITION BY k, `odd name` ORDER BY ts DESC NULLS FIRST, seq NULLS LAST, z ASC
      MEASURES FINAL COUNT(*) AS n, CLASSIFIER() cls
      ALL ROWS PER MATCH OMIT EMPTY MATCHES AFTER MATCH SKIP TO FIRST U
      PATTERN (A B) WITHIN INTERVAL '90' SECOND SUBSET U = (A, B), W = (B)
      DEFINE A AS TRUE, B AS NOT FALSE""")
    assert b.partition_by == ("k", "odd name")
    assert b.order_by == (A.SortKey("ts", True, True), A.SortKey("seq", False, False),
                          A.SortKey("z"))
    assert b.measures == (A.Measure(A.Aggregate("COUNT", None, semantics="FINAL"), "n"),
                          A.Measure(A.Classifier(), "cls"))
    assert b.rows_per_match == A.AllRows("OMIT EMPTY MATCHES")
    assert b.skip == A.Skip("TO FIRST", "U")
    assert b.within == datetime.timedelta(seconds=90)
    assert b.subsets == (A.Subset("U", ("A", "B")), A.Subset("W", ("B",)))


@pytest.mark.parametrize(("text", "rows"), [
    ("ONE ROW PER MATCH", "ONE"),
    ("ALL ROWS PER MATCH", A.AllRows("SHOW EMPTY MATCHES")),
    ("ALL ROWS PER MATCH SHOW EMPTY MATCHES", A.AllRows("SHOW EMPTY MATCHES")),
    ("ALL ROWS PER MATCH OMIT EMPTY MATCHES", A.AllRows("OMIT EMPTY MATCHES")),
    ("ALL ROWS PER MATCH WITH UNMATCHED ROWS", A.AllRows("WITH UNMATCHED ROWS")),
])
def test_rows_per_match(text: str, rows: A.RowsPerMatch) -> None:
    assert body(f"{text} PATTERN (A)").rows_per_match == rows


@pytest.mark.parametrize(("text", "skip"), [
    ("PAST LAST ROW", A.Skip("PAST LAST ROW")),
    ("TO NEXT ROW", A.Skip("TO NEXT ROW")),
    ("TO FIRST b", A.Skip("TO FIRST", "B")),
    ("TO LAST B", A.Skip("TO LAST", "B")),
    ("TO B", A.Skip("TO LAST", "B")),
])
def test_skip(text: str, skip: A.Skip) -> None:
    assert body(f"AFTER MATCH SKIP {text} PATTERN (A B)").skip == skip


@pytest.mark.parametrize(("text", "seconds"), [
    ("INTERVAL '10' SECOND", 10), ("INTERVAL 10 SECONDS", 10), ("INTERVAL '1.5' MINUTE", 90),
    ("INTERVAL '2' HOURS", 7200), ("INTERVAL 1 DAY", 86400), ("INTERVAL '250' MILLISECOND", 0.25),
])
def test_within(text: str, seconds: float) -> None:
    assert body(f"ORDER BY t PATTERN (A) WITHIN {text}").within == datetime.timedelta(
        seconds=seconds)


# ---------------------------------------------------------------- row patterns

@pytest.mark.parametrize(("text", "expected"), [
    ("A B C", A.Concatenation((V("A"), V("B"), V("C")))),
    ("A | B C | D", A.Alternation((V("A"), A.Concatenation((V("B"), V("C"))), V("D")))),
    ("(A | B) C", A.Concatenation((A.Alternation((V("A"), V("B"))), V("C")))),
    ("A*", A.Quantified(V("A"), 0, None)),
    ("A+", A.Quantified(V("A"), 1, None)),
    ("A?", A.Quantified(V("A"), 0, 1)),
    ("A{3}", A.Quantified(V("A"), 3, 3)),
    ("A{2,}", A.Quantified(V("A"), 2, None)),
    ("A{,4}", A.Quantified(V("A"), 0, 4)),
    ("A{2,4}", A.Quantified(V("A"), 2, 4)),
    ("A*?", A.Quantified(V("A"), 0, None, False)),
    ("A+?", A.Quantified(V("A"), 1, None, False)),
    ("A??", A.Quantified(V("A"), 0, 1, False)),
    ("A{2,4}?", A.Quantified(V("A"), 2, 4, False)),
    ("(A B)+", A.Quantified(A.Concatenation((V("A"), V("B"))), 1, None)),
    ("(A*)*", A.Quantified(A.Quantified(V("A"), 0, None), 0, None)),
    ("PERMUTE(A, B C, D)", A.Permute((V("A"), A.Concatenation((V("B"), V("C"))), V("D")))),
    ("A {- B+ -} C", A.Concatenation((V("A"), A.Exclusion(A.Quantified(V("B"), 1, None)),
                                      V("C")))),
    ("^ A $", A.Concatenation((A.Anchor("^"), V("A"), A.Anchor("$")))),
    ("", A.EmptyPattern()),
    ("()", A.EmptyPattern()),
    ("A () | ()", A.Alternation((A.Concatenation((V("A"), A.EmptyPattern())),
                                 A.EmptyPattern()))),
    ("a `b` `B`", A.Concatenation((V("A"), V("b"), V("B")))),
    # accepted as Trino does (its TestRowPatternMatching uses each)
    ("A{,}", A.Quantified(V("A"), 0, None)),
    ("^* | $+", A.Alternation((A.Quantified(A.Anchor("^"), 0, None),
                               A.Quantified(A.Anchor("$"), 1, None)))),
    ("A {- {- B+ -} C -}", A.Concatenation((V("A"), A.Exclusion(A.Concatenation((
        A.Exclusion(A.Quantified(V("B"), 1, None)), V("C"))))))),
    ("{- () -}*", A.Quantified(A.Exclusion(A.EmptyPattern()), 0, None)),
])
def test_patterns(text: str, expected: A.Pattern) -> None:
    assert pattern(text) == expected


# ---------------------------------------------------------------- expressions

@pytest.mark.parametrize(("text", "expected"), [
    ("x + 1 * 2 > 3", A.Binary(">", A.Binary("+", X, A.Binary("*", A.Literal(1), A.Literal(2))),
                               A.Literal(3))),
    ("x - 1 - 2 = 0", A.Binary("=", A.Binary("-", A.Binary("-", X, A.Literal(1)),
                                            A.Literal(2)), A.Literal(0))),
    ("x != 1 OR x == 2 AND NOT x <> 3",
     A.Binary("OR", A.Binary("<>", X, A.Literal(1)),
              A.Binary("AND", A.Binary("=", X, A.Literal(2)),
                       A.Not(A.Binary("<>", X, A.Literal(3)))))),
    ("x IS NULL", A.IsNull(X, False)),
    ("x IS NOT NULL", A.IsNull(X, True)),
    ("x BETWEEN 1 AND 2 AND TRUE", A.Binary("AND", A.Between(X, A.Literal(1), A.Literal(2),
                                                             False), A.Literal(True))),
    ("x NOT BETWEEN 1 AND 2", A.Between(X, A.Literal(1), A.Literal(2), True)),
    ("x IN (1, 2)", A.InList(X, (A.Literal(1), A.Literal(2)), False)),
    ("x NOT IN (1)", A.InList(X, (A.Literal(1),), True)),
    ("y LIKE 'a%'", A.Like(A.Column(None, "y"), A.Literal("a%"), False)),
    ("y NOT LIKE 'it''s'", A.Like(A.Column(None, "y"), A.Literal("it's"), True)),
    ("y || 'x' = 'ax'", A.Binary("=", A.Binary("||", A.Column(None, "y"), A.Literal("x")),
                                 A.Literal("ax"))),
    ("CASE WHEN x > 1 THEN 'a' ELSE 'b' END = 'a'",
     A.Binary("=", A.Case(None, ((A.Binary(">", X, A.Literal(1)), A.Literal("a")),),
                          A.Literal("b")), A.Literal("a"))),
    ("CASE x WHEN 1 THEN TRUE WHEN 2 THEN FALSE END",
     A.Case(X, ((A.Literal(1), A.Literal(True)), (A.Literal(2), A.Literal(False))), None)),
    ("CAST(y AS DECIMAL(10, 2)) > 1.50", A.Binary(">", A.Cast(A.Column(None, "y"),
                                                              "DECIMAL(10,2)"),
                                                   A.Literal(Decimal("1.50")))),
    ("ABS(-x) > 1e2", A.Binary(">", A.Call("ABS", (A.Negate(X),)), A.Literal(100.0))),
    ("round(x, 1) = coalesce(x, -1)", A.Binary("=", A.Call("ROUND", (X, A.Literal(1))),
                                                A.Call("COALESCE", (X, A.Literal(-1))))),
    ("ts - A.ts <= INTERVAL '1' MINUTE",
     A.Binary("<=", A.Binary("-", A.Column(None, "ts"), A.Column("A", "ts")),
              A.Literal(datetime.timedelta(minutes=1)))),
    ("ts > TIMESTAMP '2024-01-01 09:00:00'",
     A.Binary(">", A.Column(None, "ts"), A.Literal(datetime.datetime(2024, 1, 1, 9)))),
    ("PREV(x) < NEXT(x, 2)", A.Binary("<", A.Navigation("PREV", X, 1),
                                      A.Navigation("NEXT", X, 2))),
    ("FIRST(A.x) < LAST(b.x, 1)", A.Binary("<", A.Navigation("FIRST", A.Column("A", "x"), 0),
                                          A.Navigation("LAST", A.Column("B", "x"), 1))),
    ("PREV(LAST(A.x, 1), 3) > 0",
     A.Binary(">", A.Navigation("PREV", A.Navigation("LAST", A.Column("A", "x"), 1), 3),
              A.Literal(0))),
    ("COUNT(*) + COUNT(A.*) + COUNT(DISTINCT x) > SUM(A.x) / AVG(x)",
     A.Binary(">", A.Binary("+", A.Binary("+", A.Aggregate("COUNT", None),
                                         A.Aggregate("COUNT", None, star_var="A")),
                            A.Aggregate("COUNT", X, True)),
              A.Binary("/", A.Aggregate("SUM", A.Column("A", "x")), A.Aggregate("AVG", X)))),
    ("MIN(x) < MAX(x)", A.Binary("<", A.Aggregate("MIN", X), A.Aggregate("MAX", X))),
    ("CLASSIFIER() = 'A'", A.Binary("=", A.Classifier(), A.Literal("A"))),
    ("last = first AND next > row", A.Binary(
        "AND", A.Binary("=", A.Column(None, "last"), A.Column(None, "first")),
        A.Binary(">", A.Column(None, "next"), A.Column(None, "row")))),
    ("`select` = NULL", A.Binary("=", A.Column(None, "select"), A.Literal(None))),
])
def test_expressions(text: str, expected: A.Expr) -> None:
    assert cond(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("RUNNING LAST(A.x)", A.Navigation("LAST", A.Column("A", "x"), 0, "RUNNING")),
    ("FINAL FIRST(U.x, 2)", A.Navigation("FIRST", A.Column("U", "x"), 2, "FINAL")),
    ("FINAL COUNT(*)", A.Aggregate("COUNT", None, semantics="FINAL")),
    ("FINAL PREV(LAST(x))", A.Navigation("PREV", A.Navigation("LAST", X, 0, "FINAL"), 1)),
    ("PREV(FINAL LAST(x))", A.Navigation("PREV", A.Navigation("LAST", X, 0, "FINAL"), 1)),
    ("FINAL CLASSIFIER()", A.Classifier(None, "FINAL")),
    ("CLASSIFIER(U)", A.Classifier("U")),
    ("MATCH_NUMBER()", A.MatchNumber()),
])
def test_measures(text: str, expected: A.Expr) -> None:
    assert measure(text) == expected


def test_spans_point_into_the_text() -> None:
    text = "PATTERN (A B)\nDEFINE A AS x > PREV(x)"
    nav = body(text).defines[0].condition
    assert isinstance(nav, A.Binary)
    span = nav.right.span
    assert (span.line, span.column) == (2, 17)
    assert text[span.start:span.end] == "PREV(x)"


# ---------------------------------------------------------------- syntax errors

@pytest.mark.parametrize(("text", "message", "line", "column"), [
    ("", "Empty query", 1, 1),
    ("PATTERN (A B+", "Expected", 1, 14),
    ("PATTERN (A B+\nDEFINE A AS x > 1", "a parenthesis opened before it is not closed", 2,
     10),
    ("PATTERN (A | | B)", "an alternative cannot be empty; write ()", 1, 14),
    ("DEFINE A AS x > 1 PATTERN (A)", "found DEFINE", 1, 1),
    ("PATTERN (A) PATTERN (B)", "PATTERN appears twice", 1, 13),
    ("PATTERN (A) MEASURES x AS m", "MEASURES must come before PATTERN", 1, 13),
    ("PATTERN (A) DEFINE A AS x >", "found end of query", 1, 28),
    ('PATTERN (A) DEFINE A AS y = "a"', "write strings in single quotes", 1, 29),
    ("PATTERN (A) DEFINE A AS y = 'a", "Unterminated string", 1, 29),
    ("PATTERN (A) DEFINE A AS case > 1", "CASE is a keyword here; write `case` in backquotes",
     1, 30),
    ("PATTERN (A) DEFINE A AS x BETWEEN 1 OR 2", "Expected AND", 1, 37),
    ("PATTERN (A)\n  DEFINE A AS x > 1 x", "found name 'x'", 2, 21),
])
def test_syntax_errors(text: str, message: str, line: int, column: int) -> None:
    with pytest.raises(CeqlSyntaxError) as info:
        mr.parse(text)
    err = info.value
    assert message in err.message
    assert (err.line, err.column) == (line, column)
    caret_line = err.snippet.split("\n")[1]
    assert caret_line.index("^") == column - 1


def test_syntax_error_text_shows_the_caret() -> None:
    with pytest.raises(CeqlSyntaxError) as info:
        mr.parse("PATTERN (A B+\nDEFINE A AS x > 1")
    assert str(info.value).endswith("DEFINE A AS x > 1\n         ^^")


# ---------------------------------------------------------------- the standard's rules

@pytest.mark.parametrize(("text", "error", "message", "at"), [
    # patterns
    ("PATTERN (A{3,1})", PatternError, "lower bound is above", "{3,1}"),
    ("PATTERN (A{0})", PatternError, "{0} repeats nothing", "{0}"),
    ("PATTERN (A{,0})", PatternError, "repeats nothing", "{,0}"),
    ("PATTERN (A{1.5})", PatternError, "whole number", "1.5"),
    ("ALL ROWS PER MATCH WITH UNMATCHED ROWS PATTERN (A {- B -})", PatternError,
     "WITH UNMATCHED ROWS", "{- B -}"),
    # names
    ("PATTERN (A) DEFINE B AS x > 1", UnknownVariableError, "'B' is not in the PATTERN", "B"),
    ("PATTERN (A) SUBSET U = (A) DEFINE U AS x > 1", ClauseError, "U is a SUBSET", "U AS"),
    ("PATTERN (A) DEFINE A AS x > 1, A AS x < 2", ClauseError, "DEFINE gives A twice",
     "A AS x < 2"),
    ("PATTERN (A) DEFINE A AS B.x > 1", UnknownVariableError, "Column B.x names 'B'", "B.x"),
    ("PATTERN (A) SUBSET A = (A)", ClauseError, "has the name of a pattern variable",
     "A = (A)"),
    ("PATTERN (A) SUBSET U = (B)", UnknownVariableError, "names 'B', which is not a pattern",
     "U = (B)"),
    ("PATTERN (A) SUBSET U = (A), U = (A)", ClauseError, "SUBSET U is defined twice",
     "U = (A)"),
    ("AFTER MATCH SKIP TO FIRST B PATTERN (A)", UnknownVariableError,
     "AFTER MATCH SKIP TO FIRST names 'B'", "AFTER MATCH SKIP TO FIRST B"),
    ("MEASURES COUNT(B.*) AS n PATTERN (A)", UnknownVariableError, "COUNT(B.*) names 'B'",
     "COUNT(B.*)"),
    ("PARTITION BY k, K PATTERN (A)", ClauseError, "names column 'K' twice", "K"),
    ("PARTITION BY k MEASURES 1 AS k PATTERN (A)", ClauseError, "name of a PARTITION BY",
     "1 AS k"),
    ("MEASURES 1 AS m, 2 AS M PATTERN (A)", ClauseError, "Two measures are named 'M'",
     "2 AS M"),
    # navigation
    ("PATTERN (A) DEFINE A AS PREV(x, -1) > 1", NavigationError, "offset of PREV", "-1"),
    ("PATTERN (A) DEFINE A AS PREV(x, y) > 1", NavigationError, "offset of PREV", "y"),
    ("PATTERN (A) DEFINE A AS LAST(x, 1.0) > 1", NavigationError, "offset of LAST", "1.0"),
    ("PATTERN (A) DEFINE A AS PREV(x, 1, 2) > 1", NavigationError, "takes a value and",
     "PREV(x, 1, 2)"),
    ("PATTERN (A) DEFINE A AS PREV(1) > 1", NavigationError, "reads no column", "PREV(1)"),
    ("PATTERN (A B) DEFINE A AS PREV(A.x + B.x) > 1", NavigationError,
     "several row pattern variables (A, B)", "PREV(A.x + B.x)"),
    ("PATTERN (A) DEFINE A AS FIRST(A.x + x) > 1", NavigationError,
     "several row pattern variables", "FIRST(A.x + x)"),
    ("PATTERN (A) DEFINE A AS LAST(PREV(x)) > 1", NavigationError,
     "PREV cannot stand inside LAST", "PREV(x)"),
    ("PATTERN (A) DEFINE A AS FIRST(LAST(x)) > 1", NavigationError,
     "LAST cannot stand inside FIRST", "LAST(x)"),
    ("PATTERN (A) DEFINE A AS PREV(NEXT(x)) > 1", NavigationError,
     "NEXT cannot stand inside PREV", "NEXT(x)"),
    ("PATTERN (A) DEFINE A AS PREV(LAST(A.x) + 1) > 1", NavigationError,
     "must be its whole argument", "LAST(A.x)"),
    ("PATTERN (A) DEFINE A AS PREV(COUNT(*)) > 1", AggregateError,
     "aggregate cannot stand inside PREV", "COUNT(*)"),
    ("MEASURES PREV(MATCH_NUMBER()) AS m PATTERN (A)", NavigationError,
     "MATCH_NUMBER() cannot stand inside PREV", "MATCH_NUMBER()"),
    ("PATTERN (A) DEFINE A AS FINAL LAST(x) > 1", NavigationError, "FINAL cannot be used in "
     "DEFINE", "FINAL LAST(x)"),
    ("PATTERN (A) DEFINE A AS FINAL COUNT(*) > 1", NavigationError, "FINAL cannot be used",
     "FINAL COUNT(*)"),
    ("MEASURES FINAL PREV(x) AS p PATTERN (A)", NavigationError,
     "FINAL applies to FIRST, LAST", "FINAL PREV(x)"),
    ("MEASURES RUNNING ABS(x) AS p PATTERN (A)", NavigationError,
     "RUNNING applies to FIRST, LAST", "RUNNING ABS(x)"),
    # aggregates
    ("PATTERN (A) DEFINE A AS SUM(SUM(x)) > 1", AggregateError, "Aggregates do not nest",
     "SUM(x)"),
    ("PATTERN (A B) DEFINE A AS SUM(A.x + B.x) > 1", AggregateError,
     "several row pattern variables (A, B)", "SUM(A.x + B.x)"),
    ("PATTERN (A) DEFINE A AS SUM(PREV(x)) > 1", AggregateError,
     "PREV cannot stand inside SUM", "PREV(x)"),
    ("MEASURES COUNT(CLASSIFIER()) AS n PATTERN (A)", AggregateError,
     "CLASSIFIER() cannot stand inside COUNT", "CLASSIFIER()"),
    ("PATTERN (A) DEFINE A AS SUM(*) > 1", AggregateError, "only COUNT counts rows", "SUM(*)"),
    ("PATTERN (A) DEFINE A AS MAX(A.*) > 1", AggregateError, "only COUNT counts rows",
     "MAX(A.*)"),
    ("PATTERN (A) DEFINE A AS SUM(x, 2) > 1", AggregateError, "SUM takes one argument",
     "SUM(x, 2)"),
    ("PATTERN (A) DEFINE A AS ABS(DISTINCT x) > 1", AggregateError, "DISTINCT is only for",
     "ABS(DISTINCT x)"),
    # other clauses
    ("PATTERN (A) DEFINE A AS MATCH_NUMBER() > 1", ClauseError,
     "MATCH_NUMBER() cannot be used in DEFINE", "MATCH_NUMBER()"),
    ("MEASURES MATCH_NUMBER(1) AS m PATTERN (A)", ClauseError, "MATCH_NUMBER takes no",
     "MATCH_NUMBER(1)"),
    ("MEASURES CLASSIFIER(A, B) AS m PATTERN (A B)", ClauseError, "CLASSIFIER takes no",
     "CLASSIFIER(A, B)"),
    ("PATTERN (A) DEFINE A AS ABS(x, 2) > 1", ClauseError, "ABS takes 1 argument",
     "ABS(x, 2)"),
    ("PATTERN (A) DEFINE A AS COALESCE() IS NULL", ClauseError, "COALESCE takes 1 or more",
     "COALESCE()"),
    ("PATTERN (A) WITHIN INTERVAL '1' SECOND", ClauseError, "add ORDER BY", "WITHIN"),
    ("ORDER BY t PATTERN (A) WITHIN INTERVAL '0' SECOND", ClauseError, "longer than 0",
     "INTERVAL '0' SECOND"),
    ("ORDER BY t PATTERN (A) WITHIN INTERVAL '1' MONTH", ClauseError,
     "months and years have no fixed length", "MONTH"),
    ("ORDER BY t PATTERN (A) WITHIN INTERVAL 'x' SECOND", ClauseError, "write a number",
     "'x'"),
    ("ORDER BY t PATTERN (A) WITHIN INTERVAL '0.0000001' SECOND", ClauseError,
     "whole number of microseconds", "'0.0000001'"),
    ("PATTERN (A) DEFINE A AS ts > TIMESTAMP 'yesterday'", ClauseError, "YYYY-MM-DD",
     "'yesterday'"),
])
def test_rules(text: str, error: type[CeqlValidationError], message: str, at: str) -> None:
    with pytest.raises(error) as info:
        mr.parse(text)
    err = info.value
    assert message in err.message, err.message
    assert err.line == 1
    assert text.index(at) == err.column - 1, (err.column, text.index(at))
    assert err.snippet.split("\n")[1].startswith(" " * (err.column - 1) + "^")


def test_measures_classifier_of_unknown_variable() -> None:
    with pytest.raises(UnknownVariableError, match="CLASSIFIER names 'Q'"):
        mr.parse("MEASURES CLASSIFIER(Q) AS c PATTERN (A)")


# ---------------------------------------------------------------- round trips

@settings(deadline=None)  # examples: the profile's (tests/strategies.py)
@given(bodies())
def test_format_parse_round_trip(b: A.MatchRecognize) -> None:
    text = mr.format_body(b)
    assert mr.parse_body(text) == b, text
    q = A.Query(b, ("t",), (), "m")
    assert mr.parse(mr.format_query(q)) == q


#: A search for one example, not a minimal one (shrinking bodies is slow).
_SEARCH = settings(max_examples=5000, phases=[Phase.generate], database=None)


def _has(p: A.Pattern, pred: object) -> bool:
    return callable(pred) and any(pred(n) for n in A.walk_pattern(p))


@pytest.mark.parametrize("what", [
    "permute", "exclusion", "anchor_start", "anchor_end", "empty", "alternation",
    "reluctant", "bounded", "nested_quantifier", "exclusion_in_quantifier",
    "nested_exclusion", "quantified_anchor"])
def test_the_pattern_generator_draws(what: str) -> None:
    preds = {
        "permute": lambda n: isinstance(n, A.Permute),
        "exclusion": lambda n: isinstance(n, A.Exclusion),
        "anchor_start": lambda n: n == A.Anchor("^"),
        "anchor_end": lambda n: n == A.Anchor("$"),
        "empty": lambda n: isinstance(n, A.EmptyPattern),
        "alternation": lambda n: isinstance(n, A.Alternation),
        "reluctant": lambda n: isinstance(n, A.Quantified) and not n.greedy,
        "bounded": lambda n: isinstance(n, A.Quantified) and n.high not in (None, 1),
        "nested_quantifier": lambda n: isinstance(n, A.Quantified) and isinstance(
            n.item, A.Quantified),
        "exclusion_in_quantifier": lambda n: isinstance(n, A.Quantified) and _has(
            n.item, lambda m: isinstance(m, A.Exclusion)),
        "nested_exclusion": lambda n: isinstance(n, A.Exclusion) and _has(
            n.item, lambda m: isinstance(m, A.Exclusion)),
        "quantified_anchor": lambda n: isinstance(n, A.Quantified) and isinstance(
            n.item, A.Anchor),
    }
    pred = preds[what]
    found = find(patterns(), lambda p: _has(p, pred), settings=_SEARCH)
    assert _has(found, pred)


def _exprs(b: A.MatchRecognize) -> list[A.Expr]:
    out: list[A.Expr] = []
    for e in [*(d.condition for d in b.defines), *(m.expr for m in b.measures)]:
        out += A.walk(e)
    return out


@pytest.mark.parametrize("what", [
    "prev_offset", "next", "nested_navigation", "final", "count_star", "count_var",
    "distinct", "avg", "classifier", "match_number", "like", "between", "in", "case",
    "subset_column", "within", "unmatched", "omit", "skip_to_first", "skip_to_last",
    "partition", "desc"])
def test_the_body_generator_draws(what: str) -> None:
    preds = {
        "prev_offset": lambda b: any(isinstance(e, A.Navigation) and e.kind == "PREV"
                                     and e.offset == 2 for e in _exprs(b)),
        "next": lambda b: any(isinstance(e, A.Navigation) and e.kind == "NEXT"
                              for e in _exprs(b)),
        "nested_navigation": lambda b: any(isinstance(e, A.Navigation) and isinstance(
            e.arg, A.Navigation) for e in _exprs(b)),
        "final": lambda b: any(getattr(e, "semantics", None) == "FINAL" for e in _exprs(b)),
        "count_star": lambda b: any(isinstance(e, A.Aggregate) and e.arg is None
                                    and e.star_var is None for e in _exprs(b)),
        "count_var": lambda b: any(isinstance(e, A.Aggregate) and e.star_var is not None
                                   for e in _exprs(b)),
        "distinct": lambda b: any(isinstance(e, A.Aggregate) and e.distinct
                                  for e in _exprs(b)),
        "avg": lambda b: any(isinstance(e, A.Aggregate) and e.name == "AVG"
                             for e in _exprs(b)),
        "classifier": lambda b: any(isinstance(e, A.Classifier) for e in _exprs(b)),
        "match_number": lambda b: any(isinstance(e, A.MatchNumber) for e in _exprs(b)),
        "like": lambda b: any(isinstance(e, A.Like) for e in _exprs(b)),
        "between": lambda b: any(isinstance(e, A.Between) for e in _exprs(b)),
        "in": lambda b: any(isinstance(e, A.InList) for e in _exprs(b)),
        "case": lambda b: any(isinstance(e, A.Case) for e in _exprs(b)),
        "subset_column": lambda b: any(isinstance(e, A.Column) and e.var == "U"
                                       for e in _exprs(b)),
        "within": lambda b: b.within is not None,
        "unmatched": lambda b: b.rows_per_match == A.AllRows("WITH UNMATCHED ROWS"),
        "omit": lambda b: b.rows_per_match == A.AllRows("OMIT EMPTY MATCHES"),
        "skip_to_first": lambda b: b.skip.kind == "TO FIRST",
        "skip_to_last": lambda b: b.skip.kind == "TO LAST" and b.skip.var == "U",
        "partition": lambda b: b.partition_by == ("k",),
        "desc": lambda b: b.order_by[0].descending,
    }
    pred = preds[what]
    found = find(bodies(), pred, settings=_SEARCH)
    assert pred(found)
