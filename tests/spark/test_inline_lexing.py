"""The inline syntax rewrites only its own calls (issue 28.5): the shim finds
``MATCH_CEQL( <CEQL> )`` among the tokens Spark's lexer reads, so text inside a string, a raw
string, a quoted name, a comment or a hint is never rewritten, and the CEQL text becomes a
literal Spark reads back exactly under either ``spark.sql.parser.escapedStringLiterals``.

The differential: on random SQL texts (tests/spark/sql_texts.py), the shim's parser gives
exactly the plan (or the error) Spark's own parser gives for the text — with each real call's
CEQL text as the call's query — and finds calls exactly where the text has real ones, as does
the pure-Python mirror ``ceql.spark.inline_calls``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, find, given, note, settings
from hypothesis import strategies as st
from py4j.protocol import Py4JJavaError
from pyspark.errors import ParseException
from pyspark.errors.exceptions.captured import CapturedException
from sql_texts import SqlText, placeholder, sql_texts

from ceql.spark.inline_calls import inline_calls
from ceql.spark.udtf.call import sql_string

ESCAPED = "spark.sql.parser.escapedStringLiterals"
MODES = (False, True)

EVENTS = [("A", 1, "it's \\ \"q\""), ("A", 2, "other"), ("B", 3, "")]
QUERY = "SELECT * FROM ev WHERE A ; B FILTER A[x = 'it''s \\ \"q\"']"


@pytest.fixture(scope="module")
def ev(spark: Any) -> Iterator[None]:
    spark.createDataFrame(EVENTS, "type string, ts long, x string").createOrReplaceTempView("ev")
    yield
    spark.catalog.dropTempView("ev")


@pytest.fixture()
def escaped(spark: Any) -> Iterator[Any]:
    """Sets escapedStringLiterals for a test and puts it back after."""
    def set_mode(on: bool) -> None:
        spark.conf.set(ESCAPED, str(on).lower())

    yield set_mode
    spark.conf.unset(ESCAPED)


def _parsers(spark: Any) -> tuple[Any, Any]:
    ours = spark._jsparkSession.sessionState().sqlParser()
    return ours, ours.delegate()


def _parse(parser: Any, text: str) -> tuple[str, str]:
    """The plan ``parser`` reads in ``text`` (expression ids, new on every parse, left out),
    or its error."""
    try:
        return "plan", re.sub(r"#\d+", "#", str(parser.parsePlan(text).toString()))
    except (Py4JJavaError, CapturedException) as e:  # PySpark turns Spark's into its own
        return "error", f"{type(e).__name__}: {e}"


def _calls(spark: Any, text: str) -> list[tuple[int, int]]:
    """Where the shim finds calls in ``text``: [start, end) in Java chars."""
    found = spark._jvm.org.apache.spark.sql.ceql.CeqlSyntax.calls(text)
    return [(found.apply(i).start(), found.apply(i).end(_char_offsets(text)[-1]))
            for i in range(found.size())]


def _char_offsets(text: str) -> list[int]:
    """Java's char index of each Python (code point) index of ``text``."""
    out, n = [], 0
    for ch in text:
        out.append(n)
        n += 2 if ord(ch) > 0xFFFF else 1
    return [*out, n]


# ---------------------------------------------------------------- the cases

def test_a_string_literal_after_a_raw_string_is_not_rewritten(spark: Any, escaped: Any) -> None:
    sql = "SELECT R'C:\\' AS p, 'see MATCH_CEQL(SELECT * FROM ev WHERE A)' AS note"
    escaped(False)
    row = spark.sql(sql).collect()[0]
    assert (row.p, row.note) == ("C:\\", "see MATCH_CEQL(SELECT * FROM ev WHERE A)")
    ours, spark_parser = _parsers(spark)
    for mode in MODES:
        escaped(mode)
        assert _parse(ours, sql) == _parse(spark_parser, sql)


@pytest.mark.parametrize("mode", MODES)
def test_an_inline_query_with_a_ceql_string_runs_in_either_mode(
        spark: Any, ev: None, escaped: Any, mode: bool) -> None:
    escaped(mode)
    rows = spark.sql("SELECT match_start, match_end FROM "
                     f"MATCH_CEQL( {QUERY} , time => 'ts')").collect()
    assert [tuple(r) for r in rows] == [(1, 3)]


def test_hints_and_nested_comments_are_read_as_spark_reads_them(spark: Any) -> None:
    texts = {
        # a hint is code: a string in it may hold */
        "SELECT /*+ HINTX('*/ MATCH_CEQL(SELECT * FROM ev WHERE A)') */ 1": [],
        # comments nest: the call is still inside the outer one
        "SELECT 1 /* a /* b */ MATCH_CEQL(SELECT * FROM ev WHERE A) */": [],
        # a comment's line goes on after a backslash at its end
        "SELECT 1 -- C:\\\nMATCH_CEQL(SELECT * FROM ev WHERE A)": [],
    }
    for text, spans in texts.items():
        assert _calls(spark, text) == spans, text
    # a character outside the BMP before a call: positions are in chars
    text = "SELECT '\U0001f600' AS e, * FROM MATCH_CEQL( SELECT * FROM ev WHERE A )"
    java = _char_offsets(text)
    assert _calls(spark, text) == [(java[text.index("MATCH")], java[-1])]


@pytest.mark.parametrize("mode", MODES)
def test_the_ceql_literal_reads_back_exactly(spark: Any, escaped: Any, mode: bool) -> None:
    escaped(mode)
    syntax = spark._jvm.org.apache.spark.sql.ceql.CeqlSyntax
    how = syntax.DefaultLiterals().copy(mode, False)
    _, spark_parser = _parsers(spark)

    @settings(max_examples=60)
    @given(st.lists(st.sampled_from(["'", '"', "\\", "a", " ", "\n", "''", "\\'", "é"]),
                    max_size=8).map("".join))
    def check(s: str) -> None:
        literal = syntax.sqlString(s, how)
        note(literal)
        value = str(spark_parser.parseExpression(literal).eval(None).toString())
        lone_backslash = mode and (len(s) - len(s.rstrip("\\"))) % 2 == 1
        assert value == (s + "\n" if lone_backslash else s)

    check()


@pytest.mark.parametrize("mode", MODES)
def test_the_strings_ceql_writes_in_sql_read_back_in_either_mode(
        spark: Any, escaped: Any, mode: bool) -> None:
    """The Python side's literals (a time_format pattern, in the ordering and the prefilter)."""
    escaped(mode)
    pattern, odd = "yyyy-MM-dd'T'HH:mm:ss", "C:\\ it's"
    row = spark.sql(f"SELECT {sql_string(pattern)} AS p, {sql_string(odd)} AS q, "
                    f"try_to_timestamp('2024-01-01T00:00:01', {sql_string(pattern)}) AS t"
                    ).collect()[0]
    assert (row.p, row.q, row.t) == (pattern, odd, datetime(2024, 1, 1, 0, 0, 1))


@pytest.mark.parametrize("mode", MODES)
def test_a_time_format_with_quoted_text_in_either_mode(
        spark: Any, escaped: Any, mode: bool) -> None:
    escaped(mode)
    spark.createDataFrame([("A", "2024-01-01T00:00:09"), ("B", "2024-01-01T00:00:10"),
                           ("A", "2023-12-31T23:59:59")], "type string, ts string"
                          ).createOrReplaceTempView("text_times")
    rows = spark.sql("SELECT match_start FROM MATCH_CEQL( SELECT * FROM text_times WHERE A ; B "
                     "WITHIN 5 SECONDS, time_format => \"yyyy-MM-dd'T'HH:mm:ss\")").collect()
    assert [r.match_start for r in rows] == [datetime(2024, 1, 1, 0, 0, 9)]


def test_a_lone_quote_with_escaped_literals_and_double_quoted_names(
        spark: Any, ev: None, escaped: Any) -> None:
    escaped(True)
    spark.conf.set("spark.sql.ansi.doubleQuotedIdentifiers", "true")
    try:
        with pytest.raises(ParseException, match="no SQL string literal can hold"):
            spark.sql(f"SELECT * FROM MATCH_CEQL( {QUERY} )")
        rows = spark.sql("SELECT * FROM MATCH_CEQL( SELECT * FROM ev WHERE A ; B )").collect()
        assert len(rows) == 2
    finally:
        spark.conf.unset("spark.sql.ansi.doubleQuotedIdentifiers")


# ---------------------------------------------------------------- the differential

CONSTRUCTS = ("R'", 'r"', "\\'", "`", "/*+", "/* /*", "--", "\\\n", "\U0001f600", "MATCH_CEQL(",
              "MATCH_CEQL( SELECT * FROM ev WHERE A )")


def test_the_generator_draws_every_construct_with_real_calls() -> None:
    seen: set[str] = set()

    def all_seen(t: SqlText) -> bool:
        if t.calls:
            seen.update(c for c in CONSTRUCTS if c in t.text)
        return seen == set(CONSTRUCTS)

    find(sql_texts(), all_seen, settings=settings(max_examples=1000, database=None))
    find(sql_texts(), lambda t: t.expected is None, settings=settings(database=None))
    find(sql_texts(), lambda t: len(t.calls) > 1, settings=settings(database=None))


@settings(max_examples=120, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sql_texts())
def test_the_shim_reads_sql_as_spark_does(spark: Any, escaped: Any, case: SqlText) -> None:
    ours, spark_parser = _parsers(spark)
    text = case.text
    java = _char_offsets(text)
    shim = _calls(spark, text)
    # the pure-Python mirror finds the same calls, unclosed ones too
    assert [(java[c.start], java[len(text) if c.end is None else c.end])
            for c in inline_calls(text)] == shim
    whole = [(java[s], java[e]) for s, e, _ in case.calls]
    if case.expected is None:  # cut inside a call, which is then unclosed or no call at all
        assert shim[:len(whole)] == whole
        if whole:
            return
    else:
        assert shim == whole
    for mode in MODES:
        escaped(mode)
        got = _parse(ours, text)
        if case.expected is None:
            theirs = _parse(spark_parser, text)
            assert got == theirs or "has no closing parenthesis" in got[1], (mode, got, theirs)
            continue
        if not case.calls:
            assert got == _parse(spark_parser, text), mode
            continue
        kind, want = _parse(spark_parser, case.expected)
        if kind == "error":  # the messages quote different texts
            assert got[0] == "error", (mode, got)
            continue
        for i, (_, _, ceql) in enumerate(case.calls):
            want = want.replace(placeholder(i), ceql)
        assert got == (kind, want), mode
