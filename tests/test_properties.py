"""Property tests: the engine against the brute-force reference on random queries and streams.

Queries are generated as ASTs (``tests/strategies.py``), written out with ``format_query`` and
compiled from that text; the reference evaluates the AST itself. Profiles: ``HYPOTHESIS_PROFILE``
= ``dev`` (100 examples, default) or ``ci`` (300).

Conventions these tests rely on (the reference's reading of SEMANTICS.md):
* outputs are compared as multisets of ``(end, start, positions, partition)`` — the engine must
  report each complex event exactly once;
* LIMIT n: at every (partition, end) the engine's outputs are a subset of the reference's (which
  applies CONSUME BY but not LIMIT) of size ``min(n, available)``;
* without a time attribute, time windows measure original positions;
* ``/`` is true division, ``%`` is only generated on non-negative operands.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa
from hypothesis import given, note, target
from hypothesis import strategies as st
from reference import RefMatch, reference_matches
from strategies import PROFILE, Case, MultiCase, cases, core, multi_cases, queries

import ceql
from ceql import _ast as A
from ceql._format import format_query

Key = tuple[int, int, tuple[int, ...], tuple[Any, ...]]


def keys(matches: Iterable[Any]) -> list[Key]:
    """``(end, start, positions, partition)`` of each engine match, in output order."""
    return [(m.end_position, m.start_position, tuple(m.positions), tuple(m.partition))
            for m in matches]


def check_against_reference(got: Sequence[Key], ref: Sequence[RefMatch],
                            limit: int | None) -> None:
    """The engine's outputs ``got`` against the reference's, with the LIMIT rule."""
    want = [tuple(m) for m in ref]
    dupes = [k for k, n in Counter(got).items() if n > 1]
    assert not dupes, f"complex events output more than once: {dupes}"
    if limit is None:
        missing = sorted(set(want) - set(got))
        extra = sorted(set(got) - set(want))
        assert not missing and not extra, f"missing {missing}; unexpected {extra}"
        return
    groups: dict[tuple[Any, int], set[Key]] = defaultdict(set)
    for k in want:
        groups[(k[3], k[0])].add(k)  # type: ignore[arg-type]
    got_groups: dict[tuple[Any, int], set[Key]] = defaultdict(set)
    for k in got:
        got_groups[(k[3], k[0])].add(k)
    for g, ks in got_groups.items():
        extra = sorted(ks - groups.get(g, set()))
        assert not extra, f"unexpected {extra}"
    for g, ks in groups.items():
        n = len(got_groups.get(g, set()))
        assert n == min(limit, len(ks)), (
            f"at end {g[1]} (partition {g[0]!r}): {n} outputs, expected min({limit}, {len(ks)})")


def _show(case: Case) -> tuple[A.Query, list[dict[str, Any]], str | None, str]:
    q, events, time = case
    text = format_query(q)
    note(f"query:\n{text}")
    note(f"events ({len(events)}):")
    for i, e in enumerate(events):
        note(f"  {i}: {e}")
    note(f"time={time!r}")
    return q, events, time, text


# ---------------------------------------------------------------- the engine equals the reference


@PROFILE
@given(multi_cases())
def test_engine_equals_reference(case: MultiCase) -> None:
    """The query, and its bare WHERE under the same strategy, on up to three streams."""
    q0, streams, time = case
    total = 0
    for q in (q0, replace(core(q0), strategy=q0.strategy)):
        text = format_query(q)
        compiled = ceql.compile(text)
        for events in streams:
            _show((q, events, time))
            ref = reference_matches(q, events, time=time)
            total += len(ref)
            got = keys(compiled.run(events, time=time))
            note(f"reference: {[tuple(m) for m in ref]}")
            note(f"engine:    {got}")
            check_against_reference(got, ref, q.limit)
    target(float(total), label="reference outputs")


@PROFILE
@given(cases())
def test_outputs_come_in_stream_order(case: Case) -> None:
    """Outputs for position j are produced when j is read: ends never decrease."""
    q, events, time, text = _show(case)
    got = keys(ceql.compile(text).run(events, time=time))
    ends = [k[0] for k in got]
    assert ends == sorted(ends)


# ---------------------------------------------------------------- feeding in chunks


def _splits(n: int) -> st.SearchStrategy[list[int]]:
    """Sorted cut points in ``0..n`` (empty chunks allowed)."""
    return st.lists(st.integers(0, n), max_size=5).map(sorted)


def _chunks(seq: Sequence[Any], cuts: list[int]) -> list[Sequence[Any]]:
    bounds = [0, *cuts, len(seq)]
    return [seq[a:b] for a, b in zip(bounds, bounds[1:])]


@PROFILE
@given(cases(), st.data())
def test_chunked_feed_equals_run(case: Case, data: st.DataObject) -> None:
    q, events, time, text = _show(case)
    compiled = ceql.compile(text)
    whole = keys(compiled.run(events, time=time))
    cuts = data.draw(_splits(len(events)), label="cuts")
    ev = compiled.evaluator(time=time)
    fed: list[Key] = []
    for chunk in _chunks(events, cuts):
        fed.extend(keys(ev.feed(list(chunk))))
    assert fed == whole


def _arrow_table(events: list[dict[str, Any]]) -> pa.Table:
    """Every attribute as a column (missing → null); schema over all rows, not the first."""
    names: list[str] = []
    for e in events:
        for k in e:
            if k not in names:
                names.append(k)
    if not names:
        names = ["type"]
    return pa.table({k: pa.array([e.get(k) for e in events]) for k in names})


@PROFILE
@given(cases(mixed=False), st.data())
def test_arrow_feed_equals_reference(case: Case, data: st.DataObject) -> None:
    q, events, time, text = _show(case)
    table = _arrow_table(events)
    note(f"schema: {table.schema}")
    ref = reference_matches(q, events, time=time)
    compiled = ceql.compile(text)

    got = keys(compiled.evaluator(time=time).feed(table))
    check_against_reference(got, ref, q.limit)
    assert got == keys(compiled.run(events, time=time))

    cuts = data.draw(_splits(len(events)), label="cuts")
    ev = compiled.evaluator(time=time)
    fed: list[Key] = []
    for a, b in zip([0, *cuts], [*cuts, len(events)]):
        batch = pa.RecordBatch.from_arrays(
            [col.combine_chunks() for col in table.slice(a, b - a).columns],
            names=table.column_names)
        fed.extend(keys(ev.feed(batch)))
    assert fed == got


# ---------------------------------------------------------------- the formatter


@PROFILE
@given(queries())
def test_format_roundtrip(q: A.Query) -> None:
    from ceql._parser import parse

    text = format_query(q)
    note(text)
    assert parse(text) == q
    assert format_query(parse(text)) == text
