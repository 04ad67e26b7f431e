"""The golden suite: every directory under tests/golden/ is a case.

A case holds ``query.ceql`` (its first line, a ``-- why:`` comment, explains the expected
result), ``events.jsonl`` (one event per line), optionally ``options.json`` (keyword arguments
of ``Query.run``, e.g. ``{"time": "t"}``) and ``expected.jsonl`` (one match per line,
``{"start", "end", "positions"[, "partition"]}``, sorted by end, start, positions).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import ceql

GOLDEN = Path(__file__).resolve().parent / "golden"
CASES = sorted(p for p in GOLDEN.iterdir() if p.is_dir())


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _rows(matches: list[ceql.Match]) -> list[dict[str, Any]]:
    return sorted((m.to_dict() for m in matches),
                  key=lambda r: (r["end"], r["start"], r["positions"]))


def test_the_suite_is_there() -> None:
    assert len(CASES) >= 15


@pytest.mark.parametrize("case", CASES, ids=[p.name for p in CASES])
def test_golden_case(case: Path) -> None:
    text = (case / "query.ceql").read_text(encoding="utf-8")
    assert text.startswith("-- why:"), "explain the expected result on the first line"
    events = _lines(case / "events.jsonl")
    opts = json.loads((case / "options.json").read_text()) if (case / "options.json").exists() \
        else {}
    expected = _lines(case / "expected.jsonl")
    q = ceql.compile(text)
    assert _rows(list(q.run(events, **opts))) == expected
    # from_pylist takes its columns from the first row: give every row every key
    names = list(dict.fromkeys(k for e in events for k in e))
    table = pa.Table.from_pylist([{k: e.get(k) for k in names} for e in events])
    assert _rows(q.evaluator(**opts).feed(table)) == expected
