"""The pure-Python reading of inline MATCH_CEQL calls (``ceql.spark.inline_calls``), which
mirrors the shim's: calls only among Spark's tokens, CEQL's rules inside a call. The shim and
this mirror are compared on random SQL in tests/spark/test_inline_lexing.py."""

from __future__ import annotations

import pytest

from ceql.spark.inline_calls import InlineCall, inline_calls

CALL = "MATCH_CEQL( SELECT * FROM ev WHERE A )"


@pytest.mark.parametrize("sql", [
    "SELECT R'C:\\' AS p, 'see MATCH_CEQL(SELECT * FROM ev WHERE A)' AS note",
    f"SELECT '{CALL}'", f'SELECT "x\\" {CALL}"', f"SELECT r\"C:\\\" AS p, `{CALL}`",
    f"SELECT 1 -- {CALL}", f"SELECT 1 -- C:\\\n{CALL}", f"SELECT 1 /* a /* b */ {CALL} */",
    f"SELECT 1 /* {CALL}", f"SELECT 'unclosed {CALL}", f"SELECT x.{CALL}",
    "SELECT MATCH_CEQL(TABLE(t), query => 'SELECT')",
])
def test_text_that_is_not_a_call_is_none(sql: str) -> None:
    assert inline_calls(sql) == []


def test_calls_and_their_ends() -> None:
    sql = f"SELECT /*+ HINTX('*/') */ * FROM {CALL} AS m, r'x' x, {CALL}"
    first = sql.index("MATCH")
    second = sql.index("MATCH", first + 1)
    assert inline_calls(sql) == [
        InlineCall(first, first + 12, first + len(CALL)),
        InlineCall(second, second + 12, len(sql))]
    # inside: CEQL's strings and comments; options in SQL
    sql = ("SELECT * FROM match_ceql( /* c */ SELECT * FROM s WHERE A[n = 'it''s )'] -- )\n"
           "; B, time => concat('t', \"s)\") ) AS m")
    assert inline_calls(sql) == [InlineCall(14, sql.index("SELECT *", 20),
                                            sql.index(" AS m"))]
    assert inline_calls("SELECT * FROM MATCH_CEQL( SELECT * FROM s WHERE A[n = ')") == [
        InlineCall(14, 26, None)]


# ---------------------------------------------------------------- MATCH_RECOGNIZE

#: Spark's own parser on an inline MATCH_RECOGNIZE (PySpark 4.3, no ceql extension)
MR_PARSE_ERROR = (
    "\n[PARSE_SYNTAX_ERROR] Syntax error at or near '('. SQLSTATE: 42601 (line 1, pos 32)\n\n"
    "== SQL ==\nSELECT * FROM t MATCH_RECOGNIZE (PATTERN (A B+) DEFINE B AS x > PREV(x)) AS m\n"
    "--------------------------------^^^\n")


def test_an_error_at_or_inside_a_match_recognize_clause() -> None:
    from ceql.spark.inline import MR_NEEDS_EXTENSION, refused
    from ceql.spark.inline_calls import inside_mr_clause

    assert inside_mr_clause("SELECT * FROM t MATCH_RECOGNIZE ")
    assert inside_mr_clause("SELECT * FROM t match_recognize(PATTERN (A) DEFINE A AS s = ')'")
    assert inside_mr_clause("SELECT * FROM t MATCH_RECOGNIZE ( PATTERN (A) -- )\n DEFINE")
    assert not inside_mr_clause("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A)) AS m WHER")
    assert not inside_mr_clause("SELECT 'MATCH_RECOGNIZE (PATTERN (A")
    assert not inside_mr_clause("SELECT 1 -- MATCH_RECOGNIZE (\n, x.MATCH_RECOGNIZE (")
    assert not inside_mr_clause("SELECT * FRM")
    assert refused(MR_PARSE_ERROR) == MR_NEEDS_EXTENSION
    # an error elsewhere stays Spark's
    assert refused(MR_PARSE_ERROR.replace("pos 32", "pos 7")) is None
