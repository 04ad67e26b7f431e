"""Work stays bounded under LIMIT and WITHIN (issue 28 item 3), counted — never timed.

* LIMIT n cuts the enumeration, not only the output: the matches built per end position are
  at most n (before, a spine of unions was walked to its end before LIMIT cut, so
  ``A+ ; B LIMIT 1`` built every match below each B: cubic work in the stream).
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

import ceql
import ceql.runtime.enumeration as enumeration

warnings.simplefilter("ignore", ceql.UnboundedOutputWarning)


def linear(counts: list[int]) -> bool:
    """Doubling the input at most doubles the count (with slack for the constant part)."""
    return all(b <= 2 * a + 64 for a, b in itertools.pairwise(counts))


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many matches the enumerator builds (``[count]``), wherever LIMIT cuts them."""
    count = [0]
    new = enumeration._new

    def counting_new(cls: type) -> Any:
        count[0] += 1
        return new(cls)

    monkeypatch.setattr(enumeration, "_new", counting_new)
    yield count


def alternating(n: int) -> list[dict[str, Any]]:
    return [{"type": "AB"[i % 2], "v": i} for i in range(n)]


@pytest.mark.parametrize("text", [
    "SELECT * FROM S WHERE A+ ; B LIMIT 1",
    "SELECT * FROM S WHERE A+ ; B LIMIT 3",
    "SELECT * FROM S WHERE (A OR B)+ ; B LIMIT 2",
    "SELECT * FROM S WHERE A+ ; B WITHIN 400 EVENTS LIMIT 1",
])
def test_limit_cuts_the_enumeration(built: list[int], text: str) -> None:
    """Matches built grow linearly with the events (at most LIMIT per end position)."""
    q = ceql.compile(text)
    limit = q.ast.limit
    assert limit is not None
    counts = []
    for n in (100, 200, 400, 800):
        built[0] = 0
        out = list(q.run(alternating(n)))
        assert len(out) <= limit * n
        assert built[0] <= limit * n
        counts.append(built[0])
    assert linear(counts), counts


@pytest.mark.parametrize("text", [
    "SELECT * FROM S WHERE A+ ; B",
    "SELECT * FROM S WHERE (A OR B)+ ; B WITHIN 9 EVENTS",
    "SELECT * FROM S WHERE A ; (A OR B)+ ; B",
])
@pytest.mark.parametrize("limit", [0, 1, 2, 5, 40])
def test_limit_keeps_the_first_matches_of_each_end(text: str, limit: int) -> None:
    """LIMIT n gives, per end position, the first n matches of the full enumeration."""
    events = alternating(14)
    full: dict[int, list[Any]] = {}
    for m in ceql.compile(text).run(events):
        full.setdefault(m.positions[-1], []).append(m.positions)
    cut: dict[int, list[Any]] = {}
    for m in ceql.compile(f"{text} LIMIT {limit}").run(events):
        cut.setdefault(m.positions[-1], []).append(m.positions)
    assert cut == {k: v[:limit] for k, v in full.items() if limit}
