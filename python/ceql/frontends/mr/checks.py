"""The standard's rules a parsed MATCH_RECOGNIZE must keep (ISO/IEC 19075-5, as
docs/match_recognize.md states them): names (pattern, subset and DEFINE variables, measures),
navigation (offsets, arguments, nesting, RUNNING/FINAL), aggregates, what DEFINE may use, the
empty-match restrictions. The first broken rule in text order is raised, with its caret."""

from __future__ import annotations

from collections.abc import Iterator

from ...errors import CeqlValidationError, UnknownVariableError, caret_snippet
from ...ir.nodes import Span
from . import ast as A
from .errors import AggregateError, ClauseError, NavigationError, PatternError

__all__ = ["SCALAR_FUNCTIONS", "check"]

#: Scalar functions whose number of arguments is checked: name → (fewest, most; None: any).
#: Others are accepted here (Spark evaluates them) and refused by the Python evaluation.
SCALAR_FUNCTIONS: dict[str, tuple[int, int | None]] = {
    "ABS": (1, 1), "ROUND": (1, 2), "UPPER": (1, 1), "LOWER": (1, 1), "COALESCE": (1, None),
}


class _Checker:
    def __init__(self, mr: A.MatchRecognize) -> None:
        self.mr = mr
        self.vars = mr.variables()
        self.subsets = {s.name: s for s in mr.subsets}

    def fail(self, cls: type[CeqlValidationError], message: str, span: Span) -> None:
        width = (span.end_column - span.column) if span.end_line == span.line else 1
        raise cls(message, line=span.line, column=span.column,
                  snippet=caret_snippet(self.mr.text, span.line, span.column, max(1, width)))

    def known(self) -> str:
        names = [*self.vars, *self.subsets]
        return ", ".join(names) if names else "none"

    def variable(self, name: str, span: Span, what: str) -> None:
        if name not in self.vars and name not in self.subsets:
            self.fail(UnknownVariableError, f"{what} names {name!r}, which is neither a "
                      f"pattern variable nor a SUBSET (known: {self.known()})", span)

    # ------------------------------------------------------------ clauses
    def run(self) -> None:
        mr = self.mr
        for sub in mr.subsets:
            if sub.name in self.vars:
                self.fail(ClauseError, f"SUBSET {sub.name} has the name of a pattern "
                          "variable: give the union another name", sub.span)
            if [s.name for s in mr.subsets].count(sub.name) > 1:
                self.fail(ClauseError, f"SUBSET {sub.name} is defined twice", sub.span)
            for member in sub.members:
                if member not in self.vars:
                    self.fail(UnknownVariableError, f"SUBSET {sub.name} names {member!r}, which "
                              f"is not a pattern variable (pattern variables: "
                              f"{', '.join(self.vars) or 'none'})", sub.span)
        if mr.skip.var is not None:
            self.variable(mr.skip.var, mr.skip.span, f"AFTER MATCH SKIP {mr.skip.kind}")
        if isinstance(mr.rows_per_match, A.AllRows) and (
                mr.rows_per_match.mode == "WITH UNMATCHED ROWS"):
            excl = next((p for p in self.patterns() if isinstance(p, A.Exclusion)), None)
            if excl is not None:
                self.fail(PatternError, "An exclusion {- … -} cannot be used with ALL ROWS "
                          "PER MATCH WITH UNMATCHED ROWS: an excluded row would be neither "
                          "matched nor unmatched", excl.span)
        if mr.within is not None and not mr.order_by:
            self.fail(ClauseError, "WITHIN measures time along ORDER BY's first column: add "
                      "ORDER BY <time column>", mr.span)
        seen: set[str] = set()
        for d in mr.defines:
            if d.var in self.subsets:
                self.fail(ClauseError, f"DEFINE {d.var}: {d.var} is a SUBSET; DEFINE gives "
                          "conditions of primary pattern variables", d.span)
            if d.var not in self.vars:
                self.fail(UnknownVariableError, f"DEFINE {d.var}: {d.var!r} is not in the "
                          f"PATTERN (pattern variables: {', '.join(self.vars) or 'none'})",
                          d.span)
            if d.var in seen:
                self.fail(ClauseError, f"DEFINE gives {d.var} twice", d.span)
            seen.add(d.var)
            self.expression(d.condition, define=True)
        names: set[str] = set()
        partition = {c.lower() for c in mr.partition_by}
        for measure in mr.measures:
            m = measure
            key = m.name.lower()
            if key in names:
                self.fail(ClauseError, f"Two measures are named {m.name!r}", m.span)
            if key in partition:
                self.fail(ClauseError, f"Measure {m.name!r} has the name of a PARTITION BY "
                          "column: give it another name", m.span)
            names.add(key)
            self.expression(m.expr, define=False)

    def patterns(self) -> Iterator[A.Pattern]:
        yield from A.walk_pattern(self.mr.pattern)

    # ------------------------------------------------------------ expressions
    def expression(self, expr: A.Expr, *, define: bool) -> None:
        for node in A.walk(expr):
            if isinstance(node, A.Column) and node.var is not None:
                self.variable(node.var, node.span, f"Column {node.var}.{node.name}")
            elif isinstance(node, A.Classifier) and node.var is not None:
                self.variable(node.var, node.span, "CLASSIFIER")
            elif isinstance(node, A.MatchNumber) and define:
                self.fail(ClauseError, "MATCH_NUMBER() cannot be used in DEFINE: a match "
                          "has no number until it is found", node.span)
            elif isinstance(node, A.Navigation):
                self.navigation(node, define)
            elif isinstance(node, A.Aggregate):
                self.aggregate(node, define)
            elif isinstance(node, A.Call):
                arity = SCALAR_FUNCTIONS.get(node.name)
                if arity is not None:
                    low, high = arity
                    if len(node.args) < low or (high is not None and len(node.args) > high):
                        most = "or more" if high is None else (
                            "" if high == low else f"to {high}")
                        self.fail(ClauseError, f"{node.name} takes {low} {most} "
                                  f"argument{'s' if (high or 2) > 1 else ''}".replace(
                                      "  ", " "), node.span)
            if (define and isinstance(node, (A.Navigation, A.Aggregate, A.Classifier))
                    and node.semantics == "FINAL"):
                self.fail(NavigationError, "FINAL cannot be used in DEFINE: a condition sees "
                          "the match only up to the row it decides on (RUNNING)", node.span)

    def reads(self, expr: A.Expr) -> tuple[set[str | None], bool]:
        """The variables the column references of ``expr`` name (None: the universal one),
        and whether it reads a row at all (a column or CLASSIFIER)."""
        names: set[str | None] = set()
        reads = False
        for node in A.walk(expr):
            if isinstance(node, A.Column):
                names.add(node.var)
                reads = True
            elif isinstance(node, A.Classifier):
                names.add(node.var)
                reads = True
        return names, reads

    def navigation(self, nav: A.Navigation, define: bool) -> None:
        physical = nav.kind in ("PREV", "NEXT")
        inner = [n for n in A.walk(nav.arg) if isinstance(n, (A.Navigation, A.Aggregate,
                                                               A.MatchNumber))]
        for n in inner:
            if isinstance(n, A.Aggregate):
                self.fail(AggregateError, f"An aggregate cannot stand inside {nav.kind}",
                          n.span)
            if isinstance(n, A.MatchNumber):
                self.fail(NavigationError, f"MATCH_NUMBER() cannot stand inside {nav.kind}",
                          n.span)
            assert isinstance(n, A.Navigation)
            if not physical:
                self.fail(NavigationError, f"{n.kind} cannot stand inside {nav.kind}: a "
                          f"logical navigation (FIRST, LAST) may only hold columns; write "
                          f"{n.kind}({nav.kind}(…)) instead", n.span)
            if n.kind in ("PREV", "NEXT"):
                self.fail(NavigationError, f"{n.kind} cannot stand inside {nav.kind}: "
                          f"physical navigations do not nest; add the offsets", n.span)
            if n is not nav.arg:
                self.fail(NavigationError, f"{n.kind} inside {nav.kind} must be its whole "
                          f"argument: {nav.kind}({n.kind}(A.price), 1)", n.span)
        if not inner:
            names, reads = self.reads(nav.arg)
            if not reads:
                self.fail(NavigationError, f"{nav.kind}'s argument reads no column: write "
                          f"{nav.kind}(price) or {nav.kind}(A.price)", nav.span)
            if len(names) > 1:
                shown = ", ".join(sorted("the universal variable" if n is None else n
                                         for n in names))
                self.fail(NavigationError, f"{nav.kind}'s argument reads several row "
                          f"pattern variables ({shown}): all its columns must be of one",
                          nav.span)

    def aggregate(self, agg: A.Aggregate, define: bool) -> None:
        if agg.star_var is not None:
            self.variable(agg.star_var, agg.span, f"COUNT({agg.star_var}.*)")
        if agg.arg is None:
            return
        for n in A.walk(agg.arg):
            if isinstance(n, A.Aggregate):
                self.fail(AggregateError, "Aggregates do not nest", n.span)
            if isinstance(n, A.Navigation):
                self.fail(AggregateError, f"{n.kind} cannot stand inside {agg.name}: an "
                          "aggregate reads the rows of its variable themselves", n.span)
            if isinstance(n, (A.MatchNumber, A.Classifier)):
                what = "MATCH_NUMBER" if isinstance(n, A.MatchNumber) else "CLASSIFIER"
                self.fail(AggregateError, f"{what}() cannot stand inside {agg.name}", n.span)
        names, _ = self.reads(agg.arg)
        if len(names) > 1:
            shown = ", ".join(sorted("the universal variable" if n is None else n
                                     for n in names))
            self.fail(AggregateError, f"{agg.name}'s argument reads several row pattern "
                      f"variables ({shown}): all its columns must be of one", agg.span)


def check(mr: A.MatchRecognize) -> None:
    """Raise the first rule of the standard that ``mr`` breaks (a
    :class:`~ceql.errors.CeqlValidationError` with a caret), or return."""
    _Checker(mr).run()
