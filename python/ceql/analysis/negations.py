"""Negation checks of a CEQL query: where a NOT may stand (an element of a ``;`` sequence,
first or last only with WITHIN), what it may negate (one event), and its AS names.
"""

from __future__ import annotations

import dataclasses

from ..constants import CONSUME_NONE
from ..errors import NegatedVariableError, NegationError
from ..frontends.ceql.formatter import format_filter, format_formula, format_name
from ..ir import (
    bound_variables,
    expr_nodes,
    filter_leaves,
    formula_nodes,
    positive_variables,
    seq_elements,
    top_sequence,
)
from ..ir import nodes as A
from .messages import Reporter
from .scopes import Scope, strip_as

__all__ = ["Negations"]


class Negations:
    """The checks of the NOTs of ``query`` (reported to ``out``)."""

    def __init__(self, query: A.Query, out: Reporter, scope: Scope) -> None:
        self.query = query
        self.out = out
        self.scope = scope

    def check_negations(self) -> None:
        """Where each NOT stands and what it negates; names of negated variables."""
        where = self.query.where
        top = top_sequence(where)
        nots = [n for n in formula_nodes(where) if isinstance(n, A.Not)]
        if not nots:
            return
        for node in nots:
            if self.check_negated(node):
                self.check_place(node)
        for f in formula_nodes(where):
            parent = self.scope.parents.get(id(f))
            if isinstance(f, A.Seq) and not (isinstance(parent, A.Seq) and parent.left is f):
                elems = seq_elements(f)  # a whole chain: f is not the left part of another
                if any(isinstance(e, A.Not) for e, _ in elems):
                    self.check_chain(elems, f is top)
        self.check_negated_names(nots)

    def check_negated(self, node: A.Not) -> bool:
        """``NOT β``: β is one event (a type, ``S>T``, an OR of those), named at most once.
        False (reported) when it is not."""
        shown = self.out.negation_text(node)
        beta = strip_as(node.formula)
        kinds = [n for n in formula_nodes(beta) if not isinstance(n, A.Or | A.EventType)]
        if not kinds:
            return True
        inner = kinds[0]
        single = ("NOT takes one event: an event type, S>T, or an OR of those, named at most "
                  "once (NOT B, NOT (B OR C) AS n)")
        if isinstance(inner, A.As):
            names = [n.var for n in formula_nodes(node.formula) if isinstance(n, A.As)]
            plain = _drop_as(node.formula)
            message = (f"{shown} names parts of the negated event: {single}, so write "
                       f"NOT {format_formula(A.As(plain, names[0]))}")
        elif isinstance(inner, A.Not):
            message = (f"{shown}: NOT cannot negate a NOT. A NOT is the absence of an event in "
                       "a gap of a ';' sequence (A ; NOT B ; C: no B between A and C); write "
                       f"the event itself ({self.out.formula_text(strip_as(inner.formula))}) or "
                       "one NOT")
        elif isinstance(inner, A.Plus) and inner is beta:
            body = _drop_as(strip_as(inner.formula)) if not any(
                not isinstance(n, A.Or | A.EventType | A.As)
                for n in formula_nodes(inner.formula)) else None
            if body is not None:
                name = node.formula.var if isinstance(node.formula, A.As) else None
                fixed = format_formula(A.Not(body if name is None else A.As(body, name)))
                message = (f"{shown} negates an iteration: NOT is the absence of an event, and "
                           f"{fixed} already forbids every such event in its gap (A ; NOT B ; "
                           f"C: no B between A and C); write {fixed}")
            else:
                message = (f"{shown} negates an iteration, which is not one event: {single}. "
                           f"{_CORE_NOT}")
        elif isinstance(inner, A.Filter) and inner is beta:
            name = node.formula.var if isinstance(node.formula, A.As) else None
            body = inner.formula
            var = name or next((n.var for n in formula_nodes(body) if isinstance(n, A.As)), "n")
            plain = _drop_as(body)
            own = bound_variables(body) | ({name} if name else set())
            written = self.out.text_at(inner.cond.span)
            small = sum(1 for leaf in filter_leaves(inner.cond)
                        for _ in expr_nodes(leaf.pred)) <= 40
            cond = (format_filter(_renamed(inner.cond, own, var)) if small or not written
                    else " ".join(written.split()))
            message = (f"{shown} holds a FILTER: {single}, and the conditions on the events it "
                       "forbids go in a FILTER around the whole sequence that holds it: "
                       f"NOT {format_formula(A.As(plain, var))} … FILTER {cond}")
        else:
            message = f"{shown} negates more than one event: {single}. {_CORE_NOT}"
        self.out.report(NegationError, message, node.span)
        return False

    def check_place(self, node: A.Not) -> None:
        """A NOT stands as an element of a ``;`` chain (the chain itself: check_chain)."""
        parent = self.scope.parents.get(id(node))
        if isinstance(parent, A.Seq | A.Not):  # in a chain, or reported with the outer NOT
            return
        shown = self.out.negation_text(node)
        above: A.Formula | None = parent
        while isinstance(above, A.Filter):
            above = self.scope.parents.get(id(above))
        if above is None:
            message = f"{shown} cannot be the whole WHERE formula: {_NOT_PLACES}"
        elif isinstance(parent, A.Filter):
            name = node.formula.var if isinstance(node.formula, A.As) else "n"
            plain = format_formula(A.As(_drop_as(node.formula), name))
            message = (f"{shown} cannot be filtered on its own: {_NOT_PLACES}. Put the "
                       f"FILTER after the whole sequence: A ; NOT {plain} ; C FILTER "
                       f"{format_name(name)}[…]")
        elif isinstance(parent, A.As):
            plain = format_formula(A.Not(A.As(_drop_as(node.formula), parent.var)))
            message = (f"{self.out.formula_text(parent)}: name the negated event inside the NOT, "
                       f"{plain}; a NOT cannot be named as a whole (it matches no event). "
                       f"{_NOT_PLACES}")
        elif isinstance(parent, A.Plus):
            message = (f"{shown} cannot be iterated: + repeats events that occur, and a NOT "
                       f"is an absence. {_NOT_PLACES}; to repeat a sequence with a NOT, "
                       "iterate the whole sequence: (A ; NOT B ; C)+")
        elif isinstance(parent, A.And):
            message = (f"{shown} cannot be an operand of AND: {_NOT_PLACES}. Write it inside "
                       "one operand's sequence, e.g. (A ; NOT B ; C) AND D")
        else:
            message = (f"{shown} cannot be an alternative of OR: {_NOT_PLACES}. Write it "
                       "inside a sequence, e.g. A ; NOT (B OR C) ; D")
        self.out.report(NegationError, message, node.span)

    def check_chain(self, elems: list[tuple[A.Formula, bool]], top: bool) -> None:
        """The NOT elements of one ``;``/``:`` chain (``top``: the WHERE formula's own)."""
        q = self.query
        last = len(elems) - 1
        for i, (e, contiguous) in enumerate(elems):
            if not isinstance(e, A.Not):
                continue
            shown = self.out.negation_text(e)
            if contiguous or (i < last and elems[i + 1][1]):
                self.out.report(NegationError,
                                f"{shown} cannot stand in a ':' sequence: ':' makes the next "
                                "element follow at once, and a NOT matches no event. Write ';' on "
                                f"both sides of it{self.chain_example(elems, i)}", e.span)
                continue
            if i > 0 and isinstance(elems[i - 1][0], A.Not):
                first = elems[i - 1][0]
                assert isinstance(first, A.Not)
                self.out.report(NegationError,
                                f"Two NOTs in a row ({self.out.negation_text(first)} ; {shown}): "
                                "write one NOT over an OR of the events, "
                                f"{_merged_not(first, e)}, which forbids each of them in the "
                                "gap", e.span)
                continue
            if i not in (0, last):
                continue
            end = "start" if i == 0 else "end"
            if not top:
                self.out.report(NegationError,
                                f"{shown} cannot {end} this sequence: a NOT may {end} only the "
                                f"whole WHERE formula's sequence (with WITHIN); inside it, a NOT "
                                "stands between two elements (A ; NOT B ; C)", e.span)
                continue
            if q.within is None:
                if i == 0:
                    what = ("before the match's first event, as far back as the WITHIN "
                            "window reaches")
                else:
                    what = ("after the match's last event, as far as the WITHIN window "
                            "reaches (the match is reported once its window has passed)")
                self.out.report(NegationError,
                                f"{shown} at the {end} of the pattern needs WITHIN: it forbids "
                                f"{_negated_types(e)} events {what}, and without WITHIN there is "
                                "no window. Add one, e.g. WITHIN 10 SECONDS or WITHIN 100 EVENTS",
                                e.span)
                continue
            if i == last and q.consume != CONSUME_NONE:
                self.out.report(NegationError,
                                f"{shown} at the end of the pattern cannot be used with CONSUME BY "
                                f"{q.consume}: a match that ends with a NOT is known only once its "
                                "WITHIN window has passed, and CONSUME BY decides at each event "
                                "which later matches to drop. Leave CONSUME BY out, or end the "
                                "pattern with an event", e.span)

    def chain_example(self, elems: list[tuple[A.Formula, bool]], at: int) -> str:
        """The chain ``elems`` written with ``;`` on both sides of element ``at`` (as ``:
        A ; NOT B ; C``), or '' when too long."""
        parts: list[str] = []
        for i, (e, contiguous) in enumerate(elems):
            if i:
                parts.append(";" if i in (at, at + 1) or not contiguous else ":")
            text = self.out.formula_text(e)
            if isinstance(e, A.Seq | A.And | A.Or | A.Filter):
                text = f"({text})"
            parts.append(text)
        example = " ".join(parts)
        return f": {example}" if len(example) <= 100 else ""

    def check_negated_names(self, nots: list[A.Not]) -> None:
        """A NOT's AS name names nothing else: no event of the match, no other NOT."""
        where = self.query.where
        positive = positive_variables(where)
        owner: dict[str, A.Not] = {}
        for node in nots:
            for n in formula_nodes(node.formula):
                if not isinstance(n, A.As):
                    continue
                if n.var in positive:
                    self.out.report(NegatedVariableError,
                                    f"'{n.var}' names both the events "
                                    f"{self.out.negation_text(node)} "
                                    "forbids and events of the match: a negated variable needs a "
                                    "name of its own. Rename one of them", n.span)
                elif n.var in owner and owner[n.var] is not node:
                    self.out.report(NegatedVariableError,
                                    f"'{n.var}' names two NOTs "
                                    f"({self.out.negation_text(owner[n.var])} and "
                                    f"{self.out.negation_text(node)}): give each NOT its own name",
                                    n.span)
                owner.setdefault(n.var, node)


_NOT_PLACES = ("NOT stands only as an element of a ';' sequence: between two of its elements "
               "(A ; NOT B ; C), or first or last of the WHERE formula's sequence with WITHIN "
               "(NOT B ; A, A ; NOT B)")


_CORE_NOT = ("In CEQL, NOT is the absence of an event: A ; NOT B ; C matches A then C with no B "
             "between them. (CORE's NOT(φ), one event that does not match φ, is another "
             "operator, which CEQL does not have; for an event that fails a condition, negate "
             "the condition: B AS x FILTER x[NOT (price > 10)].)")


def _drop_as(f: A.Formula) -> A.Formula:
    """``f`` (event types, OR, AS) without any AS."""
    leaves = [n for n in formula_nodes(f) if isinstance(n, A.EventType)]
    out: A.Formula = leaves[0]
    for leaf in leaves[1:]:
        out = A.Or(out, leaf)
    return out


def _negated_types(node: A.Not) -> str:
    """The event types a NOT forbids, as words: ``B``, ``B or C``, ``S>B``."""
    names = [format_formula(n) for n in formula_nodes(node.formula)
             if isinstance(n, A.EventType)]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _merged_not(first: A.Not, second: A.Not) -> str:
    """One NOT for two in a row: ``NOT (B OR C)``, named as the first named one."""
    names = [f.formula.var for f in (first, second) if isinstance(f.formula, A.As)]
    both = _drop_as(A.Or(first.formula, second.formula))
    return format_formula(A.Not(A.As(both, names[0]) if names else both))


def _renamed(cond: A.FilterExpr, names: set[str], var: str) -> A.FilterExpr:
    """``cond`` with the atoms on any of ``names`` put on ``var`` (and qualified attributes of
    ``names`` made ``var``'s)."""
    def expr(e: A.Expr) -> A.Expr:
        if isinstance(e, A.Attr) and e.var in names:
            return A.Attr(e.name, var=var)
        if isinstance(e, A.Arith):
            return A.Arith(e.op, expr(e.left), expr(e.right))
        if isinstance(e, A.Neg):
            return A.Neg(expr(e.operand))
        if isinstance(e, A.Agg) and e.var in names:
            return A.Agg(e.func, var, e.attr, distinct=e.distinct)
        return e

    def pred(p: A.Pred) -> A.Pred:
        if isinstance(p, A.PAnd | A.POr):
            return dataclasses.replace(p, left=pred(p.left), right=pred(p.right))
        if isinstance(p, A.PNot):
            return A.PNot(pred(p.operand))
        if isinstance(p, A.Compare):
            return A.Compare(p.op, expr(p.left), expr(p.right))
        if isinstance(p, A.Like | A.InSet):
            return dataclasses.replace(p, expr=expr(p.expr))
        if isinstance(p, A.InRange):
            return A.InRange(expr(p.expr), expr(p.lo), expr(p.hi))
        return p

    def walk(c: A.FilterExpr) -> A.FilterExpr:
        if isinstance(c, A.FilterAnd | A.FilterOr):
            return dataclasses.replace(c, left=walk(c.left), right=walk(c.right))
        if isinstance(c, A.FilterAtom):
            return A.FilterAtom(var if c.var in names else c.var, pred(c.pred))
        return A.FilterMatch(pred(c.pred))

    return walk(cond)
