"""The golden suite: every directory under ``tests/golden/`` is one case.

A case holds ``query.ceql`` (its first line a ``-- why:`` comment explaining the expected
result), ``events.jsonl`` (one JSON event per line), optionally ``options.json`` (keyword
arguments of ``run``, e.g. ``{"time": "ts"}``) and ``expected.jsonl``: one line per match,
``{"start": s, "end": e, "positions": [...]}`` plus ``"partition": [...]`` when the query
partitions, sorted by (end, start, positions) and written with ``json.dumps``' default spacing —
the match-file format of ``/work/shared/anchors/README.md``.

Expected files were computed with the brute-force reference and checked by hand. For LIMIT
queries they hold one valid pick of n per end: *which* n is the enumeration's order, which
SEMANTICS.md leaves unspecified, so the engine is held to the LIMIT rule (``_check_limit``), not
to that pick.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

import ceql
from reference import reference_matches

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(p for p in GOLDEN.iterdir() if p.is_dir() and (p / "query.ceql").exists())


def _load(case: Path) -> tuple[str, list[dict[str, Any]], dict[str, Any], list[str]]:
    query = (case / "query.ceql").read_text()
    events = [json.loads(line) for line in (case / "events.jsonl").read_text().splitlines()
              if line.strip()]
    options_file = case / "options.json"
    options = json.loads(options_file.read_text()) if options_file.exists() else {}
    expected = [line for line in (case / "expected.jsonl").read_text().splitlines()
                if line.strip()]
    return query, events, options, expected


def _line(start: int, end: int, positions: tuple[int, ...] | list[int],
          partition: tuple[Any, ...] | list[Any] | None) -> str:
    d: dict[str, Any] = {"start": start, "end": end, "positions": list(positions)}
    if partition is not None:
        d["partition"] = list(partition)
    return json.dumps(d)


def _sort(lines: list[str]) -> list[str]:
    def key(line: str) -> tuple[int, int, list[int]]:
        d = json.loads(line)
        return (d["end"], d["start"], d["positions"])
    return sorted(lines, key=key)


def _check_limit(lines: list[str], ref: list[Any], limit: int, partitioned: bool) -> None:
    """At each (partition, end), ``lines`` are ``min(limit, available)`` of the reference's."""
    available: dict[tuple[str, int], set[str]] = defaultdict(set)
    for m in ref:
        available[(json.dumps(list(m.partition)), m.end)].add(
            _line(m.start, m.end, m.positions, m.partition if partitioned else None))
    chosen: dict[tuple[str, int], set[str]] = defaultdict(set)
    for line in lines:
        d = json.loads(line)
        chosen[(json.dumps(d.get("partition", [])), d["end"])].add(line)
    assert len(set(lines)) == len(lines)
    assert set(chosen) <= set(available)
    for key, here in available.items():
        assert chosen[key] <= here
        assert len(chosen[key]) == min(limit, len(here))


def test_the_suite_is_there() -> None:
    assert len(CASES) >= 15


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_files_are_well_formed(case: Path) -> None:
    query, _, options, expected = _load(case)
    assert query.startswith("-- why:"), "query.ceql must start with a '-- why:' comment"
    assert set(options) <= {"time", "type_key", "stream_key"}
    assert expected == _sort(expected), "expected.jsonl must be sorted by (end, start, positions)"
    assert len(set(expected)) == len(expected)
    for line in expected:
        assert json.dumps(json.loads(line)) == line


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_engine(case: Path) -> None:
    query, events, options, expected = _load(case)
    compiled = ceql.compile(query)
    partitioned = bool(compiled.ast.partition_by)
    got = [_line(m.start_position, m.end_position, m.positions,
                 m.partition if partitioned else None)
           for m in compiled.run(events, **options)]
    if compiled.ast.limit is None:
        assert _sort(got) == expected
    else:
        _check_limit(got, reference_matches(compiled.ast, events, **options),
                     compiled.ast.limit, partitioned)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_reference_agrees(case: Path) -> None:
    """The expected file is the reference's answer (for LIMIT: a LIMIT-sized part of it)."""
    from ceql.frontends.ceql import parse

    query, events, options, expected = _load(case)
    q = parse(query)
    ref = reference_matches(q, events, **options)
    lines = [_line(m.start, m.end, m.positions, m.partition if q.partition_by else None)
             for m in ref]
    if q.limit is None:
        assert _sort(lines) == expected
    else:
        _check_limit(expected, ref, q.limit, bool(q.partition_by))
