"""Hypothesis generators for MATCH_RECOGNIZE: random clause bodies (as syntax trees) and small
partitions of rows.

Patterns use every operator of docs/match_recognize.md: variables A–D, ``()``, ``^``, ``$``,
concatenation, ``|``, every quantifier form greedy and reluctant (``* + ? {n} {n,} {,m}
{n,m}``), ``PERMUTE``, ``{- -}`` (nested too), quantified anchors, nested freely
(depth-limited). Conditions and measures use
columns (universal and qualified, subsets too), comparisons, AND/OR/NOT, IS [NOT] NULL,
BETWEEN, IN, LIKE, CASE, COALESCE, ABS, arithmetic, PREV/NEXT/FIRST/LAST with offsets (and
PREV/NEXT around FIRST/LAST), COUNT(*)/COUNT(A.*)/SUM/AVG/MIN/MAX (DISTINCT too),
CLASSIFIER(), and in MEASURES also RUNNING/FINAL and MATCH_NUMBER(). Every SKIP mode (to
variables and subsets) and every ROWS PER MATCH mode; WITHIN; PARTITION BY; SUBSET.

Every tree is one the parser gives (``parse_body(format_body(q)) == q``) and passes the checks;
values keep their types apart (``x`` integers or NULL, ``y`` strings, ``ts`` times), so the
reference meets no type clash.
"""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from ceql.frontends.mr import ast as A

__all__ = ["bodies", "cases", "partitions", "patterns"]

VARS = ("A", "B", "C", "D")
T0 = datetime.datetime(2024, 1, 1, 9, 0, 0)

_QUANTS = [(0, None), (1, None), (0, 1), (2, 2), (1, 2), (2, None), (0, 2), (0, 3)]


def _leaf() -> st.SearchStrategy[A.Pattern]:
    return st.sampled_from([
        *(A.PatternVar(v) for v in VARS), *(A.PatternVar(v) for v in VARS[:2]),
        A.EmptyPattern(), A.Anchor("^"), A.Anchor("$")])


def _no_exclusion(p: A.Pattern) -> bool:
    return not any(isinstance(n, A.Exclusion) for n in A.walk_pattern(p))


def _extend(children: st.SearchStrategy[A.Pattern]) -> st.SearchStrategy[A.Pattern]:
    return st.one_of(
        st.lists(children, min_size=2, max_size=3).map(lambda xs: A.Concatenation(tuple(xs))),
        st.lists(children, min_size=2, max_size=3).map(lambda xs: A.Alternation(tuple(xs))),
        st.builds(lambda item, q, greedy: A.Quantified(item, q[0], q[1], greedy),
                  children, st.sampled_from(_QUANTS), st.booleans()),
        st.lists(children, min_size=2, max_size=3).map(lambda xs: A.Permute(tuple(xs))),
        children.map(A.Exclusion),
    )


def _one_labelling() -> st.SearchStrategy[A.Pattern]:
    """Patterns of one labelling (``A B``, ``A (B C){2}``): the fixed-length engine's."""
    var = st.sampled_from([A.PatternVar(v) for v in VARS])
    group = st.builds(
        lambda items, n, greedy: A.Quantified(
            items[0] if len(items) == 1 else A.Concatenation(tuple(items)), n, n, greedy),
        st.lists(var, min_size=1, max_size=2), st.integers(1, 2), st.booleans())
    return st.lists(st.one_of(var, var, group), min_size=1, max_size=3).map(
        lambda xs: xs[0] if len(xs) == 1 else A.Concatenation(tuple(xs)))


def patterns() -> st.SearchStrategy[A.Pattern]:
    """Random row patterns (at most a few operators deep); a third of one labelling."""
    nested = st.recursive(_leaf(), _extend, max_leaves=5)
    return st.one_of(nested, nested, _one_labelling())


# ---------------------------------------------------------------- expressions

def _qualifiers(names: tuple[str, ...]) -> st.SearchStrategy[str | None]:
    return st.sampled_from((None, *names))


@st.composite
def _x_value(draw: Any, names: tuple[str, ...], *, measure: bool,
             kinds: tuple[str, ...] = ()) -> A.Expr:
    """An integer-valued expression (or NULL) over column x."""
    var = draw(_qualifiers(names))
    col = A.Column(var, "x")
    sem = (lambda: draw(st.sampled_from((None, "RUNNING", "FINAL")))) if measure else (
        lambda: draw(st.sampled_from((None, "RUNNING"))))
    kind = draw(st.sampled_from(kinds or ["col", "col", "lit", "prev", "next", "first", "last",
                                 "nested", "sum", "count", "countvar", "min", "max", "avg",
                                 "arith", "abs", "coalesce", "case", "div", "mod", "round",
                                 "cast", "decimal"]))
    if kind == "col":
        return col
    if kind == "lit":
        return A.Literal(draw(st.integers(-1, 5)))
    if kind in ("prev", "next"):
        return A.Navigation(kind.upper(), col, draw(st.integers(0, 2)))  # type: ignore[arg-type]
    if kind in ("first", "last"):
        return A.Navigation(kind.upper(), col, draw(st.integers(0, 2)), sem())  # type: ignore[arg-type]
    if kind == "nested":
        inner = A.Navigation(draw(st.sampled_from(["FIRST", "LAST"])), col,
                             draw(st.integers(0, 1)), sem())
        return A.Navigation(draw(st.sampled_from(["PREV", "NEXT"])), inner,
                            draw(st.integers(0, 2)))
    if kind == "count":
        return A.Aggregate("COUNT", None, False, None, sem())
    if kind == "countvar":
        return A.Aggregate("COUNT", None, False, draw(st.sampled_from(names)) if names else None,
                           sem())
    if kind in ("sum", "min", "max", "avg"):
        return A.Aggregate(kind.upper(), col, draw(st.booleans()), None, sem())
    if kind == "arith":
        return A.Binary(draw(st.sampled_from(["+", "-", "*"])), col,
                        A.Literal(draw(st.integers(0, 3))))
    if kind == "abs":
        return A.Call("ABS", (A.Binary("-", col, A.Literal(2)),))
    if kind == "coalesce":
        return A.Call("COALESCE", (col, A.Literal(draw(st.integers(0, 3)))))
    if kind == "div":  # integers divide into a double; by zero: NULL
        return A.Binary("/", col, A.Literal(draw(st.integers(0, 3))))
    if kind == "mod":  # the sign of the dividend; by zero: NULL
        return A.Binary("%", A.Binary("-", col, A.Literal(3)), A.Literal(draw(st.integers(0, 3))))
    if kind == "round":  # halves away from zero (x / 2 has halves; negative ones too)
        return A.Call("ROUND", (A.Binary("/", A.Binary("-", col, A.Literal(2)), A.Literal(2)),
                                *((A.Literal(draw(st.integers(-1, 1))),)
                                  if draw(st.booleans()) else ())))
    if kind == "cast":
        target = draw(st.sampled_from(["DECIMAL(4,1)", "INT", "DOUBLE", "STRING"]))
        cast = A.Cast(A.Binary("/", col, A.Literal(4)), target)
        return cast if target != "STRING" else A.Cast(cast, "DOUBLE")
    if kind == "decimal":  # an exact decimal times the column
        factor = Decimal(draw(st.sampled_from(["0.5", "1.25", "-2.0"])))
        return A.Binary("*", col, A.Literal(factor))
    return A.Case(None, ((A.IsNull(col, False), A.Literal(0)),), col)


@st.composite
def _range_test(draw: Any, names: tuple[str, ...], kind: str) -> A.Expr:
    """x BETWEEN two small numbers, or x IN a few (either perhaps negated)."""
    x = A.Column(draw(_qualifiers(names)), "x")
    if kind == "between":
        low = draw(st.integers(0, 3))
        return A.Between(x, A.Literal(low), A.Literal(low + draw(st.integers(0, 2))),
                         draw(st.booleans()))
    items = tuple(A.Literal(i) for i in draw(st.lists(st.integers(0, 5), min_size=1,
                                                       max_size=3)))
    return A.InList(x, items, draw(st.booleans()))


@st.composite
def _condition(draw: Any, names: tuple[str, ...], depth: int = 0, *,
               measure: bool = False) -> A.Expr:
    kind = draw(st.sampled_from(["cmp", "cmp", "cmp", "null", "between", "in", "like",
                                 "classifier", "and", "or", "not"]))
    if depth >= 2 and kind in ("and", "or", "not"):
        kind = "cmp"
    if kind == "cmp":
        op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">="]))
        right = draw(st.one_of(st.integers(0, 5).map(A.Literal),
                               _x_value(names, measure=measure)))
        return A.Binary(op, draw(_x_value(names, measure=measure)), right)
    if kind == "null":
        return A.IsNull(draw(_x_value(names, measure=measure)), draw(st.booleans()))
    if kind in ("between", "in"):
        return draw(_range_test(names, kind))
    if kind == "like":
        return A.Like(A.Column(draw(_qualifiers(names)), "y"),
                      A.Literal(draw(st.sampled_from(["a%", "%b", "_", "a_", "%", "%a%", "a\\_",
                                                      "\\a%"]))),
                      draw(st.booleans()))
    if kind == "classifier":
        return A.Binary("=", A.Classifier(None), A.Literal(draw(st.sampled_from(VARS))))
    if kind == "not":
        return A.Not(draw(_condition(names, depth + 1, measure=measure)))
    return A.Binary(kind.upper(), draw(_condition(names, depth + 1, measure=measure)),
                    draw(_condition(names, depth + 1, measure=measure)))


@st.composite
def _measure_expr(draw: Any, names: tuple[str, ...]) -> A.Expr:
    kind = draw(st.sampled_from(["value", "value", "cond", "match_number", "classifier",
                                 "classifier_var", "y"]))
    if kind == "value":
        return draw(_x_value(names, measure=True))
    if kind == "cond":
        return draw(_condition(names, measure=True))
    if kind == "match_number":
        return A.MatchNumber()
    if kind == "classifier":
        return A.Classifier(None, draw(st.sampled_from((None, "RUNNING", "FINAL"))))
    if kind == "classifier_var" and names:
        return A.Classifier(draw(st.sampled_from(names)))
    return A.Binary("||", A.Column(draw(_qualifiers(names)), "y"), A.Literal("!"))


def _variables(p: A.Pattern) -> tuple[str, ...]:
    return A.MatchRecognize(p).variables()


@st.composite
def bodies(draw: Any, one_labelling: bool = False) -> A.MatchRecognize:
    """A random, valid MATCH_RECOGNIZE body over columns k (partition), ts, x, y (with a
    pattern of one labelling when ``one_labelling``)."""
    pattern = draw(_one_labelling() if one_labelling else patterns())
    pvars = _variables(pattern)
    subsets: tuple[A.Subset, ...] = ()
    if pvars and draw(st.booleans()):
        members = draw(st.lists(st.sampled_from(pvars), min_size=1, max_size=3, unique=True))
        subsets = (A.Subset("U", tuple(members)),)
    names = (*pvars, *(s.name for s in subsets))
    defined = draw(st.lists(st.sampled_from(pvars), unique=True)) if pvars else []
    defines = tuple(A.Define(v, draw(_condition(names))) for v in defined)
    measures = tuple(A.Measure(draw(_measure_expr(names)), f"m{i}")
                     for i in range(draw(st.integers(0, 3))))
    modes: list[A.RowsPerMatch] = ["ONE", A.AllRows("SHOW EMPTY MATCHES"),
                                   A.AllRows("OMIT EMPTY MATCHES")]
    if _no_exclusion(pattern):
        modes.append(A.AllRows("WITH UNMATCHED ROWS"))
    rows = draw(st.sampled_from(modes))
    skips = [A.Skip("PAST LAST ROW"), A.Skip("TO NEXT ROW")]
    skips += [A.Skip(kind, v) for v in names for kind in ("TO FIRST", "TO LAST")]
    skip = draw(st.sampled_from(skips))
    within = draw(st.sampled_from([None, datetime.timedelta(seconds=2),
                                   datetime.timedelta(seconds=5)]))
    partition = draw(st.sampled_from([(), ("k",)]))
    order = (A.SortKey("ts", draw(st.booleans()) if within is None else False,
                       draw(st.sampled_from([None, True, False]))),)
    return A.MatchRecognize(pattern, partition, order, measures, rows, skip, within, subsets,
                            defines)


@st.composite
def partitions(draw: Any) -> list[dict[str, object]]:
    """At most 6 rows: partition k (1 or 2), non-decreasing ts (seconds apart, ties too), x a
    small integer or NULL, y a short string."""
    n = draw(st.integers(0, 6))
    out = []
    t = T0
    for _ in range(n):
        t += datetime.timedelta(seconds=draw(st.integers(0, 3)))
        out.append({"k": draw(st.sampled_from([1, 2])), "ts": t,
                    "x": draw(st.one_of(st.none(), st.integers(0, 5))),
                    "y": draw(st.sampled_from(["a", "b", "ab", "ba"]))})
    return out


#: what :func:`value_bodies` computes: the value model's corners (docs/match_recognize.md,
#: "Values, NULL and time")
VALUE_KINDS = ("div", "mod", "round", "cast", "decimal", "arith", "abs", "coalesce", "case")


@st.composite
def value_bodies(draw: Any) -> A.MatchRecognize:
    """``PATTERN (A*)`` with ALL ROWS PER MATCH and two measures of the value model's corners
    (division, remainder, ROUND, CAST, decimals): every row's values are output."""
    measures = tuple(A.Measure(draw(_x_value((), measure=False, kinds=VALUE_KINDS)), f"m{i}")
                     for i in range(2))
    return A.MatchRecognize(A.Quantified(A.PatternVar("A"), 0, None, True), ("k",),
                            (A.SortKey("ts", False, None),), measures,
                            A.AllRows("SHOW EMPTY MATCHES"))


def cases() -> st.SearchStrategy[tuple[A.MatchRecognize, list[dict[str, object]]]]:
    """A body and rows for it."""
    return st.tuples(bodies(), partitions())


# ---------------------------------------------------------------- the columnar engine's subset

_COLUMNAR_X = ("col", "col", "lit", "prev", "next", "first", "last", "nested")


@st.composite
def _columnar_value(draw: Any, names: tuple[str, ...], *, measure: bool) -> A.Expr:
    """A value :mod:`ceql.mr.vectors` lowers: x read through navigation, or the double f in
    double arithmetic."""
    if draw(st.integers(0, 3)) == 0:
        f = A.Column(draw(_qualifiers(names)), "f")
        kind = draw(st.sampled_from(["f", "times", "plus_x", "minus"]))
        if kind == "f":
            return f
        if kind == "times":
            return A.Binary("*", f, A.Literal(draw(st.sampled_from([Decimal("1.5"), 2.0]))))
        if kind == "plus_x":
            return A.Binary("+", A.Column(draw(_qualifiers(names)), "x"), f)
        return A.Negate(f)
    return draw(_x_value(names, measure=measure, kinds=_COLUMNAR_X))


@st.composite
def _columnar_condition(draw: Any, names: tuple[str, ...], depth: int = 0, *,
                        measure: bool = False) -> A.Expr:
    kind = draw(st.sampled_from(["cmp", "cmp", "cmp", "null", "between", "in", "classifier",
                                 "text", "and", "or", "not"]))
    if depth >= 2 and kind in ("and", "or", "not"):
        kind = "cmp"
    if kind == "cmp":
        op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">="]))
        right = draw(st.one_of(st.integers(0, 5).map(A.Literal),
                               _columnar_value(names, measure=measure)))
        return A.Binary(op, draw(_columnar_value(names, measure=measure)), right)
    if kind == "null":
        return A.IsNull(draw(_columnar_value(names, measure=measure)), draw(st.booleans()))
    if kind in ("between", "in"):
        return draw(_range_test(names, kind))
    if kind == "classifier":
        return A.Binary("=", A.Classifier(draw(st.sampled_from((None, *names)))),
                        A.Literal(draw(st.sampled_from(VARS))))
    if kind == "text":
        return A.Binary(draw(st.sampled_from(["=", "<", ">="])),
                        A.Column(draw(_qualifiers(names)), "y"),
                        draw(st.one_of(st.sampled_from(["a", "ab", "b"]).map(A.Literal),
                                       st.just(A.Navigation("PREV", A.Column(None, "y"), 1)))))
    if kind == "not":
        return A.Not(draw(_columnar_condition(names, depth + 1, measure=measure)))
    return A.Binary(kind.upper(), draw(_columnar_condition(names, depth + 1, measure=measure)),
                    draw(_columnar_condition(names, depth + 1, measure=measure)))


@st.composite
def columnar_bodies(draw: Any) -> A.MatchRecognize:
    """A body of one labelling, ONE ROW PER MATCH, DEFINE and MEASURES in the columnar
    engine's subset (mostly), over columns k, ts, x, y, f."""
    pattern = draw(_one_labelling())
    pvars = _variables(pattern)
    subsets: tuple[A.Subset, ...] = ()
    if draw(st.booleans()):
        members = draw(st.lists(st.sampled_from(pvars), min_size=1, max_size=3, unique=True))
        subsets = (A.Subset("U", tuple(members)),)
    names = (*pvars, *(s.name for s in subsets))
    defined = draw(st.lists(st.sampled_from(pvars), unique=True))
    defines = tuple(A.Define(v, draw(_columnar_condition(names))) for v in defined)
    kinds = st.sampled_from(["value", "value", "cond", "match_number", "classifier", "y"])
    measures = []
    for i in range(draw(st.integers(0, 3))):
        kind = draw(kinds)
        expr: A.Expr = (draw(_columnar_value(names, measure=True)) if kind == "value" else
                        draw(_columnar_condition(names, measure=True)) if kind == "cond" else
                        A.MatchNumber() if kind == "match_number" else
                        A.Classifier(draw(st.sampled_from((None, *names))))
                        if kind == "classifier" else A.Column(draw(_qualifiers(names)), "y"))
        measures.append(A.Measure(expr, f"m{i}"))
    skips = [A.Skip("PAST LAST ROW"), A.Skip("TO NEXT ROW")]
    skips += [A.Skip(kind, v) for v in names for kind in ("TO FIRST", "TO LAST")]
    within = draw(st.sampled_from([None, datetime.timedelta(seconds=2),
                                   datetime.timedelta(seconds=5)]))
    partition = draw(st.sampled_from([(), ("k",), ("k",)]))
    order: tuple[A.SortKey, ...] = (A.SortKey("ts", False,
                                              draw(st.sampled_from([None, True, False]))),)
    if within is None and draw(st.integers(0, 5)) == 0:
        order = ()  # the rows' own order (and then, perhaps, no column read at all)
    return A.MatchRecognize(pattern, partition, order, tuple(measures), "ONE",
                            draw(st.sampled_from(skips)), within, subsets, defines)


@st.composite
def columnar_rows(draw: Any, size: int = 8) -> list[dict[str, object]]:
    """Up to ``size`` rows over k (1 or 2), ts (non-decreasing, ties too; zoned or not, per
    draw), x (small or NULL), y (short text), f (a double, NULL or NaN)."""
    zone = draw(st.sampled_from([None, datetime.UTC]))
    out = []
    t = T0.replace(tzinfo=zone)
    for _ in range(draw(st.integers(0, size))):
        t += datetime.timedelta(seconds=draw(st.integers(0, 3)))
        out.append({"k": draw(st.sampled_from([1, 2])), "ts": t,
                    "x": draw(st.one_of(st.none(), st.integers(0, 5))),
                    "y": draw(st.sampled_from(["a", "b", "ab", "ba"])),
                    "f": draw(st.one_of(st.none(), st.sampled_from(
                        [0.5, 1.0, 2.5, -1.0, 3.0, float("nan")])))})
    return out
