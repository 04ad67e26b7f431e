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
* ``S>T`` as a variable (a FILTER head, ``Y.attr``, an aggregate, the SELECT list): where WHERE
  writes a leaf ``S>T`` (under NOT too), the events of those leaves; where it writes none, the
  events of ``V(T)`` that came from stream ``S`` (an event without a stream name belongs to every
  stream of FROM), whichever ``T`` leaf binds them.

Conjunction and negation (same section):

* ``φ AND ψ``: a valuation of each with disjoint position sets, in any order; the interval spans
  both, ``μ`` is the pointwise union.
* ``NOT β`` (only as an element of a ``;`` sequence) adds nothing to the valuation; it leaves a
  *pending negation* on it (``_Pending``): the gap (between the neighbours' end and start; a
  leading or trailing one is open on one side), and, at each FILTER enclosing it, the atoms that
  mention β's variable together with the valuation's ``μ`` at that FILTER. Pending negations are
  decided once the whole WHERE is evaluated: a position ``k`` of the gap (of the substream; for a
  leading or trailing NOT, those within the window of the valuation's end or start) blocks the
  valuation when β matches the event at ``k`` and every collected atom holds with β's variable
  bound to ``{k}`` (universally over the other variables, vacuously when one is empty). "Mentions"
  is SEMANTICS.md's word: ``n[…]``, and also another variable's atom naming ``n.attr``. β's
  event types bind nothing: ``B[…]`` is about the positive B events only.
  A complex event is kept when some valuation giving it has no blocked negation; the strategy
  then chooses among the kept ones. The window of a leading or trailing NOT is measured as WITHIN
  measures it (substream positions for EVENTS, the attribute, the time — or the original position
  without a time option).
* A query that breaks SEMANTICS.md's rules for AND and NOT (NOT outside a ``;`` sequence, two in a
  row, leading or trailing NOT below the top level or without WITHIN, trailing NOT with CONSUME BY
  ANY/PARTITION, an atom about a negated variable under OR or in a FILTER that does not enclose
  its NOT, a negated variable SELECTed, aggregated, in a match condition or also bound positively)
  raises ``ValueError``; so does an atom mentioning two negated variables (our decision:
  SEMANTICS.md evaluates an atom with one negated variable bound).

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


# A valuation over one (sub)stream: (start, end, mu, owed) with substream positions; mu is the
# set of (variable, position) pairs, so that pointwise union of mappings is set union; owed holds
# the negations the valuation still has to pass (empty without NOT).
Mu = frozenset[tuple[str, int]]


class _Pending(NamedTuple):
    """A negation ``NOT β`` that a valuation owes: no event of its gap may match β together with
    every collected condition.

    The gap is the positions strictly between ``lo`` and ``hi``; ``lo`` None: a leading NOT,
    ``hi`` None: a trailing one (bounded by the window at the query level). ``conds``: each FILTER
    atom mentioning a variable of β, with the valuation's ``μ`` at that FILTER."""

    neg: A.Not
    lo: int | None
    hi: int | None
    conds: tuple[tuple[A.FilterAtom, Mu], ...]


Owed = frozenset[_Pending]
Val = tuple[int, int, Mu, Owed]
_NOTHING_OWED: Owed = frozenset()


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


_NAN_KEY = ("NaN",)  # one key part for every NaN (None and NaN objects never equal it)


def _is_nan(v: object) -> bool:
    try:
        return bool(v != v)
    except (TypeError, ValueError):
        return False


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
        if e.distinct:
            assert e.attr is not None
            return distinct_value(e.func, [ctx.events[p].get(e.attr) for p in ps])
        if e.func == "COUNT":
            return aggregate_value("COUNT", [None] * len(ps))
        assert e.attr is not None
        return aggregate_value(e.func, [ctx.events[p].get(e.attr) for p in ps])
    if isinstance(e, A.Literal):
        return _clean(e.value)
    if isinstance(e, A.Neg):
        v = pred_value(e.operand, event, ctx)
        if isinstance(v, dt.timedelta):
            return -v
        return -v if _is_number(v) else UNKNOWN  # type: ignore[operator]
    if isinstance(e, A.Arith):
        left = pred_value(e.left, event, ctx)
        right = pred_value(e.right, event, ctx)
        if left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        if not (_is_number(left) and _is_number(right)):
            return _moment_arith(e.op, left, right)
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


def distinct_value(func: str, values: Sequence[object]) -> object:
    """``COUNT|SUM|AVG(DISTINCT y.attr)`` over the attribute values of a variable's events: over
    the distinct non-NULL values, as SQL (a boolean and a number are never the same value;
    ``1`` and ``1.0`` are). COUNT of none is 0; SUM and AVG of none, or of values that are not
    all numbers, are NULL. The sum is exact, rounded once."""
    present: dict[tuple[str, object], object] = {}
    for v in values:
        c = _clean(v)
        if c is not UNKNOWN:
            present.setdefault((_kind(c), c), c)
    distinct = list(present.values())
    if func == "COUNT":
        return len(distinct)
    if func not in ("SUM", "AVG"):
        raise ValueError(f"{func}(DISTINCT …) is not an aggregate")
    if not distinct or not all(_is_number(v) for v in distinct):
        return UNKNOWN
    exact = sum(Fraction(v) for v in distinct)  # type: ignore[arg-type]
    total: Any = (int(exact) if all(isinstance(v, int) for v in distinct)
                  else float(exact))
    return total if func == "SUM" else _clean(total / len(distinct))


def _kind(v: object) -> str:
    if isinstance(v, bool):
        return "bool"
    if _is_number(v):
        return "number"
    if isinstance(v, str):
        return "string"
    return type(v).__name__


def _moment(v: object) -> object:
    """A time as a datetime (a date is its midnight), else UNKNOWN."""
    if isinstance(v, dt.datetime):
        return v
    if isinstance(v, dt.date):
        return dt.datetime(v.year, v.month, v.day)
    return UNKNOWN


def _span(v: object) -> object:
    """A duration, or a number of seconds as one (to the microsecond), else UNKNOWN."""
    if isinstance(v, dt.timedelta):
        return v
    if _is_number(v):
        try:
            return dt.timedelta(seconds=v)  # type: ignore[arg-type]
        except (OverflowError, ValueError):
            return UNKNOWN
    return UNKNOWN


def _moment_arith(op: str, left: object, right: object) -> object:
    """SEMANTICS.md's arithmetic on times: time - time is a duration; time ± duration or
    seconds a time; duration ± duration or seconds a duration; duration * or / a number a
    duration; duration / duration a number. Anything else is NULL."""
    try:
        lt, rt = _moment(left), _moment(right)
        if lt is not UNKNOWN:
            if op == "-" and rt is not UNKNOWN:
                return lt - rt  # type: ignore[operator]
            d = _span(right)
            if op in "+-" and d is not UNKNOWN:
                return lt + d if op == "+" else lt - d  # type: ignore[operator]
            return UNKNOWN
        if op == "+" and rt is not UNKNOWN:
            d = _span(left)
            return UNKNOWN if d is UNKNOWN else rt + d  # type: ignore[operator]
        if isinstance(left, dt.timedelta) or isinstance(right, dt.timedelta):
            if op in "+-":
                a, b = _span(left), _span(right)
                if a is UNKNOWN or b is UNKNOWN:
                    return UNKNOWN
                return a + b if op == "+" else a - b  # type: ignore[operator]
            if op == "*":
                d, k = (left, right) if isinstance(left, dt.timedelta) else (right, left)
                return d * k if _is_number(k) else UNKNOWN  # type: ignore[operator]
            if op == "/" and isinstance(left, dt.timedelta) and (
                    _is_number(right) or isinstance(right, dt.timedelta)):
                return _clean(left / right)  # type: ignore[operator]
    except (OverflowError, ValueError, TypeError, ZeroDivisionError):
        return UNKNOWN
    return UNKNOWN


def _text_time(text: str, like: object) -> object:
    """The time ``text`` writes in ISO 8601, of ``like``'s kind, else UNKNOWN."""
    try:
        if not isinstance(like, dt.datetime):
            return dt.date.fromisoformat(text)
        t = dt.datetime.fromisoformat(text)
    except ValueError:
        return UNKNOWN
    if (t.tzinfo is None) == (like.tzinfo is None):
        return t
    return t.replace(tzinfo=dt.UTC) if t.tzinfo is None else UNKNOWN


def _compare(op: str, left: object, right: object) -> bool | None:
    """A comparison in 3-valued logic: None is unknown."""
    if left is UNKNOWN or right is UNKNOWN:
        return None
    if _kind(left) != _kind(right):
        # across kinds: a duration with seconds, a time with ISO 8601 text
        if isinstance(left, dt.timedelta) and _is_number(right):
            left = _seconds(left)
        elif isinstance(right, dt.timedelta) and _is_number(left):
            right = _seconds(right)
        elif isinstance(left, dt.date) and isinstance(right, str):
            right = _text_time(right, left)
        elif isinstance(right, dt.date) and isinstance(left, str):
            left = _text_time(left, right)
        else:
            return None
        if left is UNKNOWN or right is UNKNOWN:
            return None
        try:
            return _compare(op, left, right) if _kind(left) == _kind(right) or (
                _is_number(left) and _is_number(right)) else None
        except TypeError:
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
                 type_key: str, stream_key: str,
                 written: frozenset[str] = frozenset()) -> None:
        self.orig = [i for i, _ in items]
        self.events = [e for _, e in items]
        self.streams = streams
        self.type_key = type_key
        self.stream_key = stream_key
        #: the ``S>T`` leaves WHERE writes (under NOT too): ``S>T`` names their events only
        self.written = written

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


    def qualified(self, pos: int, et: A.EventType) -> list[str]:
        """The ``S>T`` variables the leaf ``et`` (of type ``T``) binds the event at ``pos`` to:
        its own ``S>T`` when written so, and ``S>T`` for each stream ``S`` of FROM the event
        came from where WHERE writes no leaf ``S>T``."""
        own = self.events[pos].get(self.stream_key)
        names = [f"{s}>{et.name}" for s in self.streams if own is None or own == s]
        mine = [] if et.stream is None else [f"{et.stream}>{et.name}"]
        return mine + [n for n in names if n not in self.written and n not in mine]


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


def _close(left: Owed, right: Owed, end: int, start: int) -> Owed:
    """The pending negations of ``φ1 ; φ2`` from those of ``V1`` and ``V2``: a trailing one of
    ``V1`` now ends before ``V2``'s start, a leading one of ``V2`` starts after ``V1``'s end."""
    if not left and not right:
        return _NOTHING_OWED
    return frozenset({o._replace(hi=start) if o.hi is None else o for o in left}
                     | {o._replace(lo=end) if o.lo is None else o for o in right})


def _join(left: Iterable[Val], right: Iterable[Val], contiguous: bool) -> set[Val]:
    right = list(right)
    out: set[Val] = set()
    for s1, e1, mu1, owed1 in left:
        for s2, e2, mu2, owed2 in right:
            if (s2 == e1 + 1) if contiguous else (e1 < s2):
                out.add((s1, e2, mu1 | mu2, _close(owed1, owed2, e1, s2)))
    return out


def _conjuncts(cond: A.FilterExpr) -> list[A.FilterExpr]:
    """The plain conjuncts of a FILTER condition (the leaves of its top AND tree)."""
    if isinstance(cond, A.FilterAnd):
        return _conjuncts(cond.left) + _conjuncts(cond.right)
    return [cond]


def _mentioned(leaf: A.FilterAtom | A.FilterMatch) -> set[str]:
    """The variables a FILTER leaf mentions: its head, qualified attributes, aggregates."""
    names = {leaf.var} if isinstance(leaf, A.FilterAtom) else set()
    for e in _expr_nodes(leaf.pred):
        if isinstance(e, A.Attr) and e.var is not None:
            names.add(e.var)
        elif isinstance(e, A.Agg):
            names.add(e.var)
    return names


def _as_names(f: A.Formula) -> frozenset[str]:
    """The AS names of a formula (for β of ``NOT β``: its negated variables)."""
    if isinstance(f, A.As):
        return _as_names(f.formula) | {f.var}
    if isinstance(f, (A.Filter, A.Plus, A.Not)):
        return _as_names(f.formula)
    if isinstance(f, (A.Seq, A.Or, A.And)):
        return _as_names(f.left) | _as_names(f.right)
    return frozenset()


def _collect(owed: Owed, cond: A.FilterExpr, mu: Mu) -> Owed:
    """At a FILTER: each pending negation takes the atoms (plain conjuncts) that mention its
    variable, with the valuation's ``μ`` here."""
    if not owed:
        return owed
    atoms = [c for c in _conjuncts(cond) if isinstance(c, A.FilterAtom)]
    out = set()
    for o in owed:
        names = _as_names(o.neg.formula)
        about = tuple((a, mu) for a in atoms if _mentioned(a) & names)
        out.add(o._replace(conds=o.conds + about) if about else o)
    return frozenset(out)


def _written_qualified(f: A.Formula) -> frozenset[str]:
    """``S>T`` for each leaf of ``f`` written ``S>T`` (under NOT too)."""
    if isinstance(f, A.EventType):
        return frozenset() if f.stream is None else frozenset([f"{f.stream}>{f.name}"])
    if isinstance(f, A.Seq | A.Or | A.And):
        return _written_qualified(f.left) | _written_qualified(f.right)
    if isinstance(f, A.As | A.Filter | A.Plus | A.Not):
        return _written_qualified(f.formula)
    raise TypeError(f"not a formula: {f!r}")


def eval_formula(f: A.Formula, sub: _Substream) -> set[Val]:
    """``⟦f⟧(sub)`` as an explicit set of valuations."""
    if isinstance(f, A.EventType):
        # a leaf of type T binds T; a leaf written S>T binds S>T; and for each stream S of
        # FROM its event came from (an event without a stream is of every one) where WHERE
        # writes no leaf S>T, the variable S>T (the T events of stream S)
        return {(i, i, frozenset((n, i) for n in [f.name, *sub.qualified(i, f)]),
                 _NOTHING_OWED)
                for i in range(len(sub)) if sub.matches_type(i, f)}
    if isinstance(f, A.As):
        out: set[Val] = set()
        for s, e, mu, owed in eval_formula(f.formula, sub):
            out.add((s, e, mu | frozenset((f.var, p) for p in _positions(mu)), owed))
        return out
    if isinstance(f, A.Filter):
        # A negated variable is never in μ: atoms about it hold vacuously here, and are kept
        # with the pending negation instead.
        return {(s, e, mu, _collect(owed, f.cond, mu))
                for s, e, mu, owed in eval_formula(f.formula, sub)
                if _cond_holds(f.cond, mu, sub)}
    if isinstance(f, A.Or):
        return eval_formula(f.left, sub) | eval_formula(f.right, sub)
    if isinstance(f, A.And):
        right = [(v, _positions(v[2])) for v in eval_formula(f.right, sub)]
        out = set()
        for s1, e1, mu1, owed1 in eval_formula(f.left, sub):
            d1 = _positions(mu1)
            for (s2, e2, mu2, owed2), d2 in right:
                if d1.isdisjoint(d2):
                    out.add((min(s1, s2), max(e1, e2), mu1 | mu2, owed1 | owed2))
        return out
    if isinstance(f, A.Seq) and isinstance(f.right, A.Not):
        # φ ; NOT β: nothing is added; the gap opens after φ's end (closed by a later ``;``)
        return {(s, e, mu, owed | {_Pending(f.right, e, None, ())})
                for s, e, mu, owed in eval_formula(f.left, sub)}
    if isinstance(f, A.Seq) and isinstance(f.left, A.Not):
        # NOT β ; ψ: the gap closes before ψ's start (opened by an earlier ``;``)
        return {(s, e, mu, owed | {_Pending(f.left, None, s, ())})
                for s, e, mu, owed in eval_formula(f.right, sub)}
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
    if isinstance(f, A.Not):
        raise ValueError("NOT stands only as an element of a ; sequence")
    raise TypeError(f"not a formula: {f!r}")


# ================================================================ negation


def _seq_elements(f: A.Formula, contiguous: bool = False) -> list[tuple[A.Formula, bool]]:
    """The elements of the ``;``/``:`` chain ``f`` heads (through ``Seq`` children on either
    side: sequencing is associative), each with whether the separator before it is ``:``."""
    if not isinstance(f, A.Seq):
        return [(f, contiguous)]
    return _seq_elements(f.left, contiguous) + _seq_elements(f.right, f.contiguous)


def _shape(f: A.Formula, top: bool) -> tuple[bool, bool]:
    """Whether ``f`` (the top-level WHERE below its FILTERs when ``top``) starts with a leading
    NOT and ends with a trailing one; raises ``ValueError`` where SEMANTICS.md makes a NOT
    invalid."""
    if isinstance(f, A.Not):
        raise ValueError("NOT stands only as an element of a ; sequence")
    if isinstance(f, A.Filter) and top:
        return _shape(f.formula, top)
    if isinstance(f, A.Seq):
        elements = _seq_elements(f)
        for k, (node, contiguous) in enumerate(elements):
            after = elements[k + 1] if k + 1 < len(elements) else None
            if not isinstance(node, A.Not):
                _shape(node, False)
                continue
            _check_beta(node.formula)
            if contiguous or (after is not None and after[1]):
                raise ValueError("NOT in a : sequence")
            if after is not None and isinstance(after[0], A.Not):
                raise ValueError("two NOTs in a row")
        leading = isinstance(elements[0][0], A.Not)
        trailing = isinstance(elements[-1][0], A.Not)
        if (leading or trailing) and not top:
            raise ValueError("a leading or trailing NOT stands only in the top-level sequence")
        return leading, trailing
    if isinstance(f, (A.As, A.Filter, A.Plus)):
        _shape(f.formula, False)
    elif isinstance(f, (A.Or, A.And)):
        _shape(f.left, False)
        _shape(f.right, False)
    return False, False


def _check_beta(f: A.Formula) -> None:
    """β of ``NOT β``: an event type, ``S>T``, an OR of those, maybe named."""
    if isinstance(f, A.EventType):
        return
    if isinstance(f, A.As):
        _check_beta(f.formula)
    elif isinstance(f, A.Or):
        _check_beta(f.left)
        _check_beta(f.right)
    else:
        raise ValueError(f"NOT of a formula that is not a single event: {f!r}")


def _negated_names(f: A.Formula) -> frozenset[str]:
    """The variables named inside the NOTs of ``f``."""
    if isinstance(f, A.Not):
        return _as_names(f.formula)
    if isinstance(f, (A.As, A.Filter, A.Plus)):
        return _negated_names(f.formula)
    if isinstance(f, (A.Seq, A.Or, A.And)):
        return _negated_names(f.left) | _negated_names(f.right)
    return frozenset()


def _positive_names(f: A.Formula) -> frozenset[str]:
    """The variables ``f`` binds outside its NOTs (event types, ``S>T``, AS names)."""
    if isinstance(f, A.EventType):
        return frozenset([f.name] if f.stream is None else [f.name, f"{f.stream}>{f.name}"])
    if isinstance(f, A.As):
        return _positive_names(f.formula) | {f.var}
    if isinstance(f, (A.Filter, A.Plus)):
        return _positive_names(f.formula)
    if isinstance(f, (A.Seq, A.Or, A.And)):
        return _positive_names(f.left) | _positive_names(f.right)
    return frozenset()


def _filter_leaves(cond: A.FilterExpr) -> list[A.FilterAtom | A.FilterMatch]:
    if isinstance(cond, (A.FilterAnd, A.FilterOr)):
        return _filter_leaves(cond.left) + _filter_leaves(cond.right)
    return [cond]


def _check_negated_atoms(f: A.Formula, negated: frozenset[str]) -> None:
    """Atoms about a negated variable: plain conjuncts of a FILTER enclosing its NOT, one
    negated variable each, never aggregated nor in a match condition."""
    if isinstance(f, A.Filter):
        enclosed = _negated_names(f.formula)
        conjuncts = _conjuncts(f.cond)
        for leaf in _filter_leaves(f.cond):
            about = _mentioned(leaf) & negated
            if not about:
                continue
            if isinstance(leaf, A.FilterMatch):
                raise ValueError(f"negated variable {sorted(about)} in a match condition")
            if any(isinstance(e, A.Agg) and e.var in negated for e in _expr_nodes(leaf.pred)):
                raise ValueError(f"negated variable {sorted(about)} aggregated")
            if not any(leaf is c for c in conjuncts):
                raise ValueError(f"an atom about negated {sorted(about)} under OR")
            if len(about) > 1:
                raise ValueError(f"an atom about two negated variables {sorted(about)}")
            if not about <= enclosed:
                raise ValueError(f"an atom about negated {sorted(about)} in a FILTER that does "
                                 "not enclose its NOT")
    if isinstance(f, (A.As, A.Filter, A.Plus)):
        _check_negated_atoms(f.formula, negated)
    elif isinstance(f, (A.Seq, A.Or, A.And)):
        _check_negated_atoms(f.left, negated)
        _check_negated_atoms(f.right, negated)


def _check_negations(query: A.Query) -> None:
    """Refuse the queries SEMANTICS.md makes invalid for AND and NOT."""
    leading, trailing = _shape(query.where, True)
    if (leading or trailing) and query.within is None:
        raise ValueError("a leading or trailing NOT needs WITHIN")
    if trailing and query.consume != "NONE":
        raise ValueError(f"a trailing NOT with CONSUME BY {query.consume}")
    negated = _negated_names(query.where)
    if not negated:
        return
    if negated & _positive_names(query.where):
        raise ValueError(f"{sorted(negated & _positive_names(query.where))} both negated and "
                         "bound")
    if query.select and negated & set(query.select):
        raise ValueError(f"negated variable {sorted(negated & set(query.select))} SELECTed")
    _check_negated_atoms(query.where, negated)


Betas = dict[A.Not, dict[int, list[frozenset[str]]]]


def _beta_at(neg: A.Not, k: int, sub: _Substream, betas: Betas) -> list[frozenset[str]]:
    """How β matches the event at ``k``: for each valuation of β there, the negated variables
    it binds (none: β does not match)."""
    if neg not in betas:
        names = _as_names(neg.formula)
        found: dict[int, list[frozenset[str]]] = defaultdict(list)
        for s, e, mu, _ in eval_formula(neg.formula, sub):
            assert s == e
            found[s].append(frozenset(x for x, _ in mu) & names)
        betas[neg] = found
    return betas[neg].get(k, [])


def _blocks(o: _Pending, k: int, sub: _Substream, betas: Betas) -> bool:
    """The event at ``k`` matches β and every condition collected about β's variable (bound to
    ``{k}``; the other variables as in the valuation at each FILTER)."""
    for bound in _beta_at(o.neg, k, sub, betas):
        mark = frozenset((x, k) for x in bound)
        if all(_atom_holds(atom, mu | mark, sub) for atom, mu in o.conds):
            return True
    return False


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
    """``time(e) − time(s) ≤ ε`` as the window measures time (substream positions for EVENTS,
    the attribute for ``[attr]``, event time — the original position without one — else)."""
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


def _negation_holds(o: _Pending, i: int, j: int, query: A.Query, sub: _Substream,
                    events: Sequence[Mapping[str, Any]], time: str | None,
                    betas: Betas) -> bool:
    """No event of the gap of ``o`` blocks the valuation ``[i, j]`` (of the whole WHERE)."""
    if o.lo is not None and o.hi is not None:  # between: V1.end < k < V2.start
        gap: Iterable[int] = range(o.lo + 1, o.hi)
    elif o.hi is None:  # trailing: k > j with time(k) − time(i) ≤ ε
        assert o.lo == j
        gap = [k for k in range(j + 1, len(sub))
               if _within_ok(query.within, i, k, sub, events, time)]
    else:  # leading: k < i with time(j) − time(k) ≤ ε
        assert o.hi == i
        gap = [k for k in range(i) if _within_ok(query.within, k, j, sub, events, time)]
    return not any(_blocks(o, k, sub, betas) for k in gap)


def _evaluate_substream(query: A.Query, sub: _Substream, events: Sequence[Mapping[str, Any]],
                        time: str | None) -> set[tuple[int, int, tuple[int, ...]]]:
    """Steps 2–5 (WHERE, strategy, SELECT, WITHIN) on one substream; original positions."""
    betas: Betas = {}
    # the valuations that pass their negations (a complex event is kept when one giving it does)
    valuations = {(s, e, mu) for s, e, mu, owed in eval_formula(query.where, sub)
                  if all(_negation_holds(o, s, e, query, sub, events, time, betas)
                         for o in owed)}
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

    Positions are original 0-based indices into ``events``. Sorted by (end, start, positions); a
    complex event with a trailing NOT is listed at its end like any other (the engine outputs it
    later, once the window has passed). Raises ``ValueError`` when a (sub)stream holds more than
    ``MAX_EVENTS`` events, when times are missing or out of order, when a ``WITHIN n [attr]``
    attribute is not a number, or when AND/NOT are used where SEMANTICS.md forbids them.
    """
    _check_negations(query)
    members = _stream_members(events, query.streams, stream_key)
    written = _written_qualified(query.where)

    # 1. PARTITION BY: composite key of non-NULL values; events lacking one are dropped; NaN
    # groups with NaN (SQL's GROUP BY), though it compares as NULL in conditions.
    groups: dict[tuple[Any, ...], list[int]] = {}
    keys: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # equal keys: the first one seen
    for i in members:
        key = tuple(_NAN_KEY if _is_nan(v) else v
                    for v in (events[i].get(a) for a in query.partition_by))
        if any(v is None for v in key):
            continue
        groups.setdefault(key, []).append(i)
        keys.setdefault(key, tuple(events[i].get(a) for a in query.partition_by))

    _check_times(events, sorted(i for g in groups.values() for i in g), query, time)

    outputs: list[RefMatch] = []
    for key, indices in groups.items():
        if len(indices) > MAX_EVENTS:
            raise ValueError(f"the reference is a brute force: {len(indices)} events in one "
                             f"substream (at most {MAX_EVENTS})")
        sub = _Substream([(i, events[i]) for i in indices], streams=query.streams,
                         type_key=type_key, stream_key=stream_key, written=written)
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
