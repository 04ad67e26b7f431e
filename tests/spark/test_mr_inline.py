"""The inline ``FROM src MATCH_RECOGNIZE ( <body> ) [[AS] alias]`` (issue 30.1): the shim's
parser rewrites it into ``MATCH_RECOGNIZE_TABLE(TABLE(src), body => '<body>')`` and nothing else.

Tested at the parser: the session's parser must read each text exactly as Spark's own parser
reads the rewritten text (so the plan holds the table function, its table argument and the body
as a string); the table function itself is not needed for that.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st
from py4j.protocol import Py4JJavaError
from pyspark.errors import ParseException
from pyspark.errors.exceptions.captured import CapturedException

from ceql.constants import MATCH_RECOGNIZE_TABLE, MR_CLAUSE, OPTION_BODY
from ceql.spark.conf import PARSER_ENABLED

pytestmark = pytest.mark.spark

ESCAPED = "spark.sql.parser.escapedStringLiterals"
DOUBLE_QUOTED = "spark.sql.ansi.doubleQuotedIdentifiers"
BODY = "PATTERN (A B+) DEFINE B AS x > PREV(x)"
TF = MATCH_RECOGNIZE_TABLE
#: a body holding ;, ), quotes, a backslash and comments
ODD_BODY = ("PATTERN (A; B) DEFINE A AS s = 'it''s ) \\ \"q\"' -- ) ' (\n /* ) */ "
            "AND `odd )` > 0")


def _mr(source: str, body: str) -> str:
    """The rewritten call, the body written as a literal under Spark's default settings."""
    literal = "'" + body.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return f"{TF}(TABLE({source}), {OPTION_BODY} => {literal})"


#: (SQL text, its rewrite)
REWRITES = [
    # a table, with AS alias
    (f"SELECT * FROM t MATCH_RECOGNIZE ({BODY}) AS m", f"SELECT * FROM {_mr('t', BODY)} AS m"),
    # a qualified, backquoted name; the keyword in lower case; an alias without AS
    (f"SELECT m.* FROM db.`my t` match_recognize( {BODY} ) m",
     f"SELECT m.* FROM {_mr('db.`my t`', f' {BODY} ')} m"),
    # no alias, a keyword-like table name, the clause at the end of the text
    (f"SELECT * FROM events MATCH_RECOGNIZE ({BODY})", f"SELECT * FROM {_mr('events', BODY)}"),
    # a subquery without an alias: TABLE takes it as it is
    (f"SELECT * FROM (SELECT * FROM t WHERE x > 1) MATCH_RECOGNIZE ({BODY}) AS m",
     f"SELECT * FROM {_mr('(SELECT * FROM t WHERE x > 1)', BODY)} AS m"),
    # a subquery with an alias (with and without AS), a table with one, a table function call,
    # VALUES with column names: as a query
    (f"SELECT * FROM (SELECT * FROM t) s MATCH_RECOGNIZE ({BODY}) m",
     f"SELECT * FROM {_mr('SELECT * FROM (SELECT * FROM t) s', BODY)} m"),
    (f"SELECT * FROM (SELECT * FROM t) AS s MATCH_RECOGNIZE ({BODY})",
     f"SELECT * FROM {_mr('SELECT * FROM (SELECT * FROM t) AS s', BODY)}"),
    (f"SELECT * FROM t AS s MATCH_RECOGNIZE ({BODY})",
     f"SELECT * FROM {_mr('SELECT * FROM t AS s', BODY)}"),
    (f"SELECT * FROM range(10) MATCH_RECOGNIZE ({BODY})",
     f"SELECT * FROM {_mr('SELECT * FROM range(10)', BODY)}"),
    (f"SELECT * FROM (VALUES (1, 2)) AS v(x, y) MATCH_RECOGNIZE ({BODY})",
     f"SELECT * FROM {_mr('SELECT * FROM (VALUES (1, 2)) AS v(x, y)', BODY)}"),
    # a JOIN of two clauses, and a comma
    (f"SELECT * FROM t MATCH_RECOGNIZE ({BODY}) a JOIN u MATCH_RECOGNIZE (PATTERN (C)) b "
     "ON a.k = b.k, w MATCH_RECOGNIZE (PATTERN (D)) AS c",
     f"SELECT * FROM {_mr('t', BODY)} a JOIN {_mr('u', 'PATTERN (C)')} b ON a.k = b.k, "
     f"{_mr('w', 'PATTERN (D)')} AS c"),
    (f"SELECT * FROM t LEFT OUTER JOIN u MATCH_RECOGNIZE ({BODY}) b ON t.k = b.k",
     f"SELECT * FROM t LEFT OUTER JOIN {_mr('u', BODY)} b ON t.k = b.k"),
    # in a CTE, and over one
    (f"WITH c AS (SELECT * FROM t MATCH_RECOGNIZE ({BODY})) "
     f"SELECT * FROM c MATCH_RECOGNIZE (PATTERN (Z)) z",
     f"WITH c AS (SELECT * FROM {_mr('t', BODY)}) SELECT * FROM {_mr('c', 'PATTERN (Z)')} z"),
    # in a subquery that is itself a clause's source; in a parenthesised relation
    (f"SELECT * FROM (SELECT * FROM t MATCH_RECOGNIZE ({BODY}) x) MATCH_RECOGNIZE (PATTERN (Y))",
     "SELECT * FROM " + _mr(f"(SELECT * FROM {_mr('t', BODY)} x)", "PATTERN (Y)")),
    (f"SELECT * FROM (t MATCH_RECOGNIZE ({BODY}) AS m)",
     f"SELECT * FROM ({_mr('t', BODY)} AS m)"),
    # in a WHERE subquery
    (f"SELECT * FROM u WHERE k IN (SELECT k FROM t MATCH_RECOGNIZE ({BODY}))",
     f"SELECT * FROM u WHERE k IN (SELECT k FROM {_mr('t', BODY)})"),
    # the body holds ;, ), quotes and comments, moved as they are
    (f"SELECT * FROM t MATCH_RECOGNIZE ({ODD_BODY})", "SELECT * FROM " + _mr("t", ODD_BODY)),
    # the spark-sql CLI's escaped \; is a ;
    ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A \\; B))",
     f"SELECT * FROM {_mr('t', 'PATTERN (A ; B)')}"),
    # comments and a string literal before: Spark's reading
    (f"SELECT 'MATCH_RECOGNIZE (' AS s /* FROM t MATCH_RECOGNIZE ( */ FROM t -- x\n"
     f"MATCH_RECOGNIZE ({BODY})",
     f"SELECT 'MATCH_RECOGNIZE (' AS s /* FROM t MATCH_RECOGNIZE ( */ FROM {_mr('t', BODY)}"),
]

#: texts the rewrite leaves as they are
UNTOUCHED = [
    "SELECT 'FROM t MATCH_RECOGNIZE (PATTERN (A))' AS s FROM t",
    "SELECT \"FROM t MATCH_RECOGNIZE (PATTERN (A))\" AS s FROM t",
    "SELECT 1 -- FROM t MATCH_RECOGNIZE (PATTERN (A))",
    "SELECT 1 /* FROM t MATCH_RECOGNIZE (PATTERN (A)) */",
    "SELECT * FROM t `MATCH_RECOGNIZE` (x)",
    f"SELECT * FROM {TF}(TABLE(t), body => 'PATTERN (A)')",
    f"SELECT * FROM {TF.lower()}(TABLE(t), body => 'PATTERN (A)') AS m",
    "SELECT match_recognize(x) FROM t",              # a function of that name, in SELECT
    "SELECT * FROM t WHERE match_recognize(x)",
    "SELECT * FROM t WHERE x > 1 MATCH_RECOGNIZE (PATTERN (A))",
    "SELECT * FROM db.match_recognize(x)",
    "SELECT * FROM MATCH_RECOGNIZE (PATTERN (A))",   # no source
]


@pytest.fixture()
def conf(spark: Any) -> Iterator[Any]:
    """Sets session settings for a test and unsets them after."""
    touched: list[str] = []

    def set_conf(key: str, value: bool) -> None:
        touched.append(key)
        spark.conf.set(key, str(value).lower())

    yield set_conf
    for key in touched:
        spark.conf.unset(key)


def _syntax(spark: Any) -> Any:
    return spark._jvm.org.apache.spark.sql.ceql.MatchRecognizeSyntax


def _parsers(spark: Any) -> tuple[Any, Any]:
    ours = spark._jsparkSession.sessionState().sqlParser()
    return ours, ours.delegate()


def _parse(parser: Any, text: str) -> tuple[str, str]:
    """The plan ``parser`` reads in ``text`` (expression ids left out), or its error."""
    try:
        return "plan", re.sub(r"#\d+", "#", str(parser.parsePlan(text).toString()))
    except (Py4JJavaError, CapturedException) as e:
        return "error", f"{type(e).__name__}: {e}"


def _split(spark: Any, text: str) -> tuple[list[str], str]:
    r = spark._jsparkSession.sessionState().sqlParser().splitStatements(text)
    st = r.completeStatements()
    return [st.apply(i).statement() for i in range(st.size())], r.partialStatement()


@pytest.mark.parametrize(("sql", "rewritten"), REWRITES)
def test_the_clause_is_rewritten_into_the_table_function(
        spark: Any, sql: str, rewritten: str) -> None:
    assert _syntax(spark).rewrite(sql) == rewritten
    ours, theirs = _parsers(spark)
    got = _parse(ours, sql)
    assert got[0] == "plan", got
    assert got == _parse(theirs, rewritten)
    assert f"UnresolvedTableValuedFunction [{TF}]" in got[1]


@pytest.mark.parametrize("sql", UNTOUCHED)
def test_text_without_a_clause_is_untouched(spark: Any, sql: str) -> None:
    assert _syntax(spark).rewrite(sql) == sql
    ours, theirs = _parsers(spark)
    assert _parse(ours, sql) == _parse(theirs, sql)


def test_the_plan_holds_the_table_argument_and_the_body(spark: Any) -> None:
    ours, _ = _parsers(spark)
    plan = _parse(ours, f"SELECT * FROM db.t MATCH_RECOGNIZE ( {BODY} ) AS m")[1]
    assert (f"UnresolvedTableValuedFunction [{TF}], [table-argument# [], body =>  {BODY} ]"
            in plan)
    assert "UnresolvedRelation [db, t]" in plan
    assert "SubqueryAlias m" in plan


def test_an_inline_ceql_call_and_a_clause_in_one_statement(spark: Any) -> None:
    ours, theirs = _parsers(spark)
    sql = (f"SELECT * FROM MATCH_CEQL( SELECT * FROM s WHERE A ; B ) c "
           f"JOIN t MATCH_RECOGNIZE ({BODY}) m ON c.k = m.k")
    want = (f"SELECT * FROM MATCH_CEQL(query => 'SELECT * FROM s WHERE A ; B') c "
            f"JOIN {_mr('t', BODY)} m ON c.k = m.k")
    assert _parse(ours, sql) == _parse(theirs, want)
    # a call as the clause's source
    sql = f"SELECT * FROM MATCH_CEQL( SELECT * FROM s WHERE A ; B ) MATCH_RECOGNIZE ({BODY})"
    want = "SELECT * FROM " + _mr(
        "SELECT * FROM MATCH_CEQL(query => 'SELECT * FROM s WHERE A ; B')", BODY)
    assert _parse(ours, sql) == _parse(theirs, want)
    # MATCH_RECOGNIZE inside CEQL text is CEQL's
    sql = "SELECT * FROM MATCH_CEQL( SELECT * FROM t MATCH_RECOGNIZE (x) WHERE A ; B )"
    assert _syntax(spark).rewrite(sql) == sql


@pytest.mark.parametrize("escaped", [False, True])
def test_the_body_reads_back_exactly_in_either_mode(spark: Any, conf: Any, escaped: bool) -> None:
    conf(ESCAPED, escaped)
    ours, _ = _parsers(spark)
    body = "PATTERN (A) DEFINE A AS s = 'it''s' AND t = 'C:\\' AND u = '\"'"
    plan = _parse(ours, f"SELECT * FROM t MATCH_RECOGNIZE ({body})")
    assert plan[0] == "plan", plan
    assert f"body => {body}]" in plan[1]


def test_a_quote_no_literal_can_hold_is_refused(spark: Any, conf: Any) -> None:
    conf(ESCAPED, True)
    conf(DOUBLE_QUOTED, True)
    conf("spark.sql.ansi.enabled", True)
    with pytest.raises(ParseException, match=f"this {MR_CLAUSE} body has a quote"):
        spark.sql("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS s = 'x')")


def test_an_unclosed_clause_is_a_parse_error_naming_it(spark: Any) -> None:
    with pytest.raises(ParseException) as err:
        spark.sql("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS s = ')'")
    text = str(err.value)
    assert "Syntax error at or near 'MATCH_RECOGNIZE'" in text
    assert ("MATCH_RECOGNIZE ( at position 16 has no closing parenthesis; end its body with "
            "')'") in text


def test_with_the_parser_disabled_spark_alone_reads_the_text(spark: Any) -> None:
    sql = f"SELECT * FROM t MATCH_RECOGNIZE ({BODY}) AS m"
    ours, theirs = _parsers(spark)
    PARSER_ENABLED.set(spark, False)
    try:
        got = _parse(ours, sql)
        assert got[0] == "error" and "PARSE_SYNTAX_ERROR" in got[1]
        assert got == _parse(theirs, sql)
        assert _split(spark, "SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A; B)); SELECT 2") == (
            ["SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A", "B))"], "SELECT 2")
    finally:
        spark.conf.unset(PARSER_ENABLED.key)
    assert _parse(ours, sql)[0] == "plan"


def test_statement_splitting_keeps_a_body_whole(spark: Any) -> None:
    clause = ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A; B) DEFINE A AS s = ';' -- ;\n"
              "  AND x > 0) m")
    escaped = "SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A \\; B))"
    ceql = "SELECT * FROM MATCH_CEQL( SELECT * FROM s WHERE A; B )"
    text = f"SELECT 1; {clause}; SELECT ';' AS x; {ceql}; {escaped}"
    assert _split(spark, text) == (["SELECT 1", clause, "SELECT ';' AS x", ceql], escaped)
    # an unclosed clause keeps the rest of the text
    assert _split(spark, "SELECT 1; SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A; B); SELECT 2") \
        == (["SELECT 1"], "SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A; B); SELECT 2")


# ---------------------------------------------------------------- random statements

#: pieces of a body: MATCH_RECOGNIZE's strings (a backslash in one is a character: Spark's
#: lexer would read ``\\'`` as an escaped quote), quoted names and comments holding `)`, `;`,
#: quotes and the clause's own word
BODY_PIECES = ("PATTERN (A B+)", "DEFINE A AS s = 'it''s )'", "AND t = 'C:\\'", "-- ) ; '\n",
               "/* ) ( ' */", "`odd )`", "(x)", ";", "\"", "'FROM t MATCH_RECOGNIZE ('", "\n")
#: sources: (text, whether TABLE( ) takes it as written)
SOURCES = (("t", True), ("db.t", True), ("`my t`", True), ("events", True),
           ("(SELECT * FROM u WHERE x = ')')", True), ("t AS s", False), ("(SELECT 1) s", False),
           ("range(3)", False), ("(VALUES (1)) AS v(a)", False))
#: statements: {0}, {1} are clauses
CONTEXTS = ("SELECT * FROM {0}", "SELECT * FROM a JOIN {0} ON TRUE",
            "SELECT * FROM {0}, {1}", "WITH w AS (SELECT * FROM {0}) SELECT * FROM w",
            "SELECT * FROM ({0})", "SELECT * FROM {0} LEFT JOIN {1} ON x = y WHERE z > 0",
            "SELECT * FROM u WHERE k IN (SELECT k FROM {0})")
#: what may stand before a statement: decoys with the clause's text
DECOYS = ("", "/* FROM t MATCH_RECOGNIZE ( */ ", "-- FROM t MATCH_RECOGNIZE (\n")


@st.composite
def _clause(draw: st.DrawFn) -> tuple[str, str]:
    """A clause and its rewrite (the body's literal written for Spark's default settings)."""
    source, direct = draw(st.sampled_from(SOURCES))
    body = draw(st.lists(st.sampled_from(BODY_PIECES), min_size=1, max_size=6).map(" ".join))
    alias = draw(st.sampled_from(("", " m", " AS m")))
    word = draw(st.sampled_from((MR_CLAUSE, MR_CLAUSE.lower(), "Match_Recognize")))
    space = draw(st.sampled_from(("", " ", "\n")))
    table = source if direct else f"SELECT * FROM {source}"
    return f"{source} {word}{space}({body}){alias}", _mr(table, body) + alias


@st.composite
def _statements(draw: st.DrawFn) -> tuple[str, str]:
    context = draw(st.sampled_from(CONTEXTS))
    clauses = [draw(_clause()) for _ in range(context.count("{"))]
    decoy = draw(st.sampled_from(DECOYS))
    return (decoy + context.format(*(c for c, _ in clauses)),
            decoy + context.format(*(r for _, r in clauses)))


def test_the_generator_draws_every_piece() -> None:
    seen: set[str] = set()

    def all_seen(case: tuple[str, str]) -> bool:
        seen.update(p for p in (*BODY_PIECES, *(s for s, _ in SOURCES), *DECOYS[1:])
                    if p in case[0])
        return len(seen) == len(BODY_PIECES) + len(SOURCES) + len(DECOYS) - 1

    find(_statements(), all_seen, settings=settings(max_examples=2000, database=None))


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_statements())
def test_random_statements_read_as_their_rewrite(
        spark: Any, conf: Any, case: tuple[str, str]) -> None:
    text, rewritten = case
    assert _syntax(spark).rewrite(text) == rewritten
    ours, theirs = _parsers(spark)
    conf(ESCAPED, False)
    want = _parse(theirs, rewritten)
    assert want[0] == "plan", want
    for escaped in (False, True):
        conf(ESCAPED, escaped)
        assert _parse(ours, text) == want, escaped


# ---------------------------------------------------------------- end to end

_TICKS = [  # a V per symbol, and one symbol with no V
    {"sym": "A", "ts": 1, "price": 10}, {"sym": "B", "ts": 1, "price": 5},
    {"sym": "A", "ts": 2, "price": 8}, {"sym": "B", "ts": 2, "price": 6},
    {"sym": "A", "ts": 3, "price": 7}, {"sym": "B", "ts": 3, "price": 7},
    {"sym": "A", "ts": 4, "price": 9}, {"sym": "A", "ts": 5, "price": 12},
    {"sym": "A", "ts": 6, "price": 11},
]
_V = ("PARTITION BY sym ORDER BY ts MEASURES FIRST(A.price) AS top, LAST(B.price) AS bottom, "
      "LAST(C.price) AS back, MATCH_NUMBER() AS n {rows} AFTER MATCH SKIP {skip} "
      "PATTERN (A B+ C+) DEFINE B AS price < PREV(price), C AS price > PREV(price)")


def _rows(out: Any) -> list[dict[str, Any]]:
    return sorted((r.asDict() for r in out.collect()),
                  key=lambda r: tuple(str(r[k]) for k in sorted(r)))


@pytest.mark.parametrize(("rows", "skip"), [("ONE ROW PER MATCH", "PAST LAST ROW"),
                                            ("ALL ROWS PER MATCH", "TO NEXT ROW"),
                                            ("ONE ROW PER MATCH", "TO LAST C")])
def test_inline_clauses_give_the_engines_rows(spark: Any, rows: str, skip: str) -> None:
    """``spark.sql`` with the inline clause — over a view, a subquery and in a JOIN — gives
    the Python engine's rows."""
    import ceql

    body = _V.format(rows=rows, skip=skip)
    spark.createDataFrame(_TICKS).createOrReplaceTempView("ticks")
    want = sorted(ceql.match_recognize(body).run(_TICKS),
                  key=lambda r: tuple(str(r[k]) for k in sorted(r)))
    assert want  # the data has matches under every option
    assert _rows(spark.sql(f"SELECT * FROM ticks MATCH_RECOGNIZE ({body}) AS m")) == want
    assert _rows(spark.sql("SELECT * FROM (SELECT sym, ts, price FROM ticks WHERE ts > 0) "
                           f"MATCH_RECOGNIZE ({body})")) == want
    joined = spark.sql(f"SELECT m.*, s.name FROM ticks MATCH_RECOGNIZE ({body}) m "
                       "JOIN (SELECT 'A' AS sym, 'alpha' AS name) s ON m.sym = s.sym")
    assert _rows(joined) == [{**r, "name": "alpha"} for r in want if r["sym"] == "A"]


def test_an_inline_body_error_has_its_caret(spark: Any) -> None:
    import ceql.spark

    spark.createDataFrame(_TICKS).createOrReplaceTempView("ticks")
    with pytest.raises(Exception) as info:
        spark.sql("SELECT * FROM ticks MATCH_RECOGNIZE (PATTERN (A B) DEFINE B AS price >> 1)"
                  ).collect()
    err = ceql.spark.unwrap(info.value)
    assert err is not None and "^" in str(err) and "line 1" in str(err).lower()
