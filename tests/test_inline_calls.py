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
