"""Hypothesis generators: random CEQL queries (as ASTs) and small random streams.

Queries use every operator of SEMANTICS.md: event types (stream-qualified too), AS on any
sub-formula, FILTER with AND/OR over several variables and every predicate form (including the
ones that give NULL at run time: missing or None attributes, strings compared with numbers,
division by an attribute that is 0), OR, ``;``, ``:``, ``+``, ``:+`` nested freely (Kleene inside
Kleene, OR inside Kleene), every selection strategy, ``SELECT *``/``NONE``/variable lists, every
WITHIN form, PARTITION BY (one or two attributes), CONSUME BY and LIMIT.

Every generated AST is in the image of the parser (``parse(format_query(q)) == q``) and passes
the engine's validation: FILTER names only variables bound inside the formula it filters, SELECT
only bound variables, ``S>T`` only streams of FROM, literals never clash in type, no literal 0
divisor, no empty literal RANGE.

``correlated_queries()`` (``cases(correlated=True)``, ``multi_cases(correlated=True)``) adds
conditions between events to all of that: qualified attributes ``Y.attr`` over variables bound
in the filtered formula (universal over every choice of events), ``PREV(attr)`` inside ``X[...]``
(where X can bind two events, and where it binds at most one: vacuous), aggregates
(``COUNT|SUM|AVG(DISTINCT Y.attr)`` among them) in ``X[...]`` and in match conditions ``[P]``
(aggregates, qualified attributes and literals only), ``S>T`` as a variable (FILTER heads,
SELECT lists, qualified attributes, aggregates: the events of the leaves ``S>T`` where WHERE
writes some, else the ``T`` events of stream ``S`` of any ``T`` leaf; both drawn), FILTERs
inside iterations (checked per block).
Without ``correlated`` every generator draws exactly what it drew before conditions between
events existed.

``conj_neg_queries()`` (``queries``/``cases``/``multi_cases`` with ``conj_neg=True``, combinable
with ``correlated``) adds conjunction and negation to all of that: ``φ AND ψ`` anywhere (under
``+`` too), ``φ ; NOT β ; ψ`` between elements of ``;`` sequences (β an event type, ``S>T`` or an
OR of them, named ``n``, ``n1``, ... or not; never in a ``:`` chain, never directly under ``+``,
never two in a row), leading and trailing NOTs at the top level (with a WITHIN; a trailing one
with CONSUME BY NONE), and atoms about a negated variable as plain conjuncts of FILTERs enclosing
its NOT (several FILTERs sometimes; correlated: comparing with positive variables bound
before or after the NOT, ``n[a = x.a]``, also written in the other variable's brackets,
``x[a > n.a]``). Negated variables are never SELECTed, aggregated or in a match condition;
every such query has an AND or a NOT. Without ``conj_neg`` every
generator draws exactly what it drew before.

Streams: at most 8 events, mostly of the types the query names, with small non-negative integer
attributes ``a``/``b`` (sometimes NULL or missing), a mixed attribute ``c`` (integer or string),
a string attribute ``s``, partition attributes ``g``/``h`` (0 or 1), an optional stream name
(S, T or U, where U is never in FROM) and a non-decreasing integer time ``ts``.

Arithmetic stays where engines agree: ``%`` only on non-negative operands; ``/`` is true
division.

Weighted choices go through ``sampled_from`` (``one_of`` with repeated branches is not weighted
the way it looks).
"""

from __future__ import annotations

import functools
import os
from fractions import Fraction
from typing import Any, NamedTuple, TypeVar

from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from ceql.ir import condition_refs, expr_nodes, filter_leaves, is_correlated, is_correlated_query
from ceql.ir import nodes as A
from ceql.ir.walks import formula_nodes

__all__ = [
    "PROFILE",
    "Case",
    "Scope",
    "aggregates",
    "atom_preds",
    "cases",
    "conj_neg_queries",
    "correlated_atoms",
    "correlated_exprs",
    "correlated_filter_conds",
    "correlated_preds",
    "correlated_queries",
    "events_lists",
    "exprs",
    "filter_conds",
    "formulas",
    "match_conds",
    "negated_atoms",
    "negated_conds",
    "negated_variables",
    "positive_variables",
    "preds",
    "queries",
    "statically_valid",
    "weighted",
    "withins",
]

# ---------------------------------------------------------------- hypothesis profiles

_COMMON: dict[str, Any] = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large,
                              HealthCheck.filter_too_much],
    "print_blob": True,
}
# ci (`make test`): the same examples on every run, and nothing read from or written to the
# example database, so a failure is reproducible from the commit alone; 150 a test keeps
# `make test` within CI's time (the long hunts are `make explore`'s).
settings.register_profile("ci", max_examples=150, derandomize=True, database=None, **_COMMON)
# dev (default): random, with the local example database (failures are replayed first).
settings.register_profile("dev", max_examples=100, **_COMMON)
# explore (`make explore`): long random runs looking for new failures; they go to the database.
settings.register_profile("explore", max_examples=5000, **_COMMON)


def _profile() -> tuple[str, settings]:
    name = os.environ.get("HYPOTHESIS_PROFILE", "dev")
    try:
        return name, settings.get_profile(name)
    except InvalidArgument:  # an unknown name must not silently run another profile
        raise LookupError(f"HYPOTHESIS_PROFILE={name!r}: use ci, dev or explore") from None


PROFILE_NAME, PROFILE = _profile()
# The default of every @given test, those with their own @settings too (they inherit what they
# do not set); conftest.py imports this module before any test module is collected.
settings.load_profile(PROFILE_NAME)

T = TypeVar("T")


def weighted(*options: tuple[int, st.SearchStrategy[T]]) -> st.SearchStrategy[T]:
    """Draw from one of ``options`` with probability proportional to its weight."""
    index = [i for i, (w, _) in enumerate(options) for _ in range(w)]
    return st.sampled_from(index).flatmap(lambda i: options[i][1])


# ---------------------------------------------------------------- vocabulary

TYPES = ("A", "B", "C")
VARS = ("x", "y", "z")
INT_ATTRS = ("a", "b")
NUM_ATTRS = ("a", "b", "c")  # c is sometimes a string
STRINGS = ("x", "y", "xy", "", "o'k")
PATTERNS = ("x", "^x", "y$", "x|y", "^$", "xy", "'")
# comparisons that hold for most non-NULL values in 0..3
SIMPLE = ((">=", 0), (">=", 1), (">", 0), ("<=", 2), ("<=", 3), ("<", 3), ("!=", 0),
          ("!=", 1), ("!=", 3), ("=", 1), ("=", 2), ("<", 1))
TIME_WINDOWS = (Fraction(0), Fraction(1), Fraction(2), Fraction(3, 2), Fraction(5, 2),
                Fraction(4), Fraction(60))

# ---------------------------------------------------------------- expressions

_int_lit = st.integers(-1, 4).map(A.Literal)
_num_lit = weighted((3, _int_lit), (1, st.sampled_from([0.5, 1.5, -0.5, 2.0]).map(A.Literal)))
_str_lit = st.sampled_from(STRINGS).map(A.Literal)
_any_lit = weighted((2, _num_lit), (1, _str_lit))
_num_attr = st.sampled_from(NUM_ATTRS).map(A.Attr)
_int_attr = st.sampled_from(INT_ATTRS).map(A.Attr)


@st.composite
def exprs(draw: st.DrawFn, depth: int = 2) -> A.Expr:
    """Arithmetic over attributes and number literals."""
    if depth <= 0 or draw(st.integers(0, 2)) == 0:
        return draw(weighted((2, _num_attr), (1, _num_lit)))
    kind = draw(st.sampled_from(["neg", "add", "mul", "div", "mod"]))
    if kind == "neg":
        # -<number literal> is a literal (the parser folds it): negate something else
        inner = draw(exprs(depth - 1))
        return A.Neg(A.Attr("a") if isinstance(inner, A.Literal) else inner)
    if kind in ("add", "mul"):
        op = draw(st.sampled_from(["+", "-"] if kind == "add" else ["*"]))
        return A.Arith(op, draw(exprs(depth - 1)), draw(exprs(depth - 1)))
    if kind == "div":
        # a literal 0 divisor is a compile-time error; an attribute that is 0 gives NULL
        right = draw(weighted((1, st.sampled_from([2, 4]).map(A.Literal)), (1, _int_attr)))
        return A.Arith("/", draw(exprs(depth - 1)), right)
    # % only on non-negative operands (Python and C disagree on signs)
    right = draw(weighted((1, st.sampled_from([2, 3]).map(A.Literal)), (1, _int_attr)))
    return A.Arith("%", draw(_num_attr), right)


# ---------------------------------------------------------------- static validity

_NUMERIC_AGGREGATES = ("COUNT", "SUM", "AVG")


class _Clash(Exception):
    pass


def _kind(e: A.Expr) -> str | None:
    """What the validator knows of an expression's type without a schema."""
    if isinstance(e, A.Attr | A.Prev):
        return None
    if isinstance(e, A.Agg):  # COUNT, SUM and AVG are numbers; the others are their attribute's
        return "number" if e.func in _NUMERIC_AGGREGATES else None
    if isinstance(e, A.Literal):
        v = e.value
        return "bool" if isinstance(v, bool) else "string" if isinstance(v, str) else "number"
    if isinstance(e, A.Neg):
        k = _kind(e.operand)
        if k not in (None, "number"):
            raise _Clash
        return k
    lk, rk = _kind(e.left), _kind(e.right)
    if lk not in (None, "number") or rk not in (None, "number"):
        raise _Clash
    if e.op in ("/", "%") and isinstance(e.right, A.Literal) and e.right.value == 0:
        raise _Clash
    return "number" if lk == rk == "number" else None


def _agree(a: str | None, b: str | None) -> None:
    if a is not None and b is not None and a != b:
        raise _Clash


def statically_valid(p: A.Pred) -> bool:
    """No type clash among literals, no literal 0 divisor, no empty literal RANGE."""
    try:
        if isinstance(p, A.Compare):
            _agree(_kind(p.left), _kind(p.right))
        elif isinstance(p, A.Like):
            _agree(_kind(p.expr), "string")
        elif isinstance(p, A.InSet):
            kinds = [_kind(v) for v in p.values]
            for k in kinds:
                _agree(kinds[0], k)
            _agree(_kind(p.expr), kinds[0])
        elif isinstance(p, A.InRange):
            k, lo, hi = _kind(p.expr), _kind(p.lo), _kind(p.hi)
            _agree(k, lo)
            _agree(k, hi)
            _agree(lo, hi)
            if isinstance(p.lo, A.Literal) and isinstance(p.hi, A.Literal) \
                    and p.lo.value > p.hi.value:  # type: ignore[operator]
                raise _Clash
        elif isinstance(p, (A.PAnd, A.POr)):
            return statically_valid(p.left) and statically_valid(p.right)
        elif isinstance(p, A.PNot):
            return statically_valid(p.operand)
    except _Clash:
        return False
    return True


# ---------------------------------------------------------------- predicates


_null_preds = st.builds(  # unknown for every event (zz never exists), or for many
    A.Compare, st.sampled_from(["=", "!=", "<", ">="]),
    st.sampled_from([A.Attr("zz"), A.Attr("s"), A.Arith("/", A.Attr("a"), A.Attr("b"))]),
    st.sampled_from([A.Literal(0), A.Literal(1)]))


_false_preds = st.builds(  # false for every non-NULL value in 0..3
    lambda op_value, attr: A.Compare(op_value[0], attr, A.Literal(op_value[1])),
    st.sampled_from([(">", 3), ("<", 0), ("=", 4), (">=", 5)]), _num_attr)


@st.composite
def _atom_preds(draw: st.DrawFn) -> A.Pred:
    kind = draw(st.sampled_from(["simple"] * 4 + ["cmp"] * 2 + ["like", "in", "range", "null"]))
    if kind == "simple":  # mostly true; unknown when the attribute is NULL (or c a string)
        op, value = draw(st.sampled_from(SIMPLE))
        return A.Compare(op, draw(_num_attr), A.Literal(value))
    if kind == "null":
        return draw(_null_preds)
    if kind == "cmp":
        op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
        left = draw(exprs())
        right = draw(weighted((1, _any_lit), (1, exprs(1))))
        if draw(st.booleans()):
            left, right = right, left
        return A.Compare(op, left, right)
    if kind == "like":
        target = draw(st.sampled_from(["s", "s", "c"]))  # LIKE on a number is unknown
        return A.Like(A.Attr(target), draw(st.sampled_from(PATTERNS)))
    if kind == "in":
        negated = draw(st.booleans())
        if draw(st.booleans()):
            values = draw(st.lists(st.sampled_from(STRINGS), min_size=1, max_size=3, unique=True))
            return A.InSet(A.Attr(draw(st.sampled_from(["s", "c"]))),
                           tuple(A.Literal(v) for v in values), negated)
        ints = draw(st.lists(st.integers(-1, 4), min_size=1, max_size=3, unique=True))
        target = draw(weighted((3, _num_attr), (1, exprs(1))))
        return A.InSet(target, tuple(A.Literal(v) for v in ints), negated)
    lo = draw(weighted((1, st.sampled_from([-1, 0, 1]).map(A.Literal)), (1, _int_attr)))
    hi = draw(weighted((1, st.sampled_from([1, 2, 3]).map(A.Literal)), (1, _int_attr)))
    target = draw(weighted((3, _num_attr), (1, exprs(1))))
    return A.InRange(target, lo, hi)


def atom_preds() -> st.SearchStrategy[A.Pred]:
    return _atom_preds().filter(statically_valid)


@st.composite
def preds(draw: st.DrawFn, depth: int = 2) -> A.Pred:
    if depth <= 0 or draw(st.booleans()):
        return draw(atom_preds())
    kind = draw(st.sampled_from(["and", "or", "not", "not", "kleene"]))
    if kind == "kleene":  # NOT (p AND q) / NOT (p OR q) with q often unknown: 3-valued logic
        p = draw(weighted((1, atom_preds()), (2, _false_preds)))
        q = draw(weighted((1, atom_preds()), (2, _null_preds)))
        if draw(st.booleans()):
            p, q = q, p
        return A.PNot(A.PAnd(p, q) if draw(st.booleans()) else A.POr(p, q))
    if kind == "not":
        return A.PNot(draw(preds(depth - 1)))
    left, right = draw(preds(depth - 1)), draw(preds(depth - 1))
    return A.PAnd(left, right) if kind == "and" else A.POr(left, right)


@st.composite
def filter_conds(draw: st.DrawFn, bound: frozenset[str], depth: int = 2) -> A.FilterExpr:
    """A FILTER condition over variables of ``bound`` (AND tighter than OR, any nesting)."""
    if depth <= 0 or draw(st.booleans()):
        return A.FilterAtom(draw(st.sampled_from(sorted(bound))), draw(preds()))
    left = draw(filter_conds(bound, depth - 1))
    right = draw(filter_conds(bound, depth - 1))
    return A.FilterAnd(left, right) if draw(st.booleans()) else A.FilterOr(left, right)


# ---------------------------------------------------------------- conditions between events


class Scope(NamedTuple):
    """Where a correlated predicate stands: ``var`` is the X of ``X[...]`` (None in a match
    condition ``[P]``, which tests no event); ``names`` are the variables bound inside the
    filtered formula, which ``Y.attr`` and aggregates may name (``S>T`` ones too: the
    formatter writes them in backquotes);
    ``prev``: whether ``PREV`` may appear (X a positive variable: where it binds at most one
    event of a valuation the condition never rejects — valid, with a warning — and is drawn
    too)."""

    var: str | None
    names: tuple[str, ...]
    prev: bool = False


def _most_events(f: A.Formula) -> tuple[dict[str, int], int]:
    """How many events each variable binds at most in one valuation of ``f``, and how many
    the valuation has (both capped at 2: "two or more")."""
    if isinstance(f, A.EventType):  # S>T: T events of stream S, of any T leaf
        return dict.fromkeys([f.name, *(f"{s}>{f.name}" for s in _STREAMS)], 1), 1
    if isinstance(f, A.Not):  # a negated event is in no valuation
        return {}, 0
    if isinstance(f, A.Seq | A.Or | A.And):
        (lv, ln), (rv, rn) = _most_events(f.left), _most_events(f.right)
        join = (lambda a, b: min(2, a + b)) if isinstance(f, A.Seq | A.And) else max
        return {v: join(lv.get(v, 0), rv.get(v, 0)) for v in lv.keys() | rv.keys()}, join(ln, rn)
    counts, n = _most_events(f.formula)
    if isinstance(f, A.Plus):
        return dict.fromkeys(counts, 2), 2
    if isinstance(f, A.As):
        return {**counts, f.var: n}, n
    return counts, n


def prev_on_one_event(q: A.Query) -> bool:
    """True when some ``X[…PREV…]`` of ``q`` tests a variable that binds at most one event in
    the formula its FILTER applies to (a condition that never rejects: drawn on purpose)."""
    for f in formula_nodes(q.where):
        if isinstance(f, A.Filter):
            counts = _most_events(f.formula)[0]
            for c in filter_leaves(f.cond):
                if isinstance(c, A.FilterAtom) and counts.get(c.var, 0) <= 1 and any(
                        isinstance(e, A.Prev) for e in expr_nodes(c.pred)):
                    return True
    return False


_STREAMS = ("S", "T")  # the streams a FROM may list
_AGG_FUNCS = ("COUNT", "COUNT", "SUM", "SUM", "AVG", "AVG", "MIN", "MAX", "FIRST", "LAST")
_AGG_ATTRS = ("a", "a", "b", "c", "c", "s", "zz")  # c: numbers and strings; zz: never there
_STRING_AGGS = ("MIN", "MAX", "FIRST", "LAST")
# attributes that operands read: c (often a string or NULL) less often, universal conditions
# over several events would hardly ever hold
_OPERAND_ATTRS = ("a", "a", "b", "b", "c")
_REL_OPS = ("=", "!=", "<", "<=", "<=", ">", ">=", ">=")
# COUNT comparisons that hold for many valuations
_COUNT_SIMPLE = ((">=", 1), (">=", 2), ("<=", 2), ("<", 3), ("=", 1), ("=", 2), ("!=", 1))


@st.composite
def aggregates(draw: st.DrawFn, names: tuple[str, ...], string: bool = False) -> A.Agg:
    """``COUNT(Y)``, ``F(Y.attr)`` or ``F(DISTINCT Y.attr)`` (COUNT, SUM, AVG) over a variable of
    ``names``; ``string``: one whose value
    may be a string (MIN/MAX/FIRST/LAST of ``s``)."""
    var = draw(st.sampled_from(names))
    if string:
        return A.Agg(draw(st.sampled_from(_STRING_AGGS)), var, "s")
    func = draw(st.sampled_from(_AGG_FUNCS))
    distinct = func in ("COUNT", "SUM", "AVG") and draw(st.integers(0, 2)) == 0
    if func == "COUNT" and not distinct:
        return A.Agg("COUNT", var)
    return A.Agg(func, var, draw(st.sampled_from(_AGG_ATTRS)), distinct=distinct)


@functools.cache  # one strategy per scope: building strategies is what draws cost most
def _operands(scope: Scope, string: bool = False) -> st.SearchStrategy[A.Expr]:
    """An expression that reads an event or the valuation: an attribute of the tested event
    (plain or ``X.attr``), ``PREV(attr)``, ``Y.attr``, an aggregate. Never negative (``%`` takes
    them as its left operand); ``string``: of the string attribute ``s``."""
    attr = st.sampled_from(("s",) if string else _OPERAND_ATTRS)
    options: list[tuple[int, st.SearchStrategy[A.Expr]]] = []
    var = scope.var
    if var is not None:
        options += [(3, attr.map(A.Attr)), (1, attr.map(lambda n: A.Attr(n, var=var)))]
        if scope.prev:
            options.append((2, attr.map(A.Prev)))
    if scope.names:
        qualified = st.builds(lambda y, n: A.Attr(n, var=y), st.sampled_from(scope.names), attr)
        options += [(3, qualified), (2, aggregates(scope.names, string))]
    return weighted(*options)


@st.composite
def correlated_exprs(draw: st.DrawFn, scope: Scope, depth: int = 2) -> A.Expr:
    """Arithmetic over the operands of ``scope`` and number literals (as ``exprs``)."""
    if depth <= 0 or draw(st.integers(0, 2)) == 0:
        return draw(weighted((3, _operands(scope)), (1, _num_lit)))
    kind = draw(st.sampled_from(["neg", "add", "mul", "div", "mod"]))
    if kind == "neg":
        inner = draw(correlated_exprs(scope, depth - 1))
        return A.Neg(draw(_operands(scope)) if isinstance(inner, A.Literal) else inner)
    if kind in ("add", "mul"):
        op = draw(st.sampled_from(["+", "-"] if kind == "add" else ["*"]))
        return A.Arith(op, draw(correlated_exprs(scope, depth - 1)),
                       draw(correlated_exprs(scope, depth - 1)))
    if kind == "div":
        right = draw(weighted((1, st.sampled_from([2, 4]).map(A.Literal)), (1, _operands(scope))))
        return A.Arith("/", draw(correlated_exprs(scope, depth - 1)), right)
    right = draw(weighted((1, st.sampled_from([2, 3]).map(A.Literal)), (1, _operands(scope))))
    return A.Arith("%", draw(_operands(scope)), right)


@st.composite
def _correlated_atom_preds(draw: st.DrawFn, scope: Scope) -> A.Pred:
    kind = draw(st.sampled_from(["rel"] * 3 + ["agg"] * 3 + ["simple"] * 2 + [
        "cmp", "cmp", "in", "range", "like"]))
    if kind == "agg" and scope.names:  # COUNT(y) >= 2, SUM(y.a) > 0, AVG(y.b) <= 3, ...
        agg = draw(aggregates(scope.names))
        op, value = draw(st.sampled_from(_COUNT_SIMPLE if agg.func == "COUNT" else SIMPLE))
        if draw(st.integers(0, 3)) == 0:  # anything else
            op = draw(st.sampled_from(_REL_OPS))
            return A.Compare(op, agg, A.Literal(draw(st.sampled_from([0, 1, 2, 3, 4, 6, 1.5]))))
        return A.Compare(op, agg, A.Literal(value))
    if kind in ("rel", "agg"):  # a = y.a, a > PREV(a), y.a <= LAST(z.b), ...
        op = draw(st.sampled_from(_REL_OPS))
        left = draw(_operands(scope))
        right = draw(_operands(scope).filter(lambda e: e != left))  # not always true or false
        return A.Compare(op, left, right)
    if kind == "simple":
        op, value = draw(st.sampled_from(SIMPLE))
        return A.Compare(op, draw(_operands(scope)), A.Literal(value))
    if kind == "cmp":
        op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
        left = draw(correlated_exprs(scope))
        right = draw(weighted((1, _any_lit), (1, correlated_exprs(scope, 1))))
        if draw(st.booleans()):
            left, right = right, left
        return A.Compare(op, left, right)
    if kind == "like":
        return A.Like(draw(_operands(scope, string=True)), draw(st.sampled_from(PATTERNS)))
    if kind == "in":
        negated = draw(st.booleans())
        if draw(st.booleans()):
            values = draw(st.lists(st.sampled_from(STRINGS), min_size=1, max_size=3, unique=True))
            return A.InSet(draw(_operands(scope, string=True)),
                           tuple(A.Literal(v) for v in values), negated)
        ints = draw(st.lists(st.integers(-1, 4), min_size=1, max_size=3, unique=True))
        target = draw(weighted((3, _operands(scope)), (1, correlated_exprs(scope, 1))))
        return A.InSet(target, tuple(A.Literal(v) for v in ints), negated)
    lo = draw(weighted((1, st.sampled_from([-1, 0, 1]).map(A.Literal)), (1, _operands(scope))))
    hi = draw(weighted((1, st.sampled_from([1, 2, 3]).map(A.Literal)), (1, _operands(scope))))
    target = draw(weighted((3, _operands(scope)), (1, correlated_exprs(scope, 1))))
    return A.InRange(target, lo, hi)


def _reads_valuation(p: A.Pred) -> bool:
    """True when ``p`` mentions a qualified attribute or an aggregate."""
    return any(isinstance(e, A.Agg) or (isinstance(e, A.Attr) and e.var is not None)
               for e in expr_nodes(p))


@st.composite
def correlated_preds(draw: st.DrawFn, scope: Scope, depth: int = 2) -> A.Pred:
    """A predicate of ``X[...]`` (``scope.var`` X) or of a match condition (``scope.var``
    None: aggregates, qualified attributes and literals only) with conditions between events;
    in ``X[...]`` plain ones (``atom_preds``) are mixed in."""
    if depth <= 0 or draw(st.integers(0, 2)) > 0:
        if scope.var is not None and draw(st.integers(0, 3)) == 0:
            return draw(atom_preds())
        return draw(_correlated_atom_preds(scope).filter(statically_valid))
    kind = draw(st.sampled_from(["and", "and", "or", "not"]))
    if kind == "not":
        return A.PNot(draw(correlated_preds(scope, depth - 1)))
    left = draw(correlated_preds(scope, depth - 1))
    right = draw(correlated_preds(scope, depth - 1))
    return A.PAnd(left, right) if kind == "and" else A.POr(left, right)


def positive_variables(f: A.Formula) -> frozenset[str]:
    """The variables ``f`` binds outside its NOTs: event types (``S>T`` for a qualified leaf) and
    AS names — the ones a match holds events of, which SELECT lists, conditions of other
    variables, aggregates and match conditions may name. Without NOT: every bound variable."""
    if isinstance(f, A.EventType):
        return frozenset([f.name] if f.stream is None else [f.name, f"{f.stream}>{f.name}"])
    if isinstance(f, A.As):
        return positive_variables(f.formula) | {f.var}
    if isinstance(f, A.Filter | A.Plus):
        return positive_variables(f.formula)
    if isinstance(f, A.Seq | A.Or | A.And):
        return positive_variables(f.left) | positive_variables(f.right)
    return frozenset()  # NOT β


def negated_variables(f: A.Formula) -> frozenset[str]:
    """The AS names inside the NOTs of ``f`` (``n`` of ``NOT B AS n``): only their own atoms
    ``n[...]`` name them. A type written only under NOT is not one of them."""
    if isinstance(f, A.Not):
        return frozenset(v for v in _as_vars(f.formula))
    if isinstance(f, A.As | A.Filter | A.Plus):
        return negated_variables(f.formula)
    if isinstance(f, A.Seq | A.Or | A.And):
        return negated_variables(f.left) | negated_variables(f.right)
    return frozenset()


def _as_vars(f: A.Formula) -> set[str]:
    if isinstance(f, A.As):
        return _as_vars(f.formula) | {f.var}
    if isinstance(f, A.Or):
        return _as_vars(f.left) | _as_vars(f.right)
    return set()


def _positive_types(f: A.Formula) -> frozenset[str]:
    """The event types of ``f``'s leaves outside its NOTs."""
    if isinstance(f, A.EventType):
        return frozenset([f.name])
    if isinstance(f, A.As | A.Filter | A.Plus):
        return _positive_types(f.formula)
    if isinstance(f, A.Seq | A.Or | A.And):
        return _positive_types(f.left) | _positive_types(f.right)
    return frozenset()


def stream_views(f: A.Formula) -> frozenset[str]:
    """``S>T`` for each event type ``T`` of ``f`` outside its NOTs: the ``T`` events of stream
    ``S``, whichever ``T`` leaf binds them (``S`` is in every FROM the generators draw) — where
    the query's WHERE writes no leaf ``S>T``; where it does, ``S>T`` names those leaves' events
    (``queries`` keeps only the queries where these are positive in the FILTERs naming them)."""
    return frozenset(f"S>{t}" for t in _positive_types(f))


def written_qualified(f: A.Formula) -> frozenset[str]:
    """``S>T`` for each leaf of ``f`` written ``S>T`` (under NOT too)."""
    if isinstance(f, A.EventType):
        return frozenset() if f.stream is None else frozenset([f"{f.stream}>{f.name}"])
    if isinstance(f, A.As | A.Filter | A.Plus | A.Not):
        return written_qualified(f.formula)
    if isinstance(f, A.Seq | A.Or | A.And):
        return written_qualified(f.left) | written_qualified(f.right)
    return frozenset()


def _stream_names_agree(q: A.Query) -> bool:
    """False when a FILTER or the SELECT list names ``S>T`` (drawn as the ``T`` events of
    stream ``S``) while WHERE writes a leaf ``S>T`` that is not positive where it is named:
    ``S>T`` then names that leaf's events, outside the FILTER's formula or negated."""
    written = written_qualified(q.where)
    if not written:
        return True
    if q.select and any(v in written and v not in positive_variables(q.where)
                        for v in q.select):
        return False
    for f in formula_nodes(q.where):
        if isinstance(f, A.Filter):
            named: set[str] = set()
            for leaf in filter_leaves(f.cond):
                named |= condition_refs(None, leaf.pred)
                if isinstance(leaf, A.FilterAtom):
                    named.add(leaf.var)
            if (named & written) - positive_variables(f.formula):
                return False
    return True


def _names(f: A.Formula) -> tuple[str, ...]:
    """The variables of ``f`` (which ``Y.attr`` and aggregates can name), ``S>T`` ones
    included."""
    return tuple(sorted(positive_variables(f) | stream_views(f)))


@st.composite
def correlated_atoms(draw: st.DrawFn, var: str, filtered: A.Formula) -> A.FilterAtom:
    """``var[P]`` in a FILTER of the formula ``filtered``, ``P`` reading its variables."""
    scope = Scope(var, _names(filtered), True)
    return A.FilterAtom(var, draw(correlated_preds(scope)))


@st.composite
def match_conds(draw: st.DrawFn, filtered: A.Formula) -> A.FilterMatch:
    """``[P]`` in a FILTER of the formula ``filtered``."""
    pred = correlated_preds(Scope(None, _names(filtered))).filter(_reads_valuation)
    return A.FilterMatch(draw(pred))


@st.composite
def _correlated_leaves(draw: st.DrawFn, filtered: A.Formula) -> A.FilterAtom | A.FilterMatch:
    kind = draw(st.sampled_from(["atom"] * 4 + ["plain", "match", "match"]))
    var = draw(st.sampled_from(sorted(positive_variables(filtered))
                               + sorted(stream_views(filtered)) * draw(st.sampled_from((0, 1)))))
    if kind == "atom":
        return draw(correlated_atoms(var, filtered))
    if kind == "plain":
        return A.FilterAtom(var, draw(preds()))
    return draw(match_conds(filtered))


@st.composite
def correlated_filter_conds(draw: st.DrawFn, filtered: A.Formula,
                            depth: int = 2) -> A.FilterExpr:
    """A FILTER condition for the formula ``filtered`` with conditions between its variables
    (``Y.attr``), ``PREV`` (on any positive variable: vacuous where it binds one event),
    aggregates and match conditions ``[P]``, mixed with plain atoms."""
    if depth <= 0 or draw(st.booleans()):
        return draw(_correlated_leaves(filtered))
    left = draw(correlated_filter_conds(filtered, depth - 1))
    right = draw(correlated_filter_conds(filtered, depth - 1))
    return A.FilterAnd(left, right) if draw(st.booleans()) else A.FilterOr(left, right)


# ---------------------------------------------------------------- formulas

Bound = frozenset[str]
_FORMULA_KINDS = ("seq", "seq", "cseq", "or", "plus", "cplus", "as", "filter", "filter",
                  "optional")
_CORRELATED_KINDS = (*_FORMULA_KINDS, "filter", "rising", "rising", "chain", "chain",
                     "iterjoin", "iterjoin", "iterjoin")
_CONJ_NEG_KINDS = ("and", "and", "neg", "neg")
_CONJ_NEG_CORRELATED_KINDS = ("and", "andchain", "neg", "negjoin")


@st.composite
def formulas(draw: st.DrawFn, streams: tuple[str, ...] = ("S",),
             depth: int = 3, correlated: bool = False, conj_neg: bool = False,
             fresh: list[str] | None = None) -> tuple[A.Formula, Bound]:
    """A formula and the variables it binds (event-type names included; negated ones not).

    ``correlated``: FILTERs hold conditions between events (``correlated_filter_conds``), more
    of them, and two shapes of their own: ``(φ AS v)+ FILTER v[a > PREV(a)]`` and
    ``φ1 AS v ; φ2 AS w FILTER w[a = v.a]``; the variables include ``S>T`` for each leaf
    ``S>T``. Without it, exactly the formulas drawn before conditions between events existed.

    ``conj_neg``: also ``φ AND ψ`` and ``φ ; NOT β ; ψ`` (see ``_negation_chains``), FILTERs
    with atoms about the negated variables they enclose, and with ``correlated``
    ``φ1 AS v AND φ2 AS w FILTER w[a = v.a]`` and ``φ1 AS v ; NOT β AS n ; φ2 AS w FILTER
    n[a = v.a]``. No NOT is leading or trailing (``queries`` adds those at the top level).
    ``fresh``: the negated names used so far (each NOT gets a new one); internal.
    """
    if conj_neg and fresh is None:
        fresh = []
    if depth <= 0 or draw(st.integers(0, depth)) == 0:
        name = draw(st.sampled_from(("A", "A", "B", "B", "C")))
        qualifier = draw(st.sampled_from((None, None, None, *streams)))
        if correlated and qualifier is not None:
            return A.EventType(name, qualifier), frozenset({name, f"{qualifier}>{name}"})
        return A.EventType(name, qualifier), frozenset({name})
    kinds = _CORRELATED_KINDS if correlated else _FORMULA_KINDS
    if conj_neg:
        kinds = (*kinds, *(_CONJ_NEG_CORRELATED_KINDS if correlated else _CONJ_NEG_KINDS))
    kind = draw(st.sampled_from(kinds))
    if kind in ("and", "andchain"):
        left, lb = draw(formulas(streams, depth - 1, correlated, conj_neg, fresh))
        right, rb = draw(formulas(streams, depth - 1, correlated, conj_neg, fresh))
        if kind == "and":
            return A.And(left, right), lb | rb
        # φ1 AS v AND φ2 AS w FILTER w[a = v.a] (a condition between the two sides)
        v, w = draw(st.permutations(VARS))[:2]
        both = A.And(A.As(left, v), A.As(right, w))
        attr = draw(st.sampled_from(NUM_ATTRS))
        cond: A.FilterExpr = A.FilterAtom(w, A.Compare(draw(st.sampled_from(_REL_OPS)),
                                                       A.Attr(attr), A.Attr(attr, var=v)))
        if draw(st.integers(0, 2)) == 0:
            cond = A.FilterAnd(cond, draw(correlated_filter_conds(both, 1)))
        return A.Filter(both, cond), lb | rb | {v, w}
    if kind in ("neg", "negjoin"):
        return draw(_negation_chains(streams, depth, correlated, fresh, kind == "negjoin"))
    if kind == "optional":
        # (φ1 AS v OR φ2) FILTER v[...]: on φ2's valuations V(v) is empty, which satisfies it
        left, lb = draw(formulas(streams, depth - 1, correlated, conj_neg, fresh))
        right, rb = draw(formulas(streams, depth - 1, correlated, conj_neg, fresh))
        var = draw(st.sampled_from(VARS))
        either = A.Or(A.As(left, var), right)
        cond = draw(correlated_atoms(var, either)) if correlated \
            else A.FilterAtom(var, draw(preds()))
        return A.Filter(either, cond), lb | rb | {var}
    if kind in ("seq", "cseq", "or"):
        left, lb = draw(formulas(streams, depth - 1, correlated, conj_neg, fresh))
        right, rb = draw(formulas(streams, depth - 1, correlated, conj_neg, fresh))
        if kind == "or":
            return A.Or(left, right), lb | rb
        return A.Seq(left, right, kind == "cseq"), lb | rb
    if kind == "iterjoin":
        # (φ1 AS v)+ ; φ2 AS w FILTER w[a > v.a] (either side first, or AND; the condition
        # headed by either variable, one or two comparisons): an iterated variable another
        # one reads, whose records the engine summarizes
        left, lb = draw(formulas(streams, depth - 2, correlated, conj_neg, fresh))
        right, rb = draw(formulas(streams, depth - 2, correlated, conj_neg, fresh))
        v, w = draw(st.permutations(VARS))[:2]
        it: A.Formula = A.Plus(A.As(left, v), draw(st.booleans()))
        other: A.Formula = A.As(right, w)
        shape = draw(st.sampled_from(["seq", "seq", "rseq", "and"])) if conj_neg \
            else draw(st.sampled_from(["seq", "rseq"]))
        both = (A.Seq(it, other) if shape == "seq" else A.Seq(other, it) if shape == "rseq"
                 else A.And(it, other))
        head, read = (w, v) if draw(st.booleans()) else (v, w)
        cmps = [A.Compare(draw(st.sampled_from(_REL_OPS)), A.Attr(a), A.Attr(a, var=read))
                for a in draw(st.lists(st.sampled_from(NUM_ATTRS), min_size=1, max_size=2))]
        pred: A.Pred = cmps[0] if len(cmps) == 1 else A.PAnd(cmps[0], cmps[1])
        link: A.FilterExpr = A.FilterAtom(head, pred)
        if draw(st.integers(0, 3)) == 0:
            link = A.FilterAnd(link, draw(correlated_filter_conds(both, 1)))
        return A.Filter(both, link), lb | rb | {v, w}
    if kind == "chain":
        # φ1 AS v ; φ2 AS w FILTER w[a = v.a] (a condition between consecutive parts)
        left, lb = draw(formulas(streams, depth - 1, correlated, conj_neg, fresh))
        right, rb = draw(formulas(streams, depth - 1, correlated, conj_neg, fresh))
        v, w = draw(st.permutations(VARS))[:2]
        attr = draw(st.sampled_from(NUM_ATTRS))
        op = draw(st.sampled_from(_REL_OPS))
        join: A.FilterExpr = A.FilterAtom(w, A.Compare(op, A.Attr(attr), A.Attr(attr, var=v)))
        seq = A.Seq(A.As(left, v), A.As(right, w), draw(st.booleans()))
        if draw(st.integers(0, 2)) == 0:
            join = A.FilterAnd(join, draw(correlated_filter_conds(seq, 1)))
        return A.Filter(seq, join), lb | rb | {v, w}
    inner, ib = draw(formulas(streams, depth - 1, correlated, conj_neg, fresh))
    if kind in ("plus", "cplus"):
        return A.Plus(inner, kind == "cplus"), ib
    if kind == "as":
        var = draw(st.sampled_from(VARS))
        return A.As(inner, var), ib | {var}
    if kind == "rising":
        # (φ AS v)+ FILTER v[a > PREV(a)] (SASE+'s b[i].a > b[i-1].a)
        var = draw(st.sampled_from(VARS))
        attr = draw(st.sampled_from(NUM_ATTRS))
        op = draw(st.sampled_from(_REL_OPS))
        rise: A.FilterExpr = A.FilterAtom(var, A.Compare(op, A.Attr(attr), A.Prev(attr)))
        run = A.Plus(A.As(inner, var), draw(st.booleans()))
        if draw(st.integers(0, 2)) == 0:
            rise = A.FilterAnd(rise, draw(correlated_filter_conds(run, 1)))
        return A.Filter(run, rise), ib | {var}
    if correlated:
        cond = draw(correlated_filter_conds(inner))
    else:
        cond = draw(filter_conds(ib))
    negated = sorted(negated_variables(inner)) if conj_neg else []
    if negated and draw(st.booleans()):  # an outer FILTER enclosing NOTs: atoms about them
        cond = A.FilterAnd(cond, draw(negated_atoms(draw(st.sampled_from(negated)), inner,
                                                    correlated)))
    return A.Filter(inner, cond), ib


# ---------------------------------------------------------------- conjunction and negation

_BETA_TYPES = ("A", "B", "B", "C")


@st.composite
def _negations(draw: st.DrawFn, streams: tuple[str, ...], fresh: list[str],
               named: bool | None = None, near: A.Formula | None = None
               ) -> tuple[A.Not, str | None]:
    """``NOT β`` (β an event type, ``S>T`` or an OR of two) and its variable: ``NOT β AS n``
    with a name not used before (``n``, ``n1``, ...), or None when unnamed. ``near``: the
    formula around the NOT, whose types β takes more often (they are in the stream)."""
    types = _BETA_TYPES if near is None else (*_BETA_TYPES, *sorted(_type_names(near)) * 2)
    leaf = st.builds(A.EventType, st.sampled_from(types),
                     st.sampled_from((None, None, None, None, None, *streams)))
    beta = draw(weighted((3, leaf), (1, st.builds(A.Or, leaf, leaf))))
    if named is None:
        named = draw(st.sampled_from((True, True, False)))
    if not named:
        return A.Not(beta), None
    name = f"n{len(fresh)}" if fresh else "n"
    fresh.append(name)
    return A.Not(A.As(beta, name)), name


@st.composite
def negated_atoms(draw: st.DrawFn, var: str, filtered: A.Formula,
                  correlated: bool = False) -> A.FilterAtom:
    """``n[P]`` for the negated variable ``var`` in a FILTER of ``filtered`` (which holds its
    NOT): plain predicates; ``correlated``: also comparisons with the positive variables of
    ``filtered`` (``n[a = x.a]``, universal over ``x``'s events), written in either
    variable's brackets (``x[a > n.a]``), and their aggregates. Never ``PREV`` (a negated
    variable binds one event)."""
    kind = draw(st.sampled_from(["simple", "plain", "join", "join", "cond", "other"]
                                if correlated else ["simple", "simple", "plain"]))
    if kind == "simple":  # mostly true: the NOT then excludes most β events
        op, value = draw(st.sampled_from(SIMPLE))
        return A.FilterAtom(var, A.Compare(op, draw(_num_attr), A.Literal(value)))
    if kind == "plain":
        return A.FilterAtom(var, draw(weighted((2, atom_preds()), (1, preds(1)))))
    names = _names(filtered)
    if kind == "other":  # in a positive variable's brackets: a condition on n all the same
        attr = draw(st.sampled_from(_OPERAND_ATTRS))
        op = draw(st.sampled_from(("=", "!=", *_REL_OPS)))
        return A.FilterAtom(draw(st.sampled_from(names)),
                            A.Compare(op, A.Attr(attr), A.Attr(attr, var=var)))
    if kind == "join":
        attr = draw(st.sampled_from(_OPERAND_ATTRS))
        op = draw(st.sampled_from(("=", "=", *_REL_OPS)))
        other = A.Attr(attr, var=draw(st.sampled_from(names)))
        return A.FilterAtom(var, A.Compare(op, A.Attr(attr), other))
    return A.FilterAtom(var, draw(correlated_preds(Scope(var, names), 1)))


@st.composite
def negated_conds(draw: st.DrawFn, names: tuple[str, ...] | list[str], filtered: A.Formula,
                  correlated: bool = False) -> A.FilterExpr:
    """A FILTER condition for ``filtered`` with one or two atoms about the negated variables
    ``names`` (plain conjuncts), sometimes AND a condition on the positive variables (any
    shape, OR included)."""
    cond: A.FilterExpr = draw(negated_atoms(draw(st.sampled_from(names)), filtered, correlated))
    if draw(st.integers(0, 2)) == 0:
        cond = A.FilterAnd(cond, draw(negated_atoms(draw(st.sampled_from(names)), filtered,
                                                    correlated)))
    if draw(st.integers(0, 2)) == 0:
        other = draw(correlated_filter_conds(filtered, 1)) if correlated \
            else draw(filter_conds(positive_variables(filtered), 1))
        cond = A.FilterAnd(other, cond) if draw(st.booleans()) else A.FilterAnd(cond, other)
    return cond


@st.composite
def _negation_chains(draw: st.DrawFn, streams: tuple[str, ...], depth: int, correlated: bool,
                     fresh: list[str] | None, join: bool) -> tuple[A.Formula, Bound]:
    """``φ ; NOT β ; ψ`` (left-nested, as the parser gives ``;`` chains), β maybe named ``n``
    with atoms about it in one or two FILTERs around the chain — right around it, or (when
    named) around ``(chain)+`` or ``chain AND χ`` (their conditions read every iteration's
    events, or χ's); ``join``:
    ``φ AS v ; NOT β AS n ; ψ AS w FILTER n[a = v.a]`` (no β like v or w in between)."""
    assert fresh is not None
    # small neighbours mostly (a NOT that decides something needs matches around it)
    left, lb = draw(formulas(streams, depth - draw(st.sampled_from((1, 2, 2))), correlated,
                             True, fresh))
    right, rb = draw(formulas(streams, depth - draw(st.sampled_from((1, 2, 2))), correlated,
                              True, fresh))
    if join:
        v, w = draw(st.permutations(VARS))[:2]
        left, right, lb, rb = A.As(left, v), A.As(right, w), lb | {v}, rb | {w}
    neg, name = draw(_negations(streams, fresh, True if join else None, A.Seq(left, right)))
    chain: A.Formula = A.Seq(A.Seq(left, neg), right)
    around = draw(st.sampled_from(("", "", "plus", "plus", "and"))) if name is not None else ""
    if around == "plus":  # the NOT under an iteration inside the FILTER
        chain = A.Plus(chain, False)
    elif around == "and":  # ... or inside an operand of AND
        other, ob = draw(formulas(streams, 1, correlated, False))
        var = draw(st.sampled_from(VARS))
        other, ob = A.As(other, var), ob | {var}
        chain = A.And(chain, other) if draw(st.booleans()) else A.And(other, chain)
        rb = rb | ob
    if join:
        assert name is not None
        attr = draw(st.sampled_from(_OPERAND_ATTRS))
        op = draw(st.sampled_from(("=", "=", *_REL_OPS)))
        other = A.Attr(attr, var=draw(st.sampled_from([v, w])))
        cond: A.FilterExpr = A.FilterAtom(name, A.Compare(op, A.Attr(attr), other))
        if draw(st.integers(0, 2)) == 0:
            cond = A.FilterAnd(cond, draw(negated_conds([name], chain, correlated)))
        return A.Filter(chain, cond), lb | rb
    if name is not None and draw(st.integers(0, 2)) > 0:
        chain = A.Filter(chain, draw(negated_conds([name], chain, correlated)))
        if draw(st.integers(0, 3)) == 0:  # several FILTERs enclose the NOT: all apply
            chain = A.Filter(chain, draw(negated_conds([name], chain, correlated)))
    return chain, lb | rb


def _prepend(f: A.Formula, neg: A.Not) -> A.Formula:
    """``NOT β ; f`` with the NOT as the first element of ``f``'s ``;`` chain (left-nested)."""
    if isinstance(f, A.Seq):
        return A.Seq(_prepend(f.left, neg), f.right, f.contiguous)
    return A.Seq(neg, f)


def _has_conj_neg(f: A.Formula) -> bool:
    if isinstance(f, A.And | A.Not):
        return True
    if isinstance(f, A.As | A.Filter | A.Plus):
        return _has_conj_neg(f.formula)
    if isinstance(f, A.Seq | A.Or):
        return _has_conj_neg(f.left) or _has_conj_neg(f.right)
    return False


@st.composite
def _top_conj_neg(draw: st.DrawFn, where: A.Formula, bound: Bound, streams: tuple[str, ...],
                  correlated: bool, fresh: list[str]) -> tuple[A.Formula, Bound, bool, bool]:
    """The top level of a ``conj_neg`` query: an AND or a NOT when ``where`` has none, then
    maybe a leading and/or a trailing NOT, with a FILTER of atoms about them around all.
    Returns the WHERE, its variables, and whether it has a leading / a trailing NOT."""
    if not _has_conj_neg(where):
        other, ob = draw(formulas(streams, 1, correlated, True, fresh))
        if draw(st.booleans()):
            where = A.And(where, other) if draw(st.booleans()) else A.And(other, where)
        else:
            neg, name = draw(_negations(streams, fresh, near=A.Seq(where, other)))
            where = A.Seq(A.Seq(where, neg), other)
            if name is not None and draw(st.booleans()):
                where = A.Filter(where, draw(negated_conds([name], where, correlated)))
        bound = bound | ob
    edges = draw(st.sampled_from(("none", "none", "none", "none", "leading", "trailing",
                                  "both")))
    leading, trailing = edges in ("leading", "both"), edges in ("trailing", "both")
    names: list[str] = []
    if leading:
        neg, name = draw(_negations(streams, fresh, near=where))
        where = _prepend(where, neg)
        names += [name] if name is not None else []
    if trailing:
        neg, name = draw(_negations(streams, fresh, near=where))
        where = A.Seq(where, neg)
        names += [name] if name is not None else []
    if names and draw(st.integers(0, 2)) > 0:
        where = A.Filter(where, draw(negated_conds(names, where, correlated)))
    return where, bound, leading, trailing


# ---------------------------------------------------------------- clauses and queries


@st.composite
def withins(draw: st.DrawFn, required: bool = False) -> A.Within | None:
    """A WITHIN clause or None; ``required``: never None (a leading or trailing NOT)."""
    kind = draw(st.sampled_from(["events", "events", "time", "attr"] if required
                                else ["none", "none", "events", "time", "attr"]))
    if kind == "none":
        return None
    if kind == "events":
        return A.Within("events", Fraction(draw(st.sampled_from([0, 1, 2, 3, 3, 4, 5, 6]))))
    if kind == "time":
        return A.Within("time", draw(st.sampled_from(TIME_WINDOWS)))
    return A.Within("attr", Fraction(draw(st.integers(0, 4))), "ts")


@st.composite
def queries(draw: st.DrawFn, correlated: bool = False, conj_neg: bool = False) -> A.Query:
    """A query; ``correlated``: with conditions between events (see ``correlated_queries``);
    ``conj_neg``: with conjunction and negation (see ``conj_neg_queries``)."""
    streams = draw(st.sampled_from([("S",), ("S", "T"), ("T", "S")]))
    fresh: list[str] = []
    where, bound = draw(formulas(streams, draw(st.sampled_from((2, 3))) if conj_neg else 3,
                                 correlated=correlated, conj_neg=conj_neg,
                                 fresh=fresh if conj_neg else None))
    if correlated and not is_correlated_query(where):
        where = A.Filter(where, draw(_correlated_leaves(where).filter(is_correlated)))
    leading = trailing = False
    if conj_neg:
        where, bound, leading, trailing = draw(_top_conj_neg(where, bound, streams, correlated,
                                                             fresh))
    select_kind = draw(st.sampled_from(["*", "*", "*", "none", "vars", "vars"]))
    select: tuple[str, ...] | None
    if select_kind == "*":
        select = None
    elif select_kind == "none":
        select = ()
    else:
        names = sorted(bound | (stream_views(where) if correlated else frozenset()))
        select = tuple(draw(st.lists(st.sampled_from(names), min_size=1, max_size=2,
                                     unique=True)))
    strategy = draw(st.sampled_from(A.STRATEGIES))
    partition_by = draw(st.sampled_from([(), (), (), ("g",), ("g", "h"), ("a",)]))
    within = draw(withins(required=leading or trailing))
    # a trailing NOT's outputs come late: CONSUME BY ANY/PARTITION is refused with it
    consume = "NONE" if trailing else draw(st.sampled_from(("NONE", "NONE", "ANY", "PARTITION")))
    q = A.Query(
        strategy=strategy,
        select=select,
        streams=streams,
        where=where,
        partition_by=partition_by,
        within=within,
        consume=consume,
        limit=draw(st.sampled_from((None, None, None, 0, 1, 2, 3))),
    )
    assume(_stream_names_agree(q))
    return q


def correlated_queries() -> st.SearchStrategy[A.Query]:
    """Queries with at least one condition between events (``Y.attr``, ``PREV``, an aggregate or
    a match condition ``[P]``) among every other operator and clause; SELECT lists and FILTER
    heads may name ``S>T``."""
    return queries(correlated=True)


def conj_neg_queries(correlated: bool = False) -> st.SearchStrategy[A.Query]:
    """Queries with at least one AND or NOT (between, leading, trailing; named or not, with atoms
    about the negated variables) among every other operator and clause; ``correlated``: with
    conditions between events too (``n[a = x.a]`` among them)."""
    return queries(correlated=correlated, conj_neg=True)


# ---------------------------------------------------------------- streams

_MISSING = object()


def _maybe(values: list[Any], weight: int) -> st.SearchStrategy[Any]:
    """One of ``values`` (each ``weight`` times as likely as None and as ``_MISSING``)."""
    return st.sampled_from([*values * weight, None, _MISSING])


@st.composite
def events_lists(draw: st.DrawFn, max_size: int = 8, mixed: bool = True,
                 types: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """Small streams; ``mixed=False`` keeps every attribute to one type (for Arrow tables).

    ``types``: the event types to draw from (D, a type no query names, is added sometimes).
    """
    n = draw(weighted((1, st.just(0)), (3, st.integers(1, max_size)),
                      (6, st.integers(max_size - 3, max_size))))
    if types is None:
        types = draw(st.sampled_from([("A", "B"), ("A", "B", "C")]))
    if draw(st.integers(0, 4)) == 0:
        types = (*types, "D")
    ints = [0, 1, 2, 3]
    columns: dict[str, st.SearchStrategy[Any]] = {
        "stream": st.sampled_from([_MISSING, _MISSING, None, "S", "S", "T", "U"]),
        "a": _maybe(ints, 2),
        "b": _maybe(ints, 2),
        "c": _maybe([0, 1, 2, 3, "x", "3"] if mixed else ints, 1),
        "s": _maybe(list(STRINGS), 1),
        "g": _maybe([0, 1], 4),
        "h": _maybe([0, 1], 4),
    }
    type_of = st.sampled_from(types)
    step = st.sampled_from([0, 1, 1, 2])
    ts = 0
    out: list[dict[str, Any]] = []
    for _ in range(n):
        ts += draw(step)
        ev: dict[str, Any] = {"type": draw(type_of), "ts": ts}
        for k, strategy in columns.items():
            v = draw(strategy)
            if v is not _MISSING:
                ev[k] = v
        out.append(ev)
    return out


Case = tuple[A.Query, list[dict[str, Any]], str | None]


def _type_names(f: A.Formula) -> set[str]:
    if isinstance(f, A.EventType):
        return {f.name}
    if isinstance(f, (A.As, A.Filter, A.Plus, A.Not)):
        return _type_names(f.formula)
    return _type_names(f.left) | _type_names(f.right)


@st.composite
def cases(draw: st.DrawFn, mixed: bool = True, correlated: bool = False,
          conj_neg: bool = False) -> Case:
    """A query, a stream mostly of the types it names, and the time option (None or "ts");
    ``correlated``: a query of ``correlated_queries``; ``conj_neg``: of ``conj_neg_queries``
    (the types of its NOTs are among the stream's)."""
    q = draw(queries(correlated=correlated, conj_neg=conj_neg))
    extra = draw(st.sampled_from(("", "", "A", "B", "C")))
    types = tuple(sorted((_type_names(q.where) | {extra}) - {""}))
    return q, draw(events_lists(mixed=mixed, types=types)), draw(_time_option(q))


MultiCase = tuple[A.Query, list[list[dict[str, Any]]], str | None]


@st.composite
def multi_cases(draw: st.DrawFn, mixed: bool = True, streams: int = 3,
                correlated: bool = False, conj_neg: bool = False) -> MultiCase:
    """A query, up to ``streams`` streams for it, and the time option."""
    q = draw(queries(correlated=correlated, conj_neg=conj_neg))
    out = []
    for _ in range(draw(st.integers(1, streams))):
        extra = draw(st.sampled_from(("", "", "A", "B", "C")))
        types = tuple(sorted((_type_names(q.where) | {extra}) - {""}))
        out.append(draw(events_lists(mixed=mixed, types=types)))
    return q, out, draw(_time_option(q))


def _time_option(q: A.Query) -> st.SearchStrategy[str | None]:
    """The time option: positions or ``ts``; a window in time needs ``ts`` (ceql refuses
    positions as seconds)."""
    if q.within is not None and q.within.kind == "time":
        return st.just("ts")
    return st.sampled_from([None, "ts"])


def core(q: A.Query) -> A.Query:
    """The query's WHERE alone: SELECT ALL *, no PARTITION BY / WITHIN / CONSUME BY / LIMIT."""
    return A.Query("ALL", None, q.streams, q.where)
