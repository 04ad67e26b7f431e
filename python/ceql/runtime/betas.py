"""A leading or trailing NOT's β events and its conditions on them: the events of one partition
in key order (:class:`Betas`), and the check that one of them satisfies every condition the NOT
puts on the complex event (:func:`blocked`; :func:`led` for a leading NOT) — by its attached
events in general, or, for one order comparison with a variable of the match
(:class:`Fast`), by one extreme value per side.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable
from itertools import product
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from ..ir import nodes as N
from ..ir import output_variables, variable_leaves
from ..predicates.between import (
    Condition,
    Listener,
    agg_start,
    agg_step,
    aggregate,
    compile_condition,
)
from ..predicates.values import PY_CMP, TRUE, cmp3, is_num, norm
from .match import Match

__all__ = ["Betas", "Conds", "Fast", "batch_kept", "blocked", "compile_conds", "kept", "led",
           "shown_as"]


class Betas:
    """β events of one partition: positions and window keys (both ascending), those older
    than the window pruned from the front."""

    __slots__ = ("events", "keys", "lo", "pos", "raws", "vals")

    def __init__(self) -> None:
        self.pos: list[int] = []
        self.keys: list[Any] = []
        #: the events themselves, when conditions read them (else None each)
        self.events: list[Any] = []
        #: the attribute a one-comparison condition reads (see :class:`Fast`)
        self.vals: list[Any] = []
        self.raws: list[Any] = []  # ... as it is (normalized), for comparisons with non-numbers
        self.lo = 0

    def add(self, p: int, k: Any, e: Any = None, v: Any = None, r: Any = None) -> None:
        self.pos.append(p)
        self.keys.append(k)
        self.events.append(e)
        self.vals.append(v)
        self.raws.append(r)

    def before(self, p: int, floor: Any) -> range:
        """Indices of the β events before position ``p`` with a key of at least ``floor``."""
        hi = bisect_left(self.pos, p, self.lo)
        return range(bisect_left(self.keys, floor, self.lo, hi), hi)

    def after(self, p: int, ceiling: Any) -> range:
        """Indices of the β events after position ``p`` with a key of at most ``ceiling``."""
        lo = bisect_right(self.pos, p, self.lo)
        return range(lo, max(lo, bisect_right(self.keys, ceiling, lo)))

    def last_before(self, p: int) -> Any:
        """The key of the last β before position ``p`` (None: none kept)."""
        i = bisect_left(self.pos, p, self.lo) - 1
        return self.keys[i] if i >= self.lo else None

    def first_after(self, p: int) -> Any:
        """The key of the first β after position ``p`` (None: none yet)."""
        i = bisect_right(self.pos, p, self.lo)
        return self.keys[i] if i < len(self.pos) else None

    def prune(self, floor: Any) -> None:
        """Forget β events with a key below ``floor`` (no check can reach them any more)."""
        lo = bisect_left(self.keys, floor, self.lo)
        if lo > 32 and 2 * lo > len(self.pos):
            del self.pos[:lo]
            del self.keys[:lo]
            del self.events[:lo]
            del self.vals[:lo]
            del self.raws[:lo]
            lo = 0
        self.lo = lo

    def __len__(self) -> int:
        return len(self.pos) - self.lo

    def state(self) -> tuple[list[Any], ...]:
        lo = self.lo
        return (self.pos[lo:], self.keys[lo:], self.events[lo:], self.vals[lo:],
                self.raws[lo:])

    @classmethod
    def restored(cls, data: tuple[list[Any], ...]) -> Betas:
        b = cls()
        b.pos, b.keys, b.events, b.vals, b.raws = (list(x) for x in data)
        return b


class Fast(NamedTuple):
    """A NOT's one condition when it is ``n[attr op Y.yattr]`` with ``op`` an order: β
    events are compared by one value each (``vals``: the attribute, or a bound that never
    holds for a non-number), so a range of them is decided by its maximum (``>``, ``>=``)
    or minimum (``<``, ``<=``) against ``Y``'s extreme value in the match."""

    attr: str
    op: str
    var: str
    yattr: str


# (the negated name, the conditions, the one-comparison form, each read variable → the
# label its events carry in a match)
Conds = tuple[str, tuple[Condition, ...], Fast | None, dict[str, str]]


def shown_as(query: N.Query) -> dict[str, str]:
    """Each variable → the variable whose label its events carry in a match: itself, or for
    a type name a match does not report (it only repeats an alias) that alias."""
    shown = set(output_variables(query))
    leaves = variable_leaves(query.where)
    out = {}
    for v, ids in leaves.items():
        if v in shown:
            out[v] = v
        else:
            out[v] = next((a for a in shown if leaves.get(a) == ids), v)
    return out


def compile_conds(atoms: tuple[N.FilterAtom, ...], shown: dict[str, str]) -> Conds | None:
    """A NOT's conditions that read the match, compiled (None: it has none)."""
    if not atoms:
        return None
    name = atoms[0].var
    fast = _fast(atoms)
    if fast is not None:
        fast = fast._replace(var=shown.get(fast.var, fast.var))
    return name, tuple(compile_condition(a) for a in atoms), fast, shown


def _fast(atoms: tuple[N.FilterAtom, ...]) -> Fast | None:
    if len(atoms) != 1:
        return None
    leaf = atoms[0]
    p = leaf.pred
    if not isinstance(p, N.Compare) or p.op not in _FLIP:
        return None
    left, right, op = p.left, p.right, p.op
    if isinstance(right, N.Attr) and right.var in (None, leaf.var):
        left, right, op = right, left, _FLIP[op]
    if (isinstance(left, N.Attr) and left.var in (None, leaf.var) and isinstance(right, N.Attr)
            and right.var is not None and right.var != leaf.var):
        return Fast(left.name, op, right.var, right.name)
    return None


_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_INF = float("inf")


def _fast_value(fast: Fast, v: Any) -> tuple[Any, Any]:
    """What the fast check keeps of a β event's value: the number, or for anything else a
    bound its comparison never passes (an infinite one of the unfavourable sign); and the
    value itself, normalized."""
    r = norm(v)
    if not is_num(r):
        return (-_INF if fast.op in (">", ">=") else _INF), r
    return r, r


def kept(conds: Conds | None, event: Any) -> tuple[Any, Any, Any]:
    """What a β list keeps of an event for ``conds``: the event (the general check reads
    it), or the one value the fast check compares."""
    if conds is None:
        return None, None, None
    fast = conds[2]
    if fast is None:
        return event, None, None
    return (None, *_fast_value(fast, event.get(fast.attr)))


def batch_kept(conds: Conds | None, rb: pa.RecordBatch,
                rows: np.ndarray) -> tuple[list[Any], list[Any], list[Any]]:
    """:func:`kept` for the rows ``rows`` of an Arrow batch."""
    n = rows.size
    none = [None] * n
    if conds is None:
        return none, none, none
    fast = conds[2]
    if fast is None:
        return rb.take(pa.array(rows)).to_pylist(), none, none
    i = rb.schema.get_field_index(fast.attr)
    if i < 0:
        return none, [_fast_value(fast, None)[0]] * n, none
    pairs = [_fast_value(fast, v) for v in rb.column(i).take(pa.array(rows)).to_pylist()]
    return none, [v for v, _ in pairs], [r for _, r in pairs]


def led(lead: Betas, floor: Any, conds: Conds | None, m: Match,
        value: Callable[[int, str], Any] | None, hear: Listener | None) -> bool:
    """Whether a leading NOT's β event (of key ``floor`` or later) precedes the start of
    ``m``: without conditions on the match, the last one before the start decides
    (``hear``: the evaluation's listener, given to the conditions checked)."""
    start = m._start[2]
    if conds is not None:
        return blocked(lead, lead.before(start, floor), conds, m, value, hear)
    b = lead.last_before(start)
    return b is not None and b >= floor


def blocked(betas: Betas, indices: range, conds: Conds, m: Match,
            value: Callable[[int, str], Any] | None, hear: Listener | None) -> bool:
    """Whether one of the β events at ``indices`` satisfies every condition with the
    complex event ``m`` (the general check reads its attached events; the fast one reads
    ``value``)."""
    if not indices:
        return False
    name, compiled, fast, shown = conds
    labels = m._labels
    if fast is not None:
        assert value is not None
        ys = [norm(value(p, fast.yattr)) for p, lab in zip(m.positions, labels, strict=True)
              if lab is not None and fast.var in lab]
        if not ys:
            return True  # vacuous: every β event satisfies it
        op = fast.op
        up = op in (">", ">=")
        if all(is_num(y) for y in ys):
            y = max(ys) if up else min(ys)
            if abs(y) != _INF:  # (an infinite one could equal a non-number's bound)
                vs = betas.vals[indices.start:indices.stop]
                return bool(PY_CMP[op](max(vs) if up else min(vs), y))
        # strings, times, infinities: compared one by one
        return any(all(cmp3(op, r, y) == TRUE for y in ys)
                   for r in betas.raws[indices.start:indices.stop])
    events = m._events
    for i in indices:
        beta = betas.events[i]
        if all(_holds(c, name, beta, events, labels, shown, hear) for c in compiled):
            return True
    return False


def _holds(c: Condition, name: str, beta: Any, events: tuple[Any, ...],
           labels: tuple[Any, ...], shown: dict[str, str], hear: Listener | None) -> bool:
    """``c`` with the negated variable ``name`` bound to ``beta``, for every choice of the
    other variables' events in the complex event (vacuously when one has none)."""
    choices: list[list[tuple[Any, ...]]] = []
    for v, attrs in zip(c.quantified, c.attrs, strict=True):
        if v == name:
            recs = [tuple([norm(beta.get(a)) for a in attrs])]
        else:
            v = shown.get(v, v)
            recs = [tuple([norm(e.get(a)) for a in attrs])
                    for e, lab in zip(events, labels, strict=True)
                    if lab is not None and v in lab]
            if not recs:
                return True
        choices.append(recs)
    aggs: list[Any] = []
    for f, var, attr in c.aggs:
        acc = agg_start(f)
        var = shown.get(var, var)
        for e, lab in zip(events, labels, strict=True):
            if lab is not None and var in lab:
                acc = agg_step(f, acc, None if attr is None else norm(e.get(attr)))
        aggs.append(aggregate(f, acc))
    av = tuple(aggs)
    check = c.check
    return all(check(combo, av, hear) == TRUE for combo in product(*choices))
