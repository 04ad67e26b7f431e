"""The engine stack: chosen once per query (``Query.engine``), built as chosen, named by
``explain``, and each wrapper doing its part (same matches as the layers below it)."""

from __future__ import annotations

import random
import warnings

import pyarrow as pa
import pytest

import ceql
from ceql.errors import CeqlWarning

CORE = "CORE's Algorithm 1 over the tECS"
REGISTERS = "register runs, Algorithm 1 over (state, registers)"
JOIN = ("a chain with ';' on whole columns (each batch's matches joined backwards from their "
        "last element: partition, equalities and window by sorted search, conditions on the "
        "candidate arrays)")

CASES = [
    ("SELECT * FROM S WHERE A ; B", {}, CORE),
    ("SELECT * FROM S WHERE A ; B WITHIN 3 SECONDS", {}, f"lazy regions → {CORE}"),
    ("SELECT * FROM S WHERE A ; B WITHIN 3 SECONDS", {"lazy": False}, CORE),
    ("SELECT * FROM S WHERE A ; B WITHIN 3 SECONDS", {"keep_events": True},
     f"kept rows → lazy regions → {CORE}"),
    ("SELECT * FROM S WHERE A AS a ; B AS b FILTER b[v > a.v]", {}, REGISTERS),
    ("SELECT * FROM S WHERE A AS a ; B AS b FILTER b[v > a.v] WITHIN 3 EVENTS", {}, JOIN),
    ("SELECT * FROM S WHERE A ; B ; NOT C WITHIN 3 EVENTS", {}, f"edge NOTs → {CORE}"),
    ("SELECT * FROM S WHERE A AS a ; B ; NOT (C AS c) FILTER c[v > a.v] WITHIN 3 EVENTS", {},
     f"kept rows → edge NOTs → {CORE}"),
    ("SELECT LAST * FROM S WHERE A ; B ; NOT C WITHIN 3 EVENTS", {},
     "edge NOTs → Algorithm 1 over the tECS without unions, a LAST chain per (state, start)"),
]


@pytest.mark.parametrize(("text", "opts", "name"), CASES)
def test_the_stack_is_chosen_once_and_built_as_chosen(text: str, opts: dict[str, bool],
                                                      name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CeqlWarning)
        q = ceql.compile(text)
    assert q.engine(**opts).name == name
    ev = q.evaluator(time="t", **opts)
    assert ev._engine.name == name
    if not opts:
        assert f"engine: {name}" in str(ceql.explain(q)).splitlines()


def _rows(n: int) -> list[dict[str, object]]:
    rng = random.Random(7)
    return [{"type": rng.choice("AABBC"), "v": rng.randrange(10), "t": i} for i in range(n)]


@pytest.mark.parametrize(("text", "opts", "name"), CASES)
def test_every_stack_gives_the_rows_matches_on_arrow(text: str, opts: dict[str, bool],
                                                     name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CeqlWarning)
        q = ceql.compile(text)
    rows = _rows(60)
    by_rows = q.evaluator(time="t", **opts)
    by_arrow = q.evaluator(time="t", **opts)
    got_rows = [*by_rows.feed(rows[:30]), *by_rows.feed(rows[30:]), *by_rows.close()]
    got_arrow = [*by_arrow.feed(pa.Table.from_pylist(rows[:30])),
                 *by_arrow.feed(pa.Table.from_pylist(rows[30:])), *by_arrow.close()]
    assert got_rows, "the case must have matches to compare"
    assert [m.positions for m in got_rows] == [m.positions for m in got_arrow]
    keep = opts.get("keep_events", False)
    for a, b in zip(got_rows, got_arrow, strict=True):
        assert (a.events is not None) == keep == (b.events is not None)
        if keep:
            assert [e["v"] for e in a.events] == [e["v"] for e in b.events]
