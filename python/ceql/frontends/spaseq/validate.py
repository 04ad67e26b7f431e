"""Names and scopes of a parsed SPAseq query (docs/SPASEQ.md, "Names and scopes"), and the
split of each GPM's FILTERs into local ones (kept in its pattern) and cross-GPM ones.

Checks run in reading order of the query — window, streams, GPM definitions, SEQ, FILTERs,
SELECT — and the first problem is raised, with line, column and caret.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

from ...errors import (
    CeqlValidationError,
    UnknownStreamError,
    UnknownVariableError,
    caret_snippet,
)
from ...ir.nodes import NO_SPAN, Span
from . import nodes as N
from .errors import (
    DuplicateNameError,
    FilterPlacementError,
    UnknownGpmError,
    UnusedGpmError,
    WindowError,
)

__all__ = ["MAX_DEPTH", "GpmDef", "Select", "assemble", "expr_variables", "pattern_variables"]

#: How deeply expressions and group patterns may nest (renderers and walks recurse).
MAX_DEPTH = 200


@dataclass(frozen=True)
class GpmDef:
    """A ``DEFINE GPM`` as parsed, before its FILTERs are split."""

    name: str
    name_span: Span
    stream: str
    stream_span: Span
    pattern: N.GroupPattern
    span: Span


@dataclass(frozen=True)
class Select:
    """The SELECT list as parsed: ``None`` for ``*``, else (name, span) pairs."""

    names: tuple[tuple[str, Span], ...] | None
    span: Span


def _fail(cls: type[CeqlValidationError], text: str, message: str, span: Span) -> NoReturn:
    width = span.end - span.start if span.end_line == span.line else 1
    raise cls(message, line=span.line, column=span.column,
              snippet=caret_snippet(text, span.line, span.column, max(1, width)))


def _names(names: list[str] | tuple[str, ...]) -> str:
    return ", ".join(names) if names else "none"


# ---------------------------------------------------------------- walks

def pattern_variables(group: N.GroupPattern) -> tuple[str, ...]:
    """The variables a group's triple patterns bind (GRAPH ?g included, FILTERs not), in
    order of first appearance."""
    seen: dict[str, None] = {}
    todo: list[N.GroupElement] = [group]
    while todo:
        el = todo.pop()
        if isinstance(el, N.TriplePattern):
            for term in (el.subject, el.predicate, el.object):
                if isinstance(term, N.Var):
                    seen.setdefault(term.name)
        elif isinstance(el, N.GroupPattern):
            todo.extend(reversed(el.elements))
        elif isinstance(el, N.OptionalPattern):
            todo.append(el.group)
        elif isinstance(el, N.UnionPattern):
            todo.extend(reversed(el.groups))
        elif isinstance(el, N.GraphPattern):
            todo.append(el.group)
            if isinstance(el.name, N.Var):
                seen.setdefault(el.name.name)
    return tuple(seen)


def _expr_vars(expr: N.Expr) -> list[N.Var]:
    out: list[N.Var] = []
    todo: list[N.Expr] = [expr]
    while todo:
        e = todo.pop()
        if isinstance(e, N.Var):
            out.append(e)
        elif isinstance(e, N.BinaryExpr):
            todo.extend((e.right, e.left))
        elif isinstance(e, N.UnaryExpr):
            todo.append(e.operand)
        elif isinstance(e, N.InExpr):
            todo.extend(reversed((e.operand, *e.values)))
        elif isinstance(e, N.Builtin | N.IriCall):
            todo.extend(reversed(e.args))
    return out


def expr_variables(expr: N.Expr) -> tuple[str, ...]:
    """The variables an expression reads, in order of first appearance."""
    return tuple(dict.fromkeys(v.name for v in _expr_vars(expr)))


def _children(node: object) -> tuple[object, ...]:
    if isinstance(node, N.BinaryExpr):
        return (node.left, node.right)
    if isinstance(node, N.UnaryExpr):
        return (node.operand,)
    if isinstance(node, N.InExpr):
        return (node.operand, *node.values)
    if isinstance(node, N.Builtin | N.IriCall):
        return node.args
    if isinstance(node, N.GroupPattern):
        return node.elements
    if isinstance(node, N.OptionalPattern | N.GraphPattern):
        return (node.group,)
    if isinstance(node, N.UnionPattern):
        return node.groups
    if isinstance(node, N.FilterPattern):
        return (node.expr,)
    return ()


def _check_depth(text: str, d: GpmDef) -> None:
    """Refuse a GPM whose patterns or expressions nest deeper than :data:`MAX_DEPTH`."""
    todo: list[tuple[object, int]] = [(d.pattern, 1)]
    while todo:
        node, depth = todo.pop()
        if depth > MAX_DEPTH:
            span = getattr(node, "span", d.name_span)
            _fail(CeqlValidationError, text, f"GPM {d.name} nests patterns or expressions more "
                  f"than {MAX_DEPTH} levels deep: split the condition into several FILTERs "
                  "(they all must hold) or flatten the groups", span)
        todo.extend((child, depth + 1) for child in _children(node))


def _conjuncts(expr: N.Expr) -> list[N.Expr]:
    out: list[N.Expr] = []
    todo = [expr]
    while todo:
        e = todo.pop()
        if isinstance(e, N.BinaryExpr) and e.op == "&&":
            todo.extend((e.right, e.left))
        else:
            out.append(e)
    return out


def _nested_filters(group: N.GroupPattern) -> list[tuple[N.FilterPattern, str]]:
    """FILTERs below the top level of a GPM, with the construct that holds them."""
    out: list[tuple[N.FilterPattern, str]] = []
    todo: list[tuple[N.GroupElement, str]] = [(el, "") for el in reversed(group.elements)]
    while todo:
        el, where = todo.pop()
        if isinstance(el, N.FilterPattern):
            if where:
                out.append((el, where))
        elif isinstance(el, N.GroupPattern):
            todo.extend((x, where or "a nested group") for x in reversed(el.elements))
        elif isinstance(el, N.OptionalPattern):
            todo.extend((x, "OPTIONAL") for x in reversed(el.group.elements))
        elif isinstance(el, N.UnionPattern):
            todo.extend((x, "UNION") for g in reversed(el.groups) for x in reversed(g.elements))
        elif isinstance(el, N.GraphPattern):
            todo.extend((x, "GRAPH") for x in reversed(el.group.elements))
    return out


def _element_index(sequence: N.Sequence) -> dict[str, int]:
    return {name: i for i, el in enumerate(sequence.elements) for name in N.gpm_names(el.group)}


def _seq_refs(sequence: N.Sequence) -> list[N.GpmRef]:
    out: list[N.GpmRef] = []
    for el in sequence.elements:
        todo: list[N.SeqGroup] = [el.group]
        while todo:
            g = todo.pop()
            if isinstance(g, N.GpmRef):
                out.append(g)
            else:
                todo.extend(reversed(g.operands))
    return out


# ---------------------------------------------------------------- the query

def assemble(text: str, *, select: Select, window: N.Window | None, streams: list[N.Stream],
             sequence: N.Sequence, defs: list[GpmDef], prefixes: tuple[tuple[str, str], ...],
             base: str | None, span: Span) -> N.SpaseqQuery:
    """Check a parsed query's names and scopes and build its :class:`~.nodes.SpaseqQuery`."""
    if window is None:
        _fail(WindowError, text, "A SPAseq query needs a window: write WITHIN and a duration "
              "before FROM STREAM, e.g. WITHIN 60 MINUTES", streams[0].span if streams
              else select.span)
    if window.seconds <= 0:
        _fail(WindowError, text, "The window must be longer than 0, e.g. WITHIN 60 MINUTES",
              window.span)
    _check_streams(text, streams)
    stream_names = [s.name for s in streams]
    seen: dict[str, GpmDef] = {}
    for d in defs:
        if d.name in seen:
            line = seen[d.name].name_span.line
            _fail(DuplicateNameError, text, f"GPM {d.name} is defined twice (first on line "
                  f"{line}): give each DEFINE GPM its own name", d.name_span)
        seen[d.name] = d
        if d.stream not in stream_names:
            _fail(UnknownStreamError, text, f"GPM {d.name} is defined ON {d.stream}, which no "
                  f"FROM STREAM declares: declare it (FROM STREAM {d.stream} <iri>) or use "
                  f"one of {_names(stream_names)}", d.stream_span)
    _check_sequence(text, sequence, defs)
    order = _element_index(sequence)
    bound = {d.name: pattern_variables(d.pattern) for d in defs}
    gpms = tuple(_split_filters(text, d, bound, order) for d in defs)
    names = select.names
    if names is not None:
        every = {v for vs in bound.values() for v in vs}
        for name, where in names:
            if name not in every:
                _fail(UnknownVariableError, text, f"SELECT ?{name}: no GPM binds ?{name} in a "
                      f"triple pattern; bind it in a GPM or remove it from SELECT", where)
    return N.SpaseqQuery(
        select=None if names is None else tuple(n for n, _ in names),
        window=window, streams=tuple(streams), sequence=sequence, gpms=gpms,
        prefixes=prefixes, base=base, span=span,
        select_spans=() if names is None else tuple(s for _, s in names))


def _check_streams(text: str, streams: list[N.Stream]) -> None:
    by_name: dict[str, N.Stream] = {}
    by_iri: dict[str, N.Stream] = {}
    for s in streams:
        if s.name in by_name:
            _fail(DuplicateNameError, text, f"Stream {s.name} is declared twice: give each FROM "
                  "STREAM its own name", s.span)
        if s.iri in by_iri:
            first = by_iri[s.iri].name
            _fail(DuplicateNameError, text, f"Stream <{s.iri}> is declared twice (as {first} "
                  f"and {s.name}): declare each stream once and use its name in every GPM",
                  s.span)
        by_name[s.name] = by_iri[s.iri] = s


def _check_sequence(text: str, sequence: N.Sequence, defs: list[GpmDef]) -> None:
    defined = [d.name for d in defs]
    used: dict[str, N.GpmRef] = {}
    for ref in _seq_refs(sequence):
        if ref.name not in defined:
            _fail(UnknownGpmError, text, f"SEQ uses GPM {ref.name}, which is not defined: add "
                  f"DEFINE GPM {ref.name} ON <stream> {{ … }} (defined: {_names(defined)})",
                  ref.span)
        if ref.name in used:
            _fail(DuplicateNameError, text, f"GPM {ref.name} appears twice in SEQ: each GPM "
                  "stands once; define another GPM, with its own name, for the second "
                  "occurrence", ref.span)
        used[ref.name] = ref
    for d in defs:
        if d.name not in used:
            _fail(UnusedGpmError, text, f"GPM {d.name} is defined but SEQ does not use it: add "
                  "it to SEQ or remove its DEFINE", d.name_span)


def _split_filters(text: str, d: GpmDef, bound: dict[str, tuple[str, ...]],
                   order: dict[str, int]) -> N.Gpm:
    """GPM ``d`` with its top-level FILTERs split into local conjuncts (kept in the pattern)
    and cross-GPM ones; nested FILTERs must be local."""
    _check_depth(text, d)
    own = set(bound[d.name])
    binders: dict[str, list[str]] = {}
    for gpm, vs in bound.items():
        for v in vs:
            binders.setdefault(v, []).append(gpm)

    def check_bound(var: N.Var) -> None:
        if var.name not in binders:
            _fail(UnknownVariableError, text, f"FILTER in GPM {d.name} uses ?{var.name}, which "
                  f"no GPM binds in a triple pattern, so the condition could never hold: bind "
                  f"?{var.name} in a GPM or correct the name", var.span)

    for f, where in _nested_filters(d.pattern):
        for var in _expr_vars(f.expr):
            check_bound(var)
            if var.name not in own:
                _fail(FilterPlacementError, text, f"This FILTER inside {where} uses "
                      f"?{var.name}, bound only by GPM {binders[var.name][0]}: write "
                      f"conditions on other GPMs' variables at the top level of GPM {d.name}",
                      var.span)
    elements: list[N.GroupElement] = []
    cross: list[N.CrossFilter] = []
    for el in d.pattern.elements:
        if not isinstance(el, N.FilterPattern):
            elements.append(el)
            continue
        local: list[N.Expr] = []
        for conj in _conjuncts(el.expr):
            refs = _expr_vars(conj)
            for var in refs:
                check_bound(var)
            foreign = [v for v in refs if v.name not in own]
            if not foreign:
                local.append(conj)
                continue
            for var in foreign:
                if all(order[g] > order[d.name] for g in binders[var.name]):
                    later = binders[var.name][0]
                    _fail(FilterPlacementError, text, f"The FILTER in GPM {d.name} uses "
                          f"?{var.name}, bound only by GPM {later}, which comes later in SEQ: "
                          f"move the condition into GPM {later} (a condition is checked when "
                          f"its GPM's event is chosen)", var.span)
            cross.append(N.CrossFilter(
                d.name, conj, expr_variables(conj),
                tuple(dict.fromkeys(v.name for v in foreign)),
                span=getattr(conj, "span", NO_SPAN)))
        if len(local) == len(_conjuncts(el.expr)):
            elements.append(el)
        elif local:
            expr = local[0]
            for more in local[1:]:
                expr = N.BinaryExpr("&&", expr, more, span=el.span)
            elements.append(N.FilterPattern(expr, span=el.span))
    pattern = N.GroupPattern(tuple(elements), span=d.pattern.span)
    return N.Gpm(d.name, d.stream, pattern, bound[d.name], tuple(cross), span=d.span,
                 name_span=d.name_span)
