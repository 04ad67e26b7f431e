"""A brute-force evaluator of CEQL, written straight from ``/work/shared/SEMANTICS.md``.

It is deliberately naive — valuations are explicit Python sets, Kleene closures are computed as
fixpoints, conditions between events try every choice of events — and shares no code with the
engine (nor with ``ceql.predicates`` or ``ceql.ir.walks``): it only reads the AST. It is the
oracle the test suites hold the engine to.

Conditions between events (SEMANTICS.md, "Correlation, conjunction and negation"):

* ``X[P]`` keeps a valuation iff ``P`` is true for every choice of one event from ``V(X)`` and
  one from ``V(Y)`` for each ``Y.attr`` in ``P`` (``X.attr`` is plain ``attr``); vacuously true
  when one of those sets is empty. With ``PREV(attr)`` anywhere in ``P``, only the events of
  ``V(X)`` that have a previous one in ``V(X)`` are tested (the first is exempt from all of ``P``).
* ``[P]`` (a match condition): the same over the qualified variables alone, once per valuation.
* Aggregates are values of the valuation (see ``aggregate_value`` for NULLs and kinds).
* A stream-qualified leaf ``S>T`` binds the variable ``T`` and the variable ``S>T``.

``reference_matches`` returns every output of a query as ``RefMatch(end, start, positions,
partition)`` with ORIGINAL 0-based indices into ``events``, after CONSUME BY but without LIMIT
(the LIMIT check — a subset of the reference's outputs at each (partition, end) of size
``min(n, available)`` — is done by the tests, since *which* ``n`` is enumeration order).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from fractions import Fraction
from itertools import product
from typing import Any, NamedTuple

from ceql.ir import nodes as A

__all__ = ["MAX_EVENTS", "UNKNOWN", "Context", "RefMatch", "aggregate_value", "pred_holds",
           "pred_value", "reference_matches"]

MAX_EVENTS = 12


class RefMatch(NamedTuple):
    end: int
    start: int
    positions: tuple[int, ...]
    partition: tuple[Any, ...]


# A valuation over one (sub)stream: (start, end, mu) with substream positions; mu is the set of
# (variable, position) pairs, so that pointwise union of mappings is set union.
Mu = frozenset[tuple[str, int]]
Val = tuple[int, int, Mu]


# ================================================================ predicates (3-valued)

class _Unknown:
    """SQL's unknown / NULL: the value of an expression that has no value."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float, Fraction)) and not isinstance(v, bool)


def _clean(v: object) -> object:
    """Missing, None and NaN are all NULL."""
    if v is None:
        return UNKNOWN
    if isinstance(v, float) and math.isnan(v):
        return UNKNOWN
    return v


class Context(NamedTuple):
    """What an expression of a FILTER reads besides the tested event.

    ``var``: the filtered variable ``X`` of ``X[P]`` (None in a match condition ``[P]``, which
    tests no event); ``prev``: the previous event of ``X`` in the valuation (None: there is none);
    ``chosen``: the event chosen for each qualified variable ``Y`` of ``Y.attr``; ``mu`` and
    ``events``: the valuation and its (sub)stream's events, for aggregates.
    """

    var: str | None
    prev: Mapping[str, Any] | None
    chosen: Mapping[str, Mapping[str, Any]]
    mu: Mu
    events: Sequence[Mapping[str, Any]]


def pred_value(e: A.Expr, event: Mapping[str, Any], ctx: Context | None = None) -> object:
    """The value of an arithmetic expression on one event, or ``UNKNOWN``. ``ctx`` is needed
    for qualified attributes, ``PREV`` and aggregates."""
    if isinstance(e, A.Attr):
        if e.var is None or (ctx is not None and e.var == ctx.var):
            if ctx is not None and ctx.var is None:
                raise ValueError(f"plain attribute {e.name!r} in a match condition")
            return _clean(event.get(e.name))
        if ctx is None:
            raise ValueError(f"{e.var}.{e.name} needs a valuation")
        return _clean(ctx.chosen[e.var].get(e.name))
    if isinstance(e, A.Prev):
        if ctx is None or ctx.var is None or ctx.prev is None:
            raise ValueError(f"PREV({e.name}) needs a previous event of the filtered variable")
        return _clean(ctx.prev.get(e.name))
    if isinstance(e, A.Agg):
        if ctx is None:
            raise ValueError(f"{e.func}({e.var}) needs a valuation")
        ps = sorted(_var(ctx.mu, e.var))
        if e.func == "COUNT":
            return aggregate_value("COUNT", [None] * len(ps))
        assert e.attr is not None
        return aggregate_value(e.func, [ctx.events[p].get(e.attr) for p in ps])
    if isinstance(e, A.Literal):
        return _clean(e.value)
    if isinstance(e, A.Neg):
        v = pred_value(e.operand, event, ctx)
        return -v if _is_number(v) else UNKNOWN  # type: ignore[operator]
    if isinstance(e, A.Arith):
        left = pred_value(e.left, event, ctx)
        right = pred_value(e.right, event, ctx)
        if not (_is_number(left) and _is_number(right)):
            return UNKNOWN
        lv: Any = left
        rv: Any = right
        if e.op == "+":
            out = lv + rv
        elif e.op == "-":
            out = lv - rv
        elif e.op == "*":
            out = lv * rv
        elif e.op == "/":
            if rv == 0:
                return UNKNOWN
            out = lv / rv
        elif e.op == "%":
            if rv == 0:
                return UNKNOWN
            out = lv % rv
        else:
            raise ValueError(f"unknown arithmetic operator {e.op!r}")
        return _clean(out)
    raise TypeError(f"not an expression: {e!r}")


def aggregate_value(func: str, values: Sequence[object]) -> object:
    """An aggregate over the attribute values of a variable's events, in position order
    (missing attributes given as None); ``COUNT`` counts them all.

    Empty: COUNT 0, the others NULL. FIRST/LAST take the first/last value, NULL included.
    SUM/AVG/MIN/MAX skip NULLs (all NULL: NULL, as in SQL). Where SEMANTICS.md is silent (our
    decisions): SUM and AVG are NULL unless every non-NULL value is a number (bools are not);
    AVG is SUM / (number of non-NULL values); MIN and MAX are NULL unless the non-NULL values
    are all of one kind (the kinds comparisons use: number, string, bool, ...).
    """
    if func == "COUNT":
        return len(values)
    if not values:
        return UNKNOWN
    cleaned = [_clean(v) for v in values]
    if func == "FIRST":
        return cleaned[0]
    if func == "LAST":
        return cleaned[-1]
    present: list[Any] = [v for v in cleaned if v is not UNKNOWN]
    if not present:
        return UNKNOWN
    if func in ("SUM", "AVG"):
        if not all(_is_number(v) for v in present):
            return UNKNOWN
        total = sum(present)
        return _clean(total if func == "SUM" else total / len(present))
    if func in ("MIN", "MAX"):
        if len({_kind(v) for v in present}) != 1:
            return UNKNOWN
        return min(present) if func == "MIN" else max(present)
    raise ValueError(f"unknown aggregate {func!r}")


def _kind(v: object) -> str:
    if isinstance(v, bool):
        return "bool"
    if _is_number(v):
        return "number"
    if isinstance(v, str):
        return "string"
    return type(v).__name__


def _compare(op: str, left: object, right: object) -> bool | None:
    """A comparison in 3-valued logic: None is unknown."""
    if left is UNKNOWN or right is UNKNOWN:
        return None
    if _kind(left) != _kind(right):
        return None
    lv: Any = left
    rv: Any = right
    if op in ("=", "=="):
        return bool(lv == rv)
    if op in ("!=", "<>"):
        return bool(lv != rv)
    if op == "<":
        return bool(lv < rv)
    if op == "<=":
        return bool(lv <= rv)
    if op == ">":
        return bool(lv > rv)
    if op == ">=":
        return bool(lv >= rv)
    raise ValueError(f"unknown comparison {op!r}")


def _and3(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


def _or3(a: bool | None, b: bool | None) -> bool | None:
    if a is True or b is True:
        return True
    if a is None or b is None:
        return None
    return False


def _not3(a: bool | None) -> bool | None:
    return None if a is None else not a


def _pred3(p: A.Pred, event: Mapping[str, Any], ctx: Context | None) -> bool | None:
    if isinstance(p, A.Compare):
        return _compare(p.op, pred_value(p.left, event, ctx), pred_value(p.right, event, ctx))
    if isinstance(p, A.Like):
        v = pred_value(p.expr, event, ctx)
        if not isinstance(v, str):
            return None
        return re.search(p.pattern, v) is not None
    if isinstance(p, A.InSet):
        v = pred_value(p.expr, event, ctx)
        result: bool | None = False
        for lit in p.values:
            result = _or3(result, _compare("=", v, _clean(lit.value)))
        return _not3(result) if p.negated else result
    if isinstance(p, A.InRange):
        v = pred_value(p.expr, event, ctx)
        lo = pred_value(p.lo, event, ctx)
        hi = pred_value(p.hi, event, ctx)
        return _and3(_compare("<=", lo, v), _compare("<=", v, hi))
    if isinstance(p, A.PAnd):
        return _and3(_pred3(p.left, event, ctx), _pred3(p.right, event, ctx))
    if isinstance(p, A.POr):
        return _or3(_pred3(p.left, event, ctx), _pred3(p.right, event, ctx))
    if isinstance(p, A.PNot):
        return _not3(_pred3(p.operand, event, ctx))
    raise TypeError(f"not a predicate: {p!r}")


def pred_holds(p: A.Pred, event: Mapping[str, Any], ctx: Context | None = None) -> bool:
    """Only TRUE satisfies a predicate; unknown (NULL) does not."""
    return _pred3(p, event, ctx) is True


# ================================================================ formulas


class _Substream:
    """One (sub)stream: its events and their original indices, position by position."""

    def __init__(self, items: list[tuple[int, Mapping[str, Any]]], *, streams: tuple[str, ...],
                 type_key: str, stream_key: str) -> None:
        self.orig = [i for i, _ in items]
        self.events = [e for _, e in items]
        self.streams = streams
        self.type_key = type_key
        self.stream_key = stream_key

    def __len__(self) -> int:
        return len(self.events)

    def matches_type(self, pos: int, et: A.EventType) -> bool:
        event = self.events[pos]
        if event.get(self.type_key) != et.name:
            return False
        if et.stream is None:
            return True
        own = event.get(self.stream_key)
        # An event without a stream name belongs to every stream of the query.
        return own is None or own == et.stream


def _positions(mu: Mu) -> frozenset[int]:
    return frozenset(p for _, p in mu)


def _var(mu: Mu, var: str) -> frozenset[int]:
    return frozenset(p for x, p in mu if x == var)


def _expr_nodes(p: A.Pred) -> Iterator[A.Expr]:
    """Every expression node of a predicate, sub-expressions included."""
    if isinstance(p, (A.PAnd, A.POr)):
        yield from _expr_nodes(p.left)
        yield from _expr_nodes(p.right)
        return
    if isinstance(p, A.PNot):
        yield from _expr_nodes(p.operand)
        return
    if isinstance(p, A.Compare):
        roots: list[A.Expr] = [p.left, p.right]
    elif isinstance(p, A.Like):
        roots = [p.expr]
    elif isinstance(p, A.InSet):
        roots = [p.expr, *p.values]
    elif isinstance(p, A.InRange):
        roots = [p.expr, p.lo, p.hi]
    else:
        raise TypeError(f"not a predicate: {p!r}")
    todo = roots
    while todo:
        e = todo.pop()
        yield e
        if isinstance(e, A.Neg):
            todo.append(e.operand)
        elif isinstance(e, A.Arith):
            todo += [e.left, e.right]


def _qualified(p: A.Pred, own: str | None) -> list[str]:
    """The variables of ``Y.attr`` in ``p`` other than ``own`` (each chosen independently)."""
    return sorted({e.var for e in _expr_nodes(p)
                   if isinstance(e, A.Attr) and e.var is not None and e.var != own})


def _choices(names: list[str], mu: Mu, sub: _Substream) -> list[dict[str, Mapping[str, Any]]]:
    """Every choice of one event from each variable of ``names`` (none when one is empty)."""
    sets = [sorted(_var(mu, y)) for y in names]
    return [{y: sub.events[p] for y, p in zip(names, pick, strict=True)}
            for pick in product(*sets)]


def _atom_holds(atom: A.FilterAtom, mu: Mu, sub: _Substream) -> bool:
    """``X[P]``: P for every event of V(X) (with a previous one, if P uses PREV) and every
    choice of the qualified variables' events."""
    xs = sorted(_var(mu, atom.var))
    uses_prev = any(isinstance(e, A.Prev) for e in _expr_nodes(atom.pred))
    choices = _choices(_qualified(atom.pred, atom.var), mu, sub)
    for k, p in enumerate(xs):
        if uses_prev and k == 0:
            continue  # the first event of X has no previous one: exempt from all of P
        prev = sub.events[xs[k - 1]] if k > 0 else None
        for chosen in choices:
            ctx = Context(atom.var, prev, chosen, mu, sub.events)
            if not pred_holds(atom.pred, sub.events[p], ctx):
                return False
    return True


def _match_holds(match: A.FilterMatch, mu: Mu, sub: _Substream) -> bool:
    """``[P]``: P once per valuation, for every choice of the qualified variables' events."""
    for e in _expr_nodes(match.pred):
        if isinstance(e, A.Prev) or (isinstance(e, A.Attr) and e.var is None):
            raise ValueError(f"{e!r} in a match condition: only aggregates, qualified "
                             "attributes and literals")
    for chosen in _choices(_qualified(match.pred, None), mu, sub):
        if not pred_holds(match.pred, {}, Context(None, None, chosen, mu, sub.events)):
            return False
    return True


def _cond_holds(cond: A.FilterExpr, mu: Mu, sub: _Substream) -> bool:
    if isinstance(cond, A.FilterAtom):
        return _atom_holds(cond, mu, sub)
    if isinstance(cond, A.FilterMatch):
        return _match_holds(cond, mu, sub)
    if isinstance(cond, A.FilterAnd):
        return _cond_holds(cond.left, mu, sub) and _cond_holds(cond.right, mu, sub)
    if isinstance(cond, A.FilterOr):
        return _cond_holds(cond.left, mu, sub) or _cond_holds(cond.right, mu, sub)
    raise TypeError(f"not a FILTER condition: {cond!r}")


def _join(left: Iterable[Val], right: Iterable[Val], contiguous: bool) -> set[Val]:
    right = list(right)
    out: set[Val] = set()
    for s1, e1, mu1 in left:
        for s2, e2, mu2 in right:
            if (s2 == e1 + 1) if contiguous else (e1 < s2):
                out.add((s1, e2, mu1 | mu2))
    return out


def eval_formula(f: A.Formula, sub: _Substream) -> set[Val]:
    """``⟦f⟧(sub)`` as an explicit set of valuations."""
    if isinstance(f, A.EventType):
        # a stream-qualified leaf S>T binds T and the variable S>T (the events of such leaves)
        names = [f.name] if f.stream is None else [f.name, f"{f.stream}>{f.name}"]
        return {(i, i, frozenset((n, i) for n in names))
                for i in range(len(sub)) if sub.matches_type(i, f)}
    if isinstance(f, A.As):
        out: set[Val] = set()
        for s, e, mu in eval_formula(f.formula, sub):
            out.add((s, e, mu | frozenset((f.var, p) for p in _positions(mu))))
        return out
    if isinstance(f, A.Filter):
        return {v for v in eval_formula(f.formula, sub) if _cond_holds(f.cond, v[2], sub)}
    if isinstance(f, A.Or):
        return eval_formula(f.left, sub) | eval_formula(f.right, sub)
    if isinstance(f, A.Seq):
        return _join(eval_formula(f.left, sub), eval_formula(f.right, sub), f.contiguous)
    if isinstance(f, A.Plus):
        # ⟦φ+⟧ = ⟦φ⟧ ∪ ⟦φ ; φ+⟧, the least fixpoint (every step adds a later position, so it
        # ends after at most len(sub) rounds).
        base = eval_formula(f.formula, sub)
        result = set(base)
        frontier = set(base)
        while frontier:
            new = _join(base, frontier, f.contiguous) - result
            result |= new
            frontier = new
        return result
    raise TypeError(f"not a formula: {f!r}")


# ================================================================ selection strategies


CE = tuple[int, frozenset[int]]  # (start, D) of a complex event; its end is given


def _strategy_keep(strategy: str, ces: set[CE]) -> set[CE]:
    """The complex events ``(start, D)`` with one common end that the strategy keeps."""
    if strategy in ("ALL", "ANY"):
        return set(ces)
    if strategy == "STRICT":
        return {(s, d) for s, d in ces if d == frozenset(range(s, max(d) + 1))}
    if strategy == "MAX":
        return {(s, d) for s, d in ces if not any(d2 > d for _, d2 in ces)}
    if strategy in ("NEXT", "LAST"):
        pick = min if strategy == "NEXT" else max
        best: CE | None = None
        for ce in ces:
            if best is None:
                best = ce
                continue
            diff = best[1] ^ ce[1]
            if diff and pick(diff) in ce[1]:  # best ≤ ce
                best = ce
        # sanity: it is the maximum of a total order
        assert best is None or all(
            not (best[1] ^ d) or pick(best[1] ^ d) in best[1] for _, d in ces)
        return set() if best is None else {best}
    raise ValueError(f"unknown selection strategy {strategy!r}")


# ================================================================ windows


def _time_value(v: object) -> Fraction | dt.datetime | None:
    v = _clean(v)
    if v is UNKNOWN:
        return None
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return Fraction(v)
    if isinstance(v, Fraction):
        return v
    if isinstance(v, dt.datetime):
        return v
    if isinstance(v, dt.date):
        return dt.datetime(v.year, v.month, v.day)
    return None


def _seconds(delta: dt.timedelta) -> Fraction:
    return Fraction(delta.days * 86400 + delta.seconds) + Fraction(delta.microseconds, 10**6)


def _time_diff(late: object, early: object) -> Fraction | None:
    a = _time_value(late)
    b = _time_value(early)
    if a is None or b is None:
        return None
    if isinstance(a, Fraction) and isinstance(b, Fraction):
        return a - b
    if isinstance(a, dt.datetime) and isinstance(b, dt.datetime):
        return _seconds(a - b)
    return None


# ================================================================ the whole query


def _stream_members(events: Sequence[Mapping[str, Any]], streams: tuple[str, ...],
                    stream_key: str) -> list[int]:
    """Original indices of the events of the query's (merged) stream, in input order."""
    out = []
    for i, event in enumerate(events):
        own = event.get(stream_key)
        if own is None or own in streams:
            out.append(i)
    return out


def _check_times(events: Sequence[Mapping[str, Any]], kept: list[int], query: A.Query,
                 time: str | None) -> None:
    """Bad input is an error, not a silent drop: the events the query reads (in FROM and with a
    partition key) need a time (when ``time`` names one) in non-decreasing order, and a number
    in the attribute of a ``WITHIN n [attr]`` window."""
    previous: object = None
    for i in kept:
        event = events[i]
        if time is not None:
            if _time_value(event.get(time)) is None:
                raise ValueError(f"event {i} has no usable time in {time!r}")
            if previous is not None:
                d = _time_diff(event.get(time), previous)
                if d is None or d < 0:
                    raise ValueError(f"event {i}: time goes backwards")
            previous = event.get(time)
        w = query.within
        if w is not None and w.kind == "attr":
            assert w.attr is not None
            v = _clean(event.get(w.attr))
            if not _is_number(v):
                raise ValueError(f"event {i} has no number in {w.attr!r} for WITHIN")


def _within_ok(w: A.Within | None, s: int, e: int, sub: _Substream,
               events: Sequence[Mapping[str, Any]], time: str | None) -> bool:
    if w is None:
        return True
    if w.kind == "events":
        return Fraction(e - s) <= w.amount
    first, last = sub.orig[s], sub.orig[e]
    if w.kind == "time":
        if time is None:
            diff: Fraction | None = Fraction(last - first)
        else:
            diff = _time_diff(events[last].get(time), events[first].get(time))
    elif w.kind == "attr":
        assert w.attr is not None
        diff = Fraction(events[last][w.attr]) - Fraction(events[first][w.attr])
    else:
        raise ValueError(f"unknown WITHIN kind {w.kind!r}")
    return diff is not None and diff <= w.amount


def _evaluate_substream(query: A.Query, sub: _Substream, events: Sequence[Mapping[str, Any]],
                        time: str | None) -> set[tuple[int, int, tuple[int, ...]]]:
    """Steps 2–5 (WHERE, strategy, SELECT, WITHIN) on one substream; original positions."""
    valuations = eval_formula(query.where, sub)
    by_end: dict[int, set[CE]] = defaultdict(set)
    for s, e, mu in valuations:
        by_end[e].add((s, _positions(mu)))
    kept = {e: _strategy_keep(query.strategy, ces) for e, ces in by_end.items()}
    out: set[tuple[int, int, tuple[int, ...]]] = set()
    for s, e, mu in valuations:
        if (s, _positions(mu)) not in kept[e]:
            continue
        if query.select is None:
            data = _positions(mu)
        else:
            data = frozenset().union(*(_var(mu, x) for x in query.select)) if query.select \
                else frozenset()
        if not _within_ok(query.within, s, e, sub, events, time):
            continue
        out.add((sub.orig[e], sub.orig[s], tuple(sorted(sub.orig[p] for p in data))))
    return out


def reference_matches(query: A.Query, events: Sequence[Mapping[str, Any]], *,
                      time: str | None = None, type_key: str = "type",
                      stream_key: str = "stream") -> list[RefMatch]:
    """Every output of ``query`` on ``events`` (LIMIT not applied), grouped by end position.

    Positions are original 0-based indices into ``events``. Sorted by (end, start, positions).
    Raises ``ValueError`` when a (sub)stream holds more than ``MAX_EVENTS`` events, when times
    are missing or out of order, or when a ``WITHIN n [attr]`` attribute is not a number.
    """
    members = _stream_members(events, query.streams, stream_key)

    # 1. PARTITION BY: composite key of non-NULL values; events lacking one are dropped.
    groups: dict[tuple[Any, ...], list[int]] = {}
    keys: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # equal keys: the first one seen
    for i in members:
        key = tuple(events[i].get(a) for a in query.partition_by)
        if any(_clean(v) is UNKNOWN for v in key):
            continue
        groups.setdefault(key, []).append(i)
        keys.setdefault(key, key)

    _check_times(events, sorted(i for g in groups.values() for i in g), query, time)

    outputs: list[RefMatch] = []
    for key, indices in groups.items():
        if len(indices) > MAX_EVENTS:
            raise ValueError(f"the reference is a brute force: {len(indices)} events in one "
                             f"substream (at most {MAX_EVENTS})")
        sub = _Substream([(i, events[i]) for i in indices], streams=query.streams,
                         type_key=type_key, stream_key=stream_key)
        for end, start, positions in _evaluate_substream(query, sub, events, time):
            outputs.append(RefMatch(end, start, positions, keys[key]))

    # 6. CONSUME BY, in stream order of the triggering (end) position.
    outputs.sort(key=lambda m: (m.end, m.start, m.positions))
    if query.consume == "NONE":
        return outputs
    if query.consume not in ("ANY", "PARTITION"):
        raise ValueError(f"unknown CONSUME BY policy {query.consume!r}")
    barrier: dict[tuple[Any, ...], int] = {}
    kept: list[RefMatch] = []
    ends = sorted({m.end for m in outputs})
    for end in ends:
        here = [m for m in outputs if m.end == end]
        scope = () if query.consume == "ANY" else here[0].partition
        limit = barrier.get(scope, -1)
        alive = [m for m in here if m.start > limit]
        if alive:
            kept.extend(alive)
            barrier[scope] = end
    return kept
