"""What the pure engine finds, and what MATCH_CEQL returned, in one comparable shape."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import ceql
from ceql.spark import match_ids

#: (match_id, partition key, ((variable, event ids), ...)) for each match
Found = list[tuple[int, tuple[Any, ...], tuple[tuple[str, tuple[Any, ...]], ...]]]


def engine(query: str, rows: Sequence[dict[str, Any]], *, partition: Sequence[str] = (),
           time: str = "ts", id_col: str = "seq", columns: Sequence[str] | None = None,
           hashed: Sequence[dict[str, Any]] | None = None, **kw: Any) -> Found:
    """Run the engine per partition (NULL keys dropped), rows in (time, id) order; the
    variables MATCH_CEQL reports (``Query.variables``); ``match_id``s over the rows' values,
    or only their ``columns`` (those of the table MATCH_CEQL reads), or over ``hashed``: the
    same rows (by ``id_col``) as the table holds them (times as text, say)."""
    table = {r[id_col]: r for r in hashed} if hashed is not None else None
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        key = tuple(r.get(c) for c in partition)
        if any(v is None for v in key):
            continue
        groups.setdefault(key, []).append(r)
    q = ceql.compile(query)
    out: Found = []
    for key, group in groups.items():
        group.sort(key=lambda r: (r[time], r[id_col]))
        ms = list(q.run(group, time=time, **kw))
        read = group if table is None else [table[r[id_col]] for r in group]
        if columns is not None:
            read = [{c: r.get(c) for c in columns} for r in read]
        for m, mid in zip(ms, match_ids(key, ms, read), strict=True):
            bound = tuple(sorted((v, tuple(group[p][id_col] for p in ps))
                                 for v, ps in m.variables.items() if v in q.variables))
            out.append((mid, key, bound))
    return sorted(out, key=repr)


def spark_rows(rows: Iterable[Any], variables: Sequence[str], *,
               partition: Sequence[str] = (), id_col: str = "seq") -> Found:
    """MATCH_CEQL's rows (one per match) in the shape of :func:`engine`."""
    out: Found = []
    for r in rows:
        key = tuple(r[c] for c in partition)
        bound = tuple(sorted((v, tuple(e[id_col] for e in r[v])) for v in variables if r[v]))
        out.append((r["match_id"], key, bound))
    return sorted(out, key=repr)


def sql_string(text: str) -> str:
    """A Spark SQL string literal for ``text``."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
