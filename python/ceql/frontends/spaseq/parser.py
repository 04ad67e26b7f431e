"""SPAseq text → :class:`~ceql.frontends.spaseq.nodes.SpaseqQuery`.

The LALR parser of :mod:`.lalr` gives a lark tree; :class:`_Builder` turns it into the syntax
tree bottom-up without recursion, resolving prefixed names as it goes (an undeclared prefix is
an :class:`~.errors.UnknownPrefixError`); :mod:`.validate` then checks names and scopes and
splits each GPM's FILTERs into local and cross-GPM ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import NoReturn, TypeVar, cast
from urllib.parse import urljoin

from lark import Token, Tree
from lark.exceptions import LarkError

from ...constants import WITHIN_UNIT_MILLIS
from ...errors import CeqlTypeError, caret_snippet
from ...ir.nodes import Span
from ..syntax import syntax_error
from ..trees import fold_tree, meta_span, token_span
from . import nodes as N
from .diagnostics import diagnose
from .errors import UnknownPrefixError
from .lalr import lalr
from .validate import GpmDef, Select, assemble

__all__ = ["RDF_TYPE", "parse"]

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"

_T = TypeVar("_T")

#: Built-in functions: upper-case name → (fewest, most) arguments (``None``: no limit).
_BUILTINS: dict[str, tuple[int, int | None]] = {
    "STR": (1, 1), "LANG": (1, 1), "LANGMATCHES": (2, 2), "DATATYPE": (1, 1),
    "BOUND": (1, 1), "IRI": (1, 1), "URI": (1, 1), "STRLEN": (1, 1), "UCASE": (1, 1),
    "LCASE": (1, 1), "CONTAINS": (2, 2), "STRSTARTS": (2, 2), "STRENDS": (2, 2),
    "STRBEFORE": (2, 2), "STRAFTER": (2, 2), "CONCAT": (0, None), "SUBSTR": (2, 3),
    "REPLACE": (3, 4), "REGEX": (2, 3), "ABS": (1, 1), "ROUND": (1, 1), "CEIL": (1, 1),
    "FLOOR": (1, 1), "IF": (3, 3), "COALESCE": (1, None), "SAMETERM": (2, 2), "ISIRI": (1, 1),
    "ISURI": (1, 1), "ISBLANK": (1, 1), "ISLITERAL": (1, 1), "ISNUMERIC": (1, 1),
    "STRDT": (2, 2), "STRLANG": (2, 2), "ENCODE_FOR_URI": (1, 1), "YEAR": (1, 1),
    "MONTH": (1, 1), "DAY": (1, 1), "HOURS": (1, 1), "MINUTES": (1, 1), "SECONDS": (1, 1),
    "TIMEZONE": (1, 1), "TZ": (1, 1),
}

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "b": "\b", "f": "\f", '"': '"', "'": "'",
            "\\": "\\"}
_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.S)
_SECONDS = {u: Fraction(ms, 1000) for u, ms in WITHIN_UNIT_MILLIS.items()}


def parse(text: str) -> N.SpaseqQuery:
    """Parse and check SPAseq ``text`` (docs/SPASEQ.md).

    Raises :class:`~ceql.errors.CeqlSyntaxError` for text that is not SPAseq and a
    :class:`~ceql.errors.CeqlValidationError` subclass for wrong names and scopes, both with
    line, column and a caret.
    """
    if not isinstance(text, str):
        raise CeqlTypeError(f"A SPAseq query must be a string, not {type(text).__name__}.")
    try:
        tree = lalr().parse(text)
    except LarkError as exc:
        raise diagnose(text, exc) from None
    return _Builder(text).build(tree)


# ---------------------------------------------------------------- spans and helpers

def _is(value: object, cls: type[_T]) -> _T:
    if not isinstance(value, cls):  # pragma: no cover - grammar and builder disagree
        raise AssertionError(f"internal parser error: expected {cls.__name__}, got {value!r}")
    return value


def _resolve(base: str | None, ref: str) -> str:
    """``ref`` resolved against ``base`` (RFC 3986), keeping an empty fragment (``ns#``),
    which :func:`urllib.parse.urljoin` drops."""
    if not base:
        return ref
    path, sep, fragment = ref.partition("#")
    return (urljoin(base, path) if path else base.partition("#")[0]) + sep + fragment


def _unescape(body: str) -> str:
    def one(m: re.Match[str]) -> str:
        code = m.group(1) or m.group(2)
        if code:
            return chr(int(code, 16))
        return _ESCAPES.get(m.group(3), m.group(0))
    return _ESCAPE.sub(one, body)


@dataclass(frozen=True)
class _Name:
    text: str
    span: Span


@dataclass(frozen=True)
class _Args:
    values: tuple[N.Expr, ...]


@dataclass(frozen=True)
class _BNodeList:
    """``[ :p :o ]``: the fresh node and the triples that describe it."""

    node: N.BlankNode
    triples: tuple[N.TriplePattern, ...]


@dataclass(frozen=True)
class _Triples:
    triples: tuple[N.TriplePattern, ...]
    span: Span


@dataclass(frozen=True)
class _Dot:
    pass


@dataclass(frozen=True)
class _PropList:
    pairs: tuple[tuple[N.Var | N.Iri, tuple[object, ...]], ...]


_Object = N.Var | N.Iri | N.Literal | N.BlankNode


# ---------------------------------------------------------------- parse tree → syntax tree

_Handler = Callable[["_Builder", Tree[Token], list[object]], object]
_HANDLERS: dict[str, _Handler] = {}


def _rule(*names: str) -> Callable[[_Handler], _Handler]:
    def register(fn: _Handler) -> _Handler:
        for name in names:
            _HANDLERS[name] = fn
        return fn
    return register


class _Builder:
    """Turns the lark tree into syntax-tree nodes, bottom-up and without recursion. Children
    are built left to right, so the prologue's prefixes are known before any name uses them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.prefixes: dict[str, str] = {}
        self.base: str | None = None
        self.genid = 0
        self.genid_prefix = "genid"
        while f"_:{self.genid_prefix}." in text:
            self.genid_prefix += "x"

    def build(self, tree: Tree[Token]) -> N.SpaseqQuery:
        root = fold_tree(tree, lambda node, args: _HANDLERS[str(node.data)](self, node, args))
        return _is(root, N.SpaseqQuery)

    def error(self, message: str, where: Token | Span) -> NoReturn:
        span = token_span(where) if isinstance(where, Token) else where
        width = span.end - span.start if span.end_line == span.line else 1
        raise syntax_error(self.text, message, span.line, span.column, max(1, width))

    def fresh_bnode(self, span: Span) -> N.BlankNode:
        self.genid += 1
        return N.BlankNode(f"{self.genid_prefix}.{self.genid}", span=span)

    def resolve(self, tok: Token) -> N.Iri:
        text = str(tok)
        span = token_span(tok)
        if tok.type == "IRIREF":
            value = text[1:-1]
            return N.Iri(_resolve(self.base, value), span=span)
        prefix, _, local = text.partition(":")
        if prefix not in self.prefixes:
            width = len(prefix) + 1
            hint = (" (SPAseq, like SPARQL, has no default prefix)" if not prefix else "")
            raise UnknownPrefixError(
                f"Prefix '{prefix}:' is not declared{hint}: add PREFIX {prefix}: <…> before "
                "SELECT", line=span.line, column=span.column,
                snippet=caret_snippet(self.text, span.line, span.column, width))
        local = re.sub(r"\\(.)", r"\1", local)
        return N.Iri(self.prefixes[prefix] + local, span=span)


# -- prologue and clauses

@_rule("prologue")
def _b_prologue(b: _Builder, t: Tree[Token], a: list[object]) -> None:
    return None


@_rule("prefix_decl")
def _b_prefix(b: _Builder, t: Tree[Token], a: list[object]) -> None:
    name = str(_is(a[1], Token))[:-1]
    iri = str(_is(a[2], Token))[1:-1]
    b.prefixes[name] = _resolve(b.base, iri)
    return None


@_rule("base_decl")
def _b_base(b: _Builder, t: Tree[Token], a: list[object]) -> None:
    iri = str(_is(a[1], Token))[1:-1]
    b.base = _resolve(b.base, iri)
    return None


@_rule("select_clause")
def _b_select(b: _Builder, t: Tree[Token], a: list[object]) -> Select:
    toks = [x for x in a[1:] if isinstance(x, Token)]
    if toks and toks[0].type == "STAR":
        return Select(None, meta_span(t.meta))
    return Select(tuple((str(x)[1:], token_span(x)) for x in toks), meta_span(t.meta))


@_rule("window_part")
def _b_window_part(b: _Builder, t: Tree[Token], a: list[object]) -> Fraction:
    amount = Fraction(_is(a[0], N.Literal).lexical)
    return amount * _SECONDS[str(_is(a[1], Token)).upper()]


@_rule("window")
def _b_window(b: _Builder, t: Tree[Token], a: list[object]) -> N.Window:
    total = sum((x for x in a if isinstance(x, Fraction)), Fraction(0))
    return N.Window(total, span=meta_span(t.meta))


@_rule("from_stream")
def _b_from_stream(b: _Builder, t: Tree[Token], a: list[object]) -> N.Stream:
    name = _is(a[2], Token)
    return N.Stream(str(name), _is(a[3], N.Iri).value, span=token_span(name))


@_rule("where_clause")
def _b_where(b: _Builder, t: Tree[Token], a: list[object]) -> tuple[N.Sequence, list[GpmDef]]:
    return _is(a[2], N.Sequence), [x for x in a if isinstance(x, GpmDef)]


@_rule("query")
def _b_query(b: _Builder, t: Tree[Token], a: list[object]) -> N.SpaseqQuery:
    select = next(x for x in a if isinstance(x, Select))
    window = next((x for x in a if isinstance(x, N.Window)), None)
    streams = [x for x in a if isinstance(x, N.Stream)]
    sequence, defs = cast(tuple[N.Sequence, list[GpmDef]], a[-1])
    return assemble(b.text, select=select, window=window, streams=streams, sequence=sequence,
                    defs=defs, prefixes=tuple(b.prefixes.items()), base=b.base,
                    span=meta_span(t.meta))


# -- SEQ

@_rule("gpm_ref")
def _b_gpm_ref(b: _Builder, t: Tree[Token], a: list[object]) -> N.GpmRef:
    tok = _is(a[0], Token)
    return N.GpmRef(str(tok), span=token_span(tok))


@_rule("seq_paren")
def _b_seq_paren(b: _Builder, t: Tree[Token], a: list[object]) -> object:
    return a[1]


@_rule("conj")
def _b_conj(b: _Builder, t: Tree[Token], a: list[object]) -> N.Conj:
    return N.Conj(tuple(cast(N.SeqGroup, x) for x in a if not isinstance(x, Token)),
                  span=meta_span(t.meta))


@_rule("disj")
def _b_disj(b: _Builder, t: Tree[Token], a: list[object]) -> N.Disj:
    return N.Disj(tuple(cast(N.SeqGroup, x) for x in a if not isinstance(x, Token)),
                  span=meta_span(t.meta))


@_rule("element")
def _b_element(b: _Builder, t: Tree[Token], a: list[object]) -> N.SeqElement:
    return N.SeqElement(cast(N.SeqGroup, a[0]), len(a) == 2, span=meta_span(t.meta))


@_rule("sel_op")
def _b_sel_op(b: _Builder, t: Tree[Token], a: list[object]) -> str:
    return str(_is(a[0], Token))


@_rule("seq_expr")
def _b_seq_expr(b: _Builder, t: Tree[Token], a: list[object]) -> N.Sequence:
    elements = tuple(x for x in a if isinstance(x, N.SeqElement))
    operators = tuple(x for x in a if isinstance(x, str) and not isinstance(x, Token))
    return N.Sequence(elements, operators, span=meta_span(t.meta))


@_rule("seq_clause")
def _b_seq_clause(b: _Builder, t: Tree[Token], a: list[object]) -> N.Sequence:
    return _is(a[2], N.Sequence)


# -- GPMs and group patterns

@_rule("gpm_def")
def _b_gpm_def(b: _Builder, t: Tree[Token], a: list[object]) -> GpmDef:
    name, stream = _is(a[2], Token), _is(a[4], Token)
    return GpmDef(str(name), token_span(name), str(stream), token_span(stream),
                  _is(a[5], N.GroupPattern), meta_span(t.meta))


@_rule("group_gp")
def _b_group(b: _Builder, t: Tree[Token], a: list[object]) -> N.GroupPattern:
    elements: list[N.GroupElement] = []
    after_triples = False
    for item in a[1:-1]:
        if isinstance(item, _Dot):
            after_triples = False
        elif isinstance(item, _Triples):
            if after_triples:
                b.error("Expected '.' between two triple patterns (or ';' to give the same "
                        "subject another predicate, ',' another object)", item.span)
            elements.extend(item.triples)
            after_triples = True
        else:
            elements.append(cast(N.GroupElement, item))
            after_triples = False
    return N.GroupPattern(tuple(elements), span=meta_span(t.meta))


@_rule("gp_dot")
def _b_dot(b: _Builder, t: Tree[Token], a: list[object]) -> _Dot:
    return _Dot()


@_rule("gp_filter")
def _b_filter(b: _Builder, t: Tree[Token], a: list[object]) -> N.FilterPattern:
    return N.FilterPattern(cast(N.Expr, a[1]), span=meta_span(t.meta))


@_rule("gp_optional")
def _b_optional(b: _Builder, t: Tree[Token], a: list[object]) -> N.OptionalPattern:
    return N.OptionalPattern(_is(a[1], N.GroupPattern), span=meta_span(t.meta))


@_rule("gp_graph")
def _b_graph(b: _Builder, t: Tree[Token], a: list[object]) -> N.GraphPattern:
    return N.GraphPattern(cast(N.Iri | N.Var, a[1]), _is(a[2], N.GroupPattern),
                          span=meta_span(t.meta))


@_rule("gp_union")
def _b_union(b: _Builder, t: Tree[Token], a: list[object]) -> object:
    groups = tuple(x for x in a if isinstance(x, N.GroupPattern))
    return groups[0] if len(groups) == 1 else N.UnionPattern(groups, span=meta_span(t.meta))


def _triples_of(subject: _Object, props: _PropList, span: Span) -> list[N.TriplePattern]:
    out: list[N.TriplePattern] = []
    for verb, objects in props.pairs:
        for obj in objects:
            if isinstance(obj, _BNodeList):
                out.extend(obj.triples)
                obj = obj.node
            out.append(N.TriplePattern(subject, verb, cast(_Object, obj), span=span))
    return out


@_rule("triples_ss")
def _b_triples(b: _Builder, t: Tree[Token], a: list[object]) -> _Triples:
    span = meta_span(t.meta)
    first = a[0]
    out: list[N.TriplePattern] = []
    if isinstance(first, _BNodeList):
        out.extend(first.triples)
        subject: _Object = first.node
    else:
        subject = cast(_Object, first)
    if len(a) == 2:
        out.extend(_triples_of(subject, _is(a[1], _PropList), span))
    return _Triples(tuple(out), span)


@_rule("prop_list")
def _b_prop_list(b: _Builder, t: Tree[Token], a: list[object]) -> _PropList:
    pairs: list[tuple[N.Var | N.Iri, tuple[object, ...]]] = []
    items = [x for x in a if not isinstance(x, Token)]
    for verb, objects in zip(items[::2], items[1::2], strict=True):
        pairs.append((cast(N.Var | N.Iri, verb), cast(tuple[object, ...], objects)))
    return _PropList(tuple(pairs))


@_rule("object_list")
def _b_object_list(b: _Builder, t: Tree[Token], a: list[object]) -> tuple[object, ...]:
    return tuple(x for x in a if not isinstance(x, Token))


@_rule("bnode_plist")
def _b_bnode_plist(b: _Builder, t: Tree[Token], a: list[object]) -> _BNodeList:
    span = meta_span(t.meta)
    node = b.fresh_bnode(span)
    return _BNodeList(node, tuple(_triples_of(node, _is(a[1], _PropList), span)))


@_rule("rdf_type")
def _b_rdf_type(b: _Builder, t: Tree[Token], a: list[object]) -> N.Iri:
    return N.Iri(RDF_TYPE, span=token_span(_is(a[0], Token)))


# -- terms

@_rule("var")
def _b_var(b: _Builder, t: Tree[Token], a: list[object]) -> N.Var:
    tok = _is(a[0], Token)
    return N.Var(str(tok)[1:], span=token_span(tok))


@_rule("iri")
def _b_iri(b: _Builder, t: Tree[Token], a: list[object]) -> N.Iri:
    return b.resolve(_is(a[0], Token))


@_rule("blank_node")
def _b_blank(b: _Builder, t: Tree[Token], a: list[object]) -> N.BlankNode:
    tok = _is(a[0], Token)
    if tok.type == "ANON":
        return b.fresh_bnode(token_span(tok))
    return N.BlankNode(str(tok)[2:], span=token_span(tok))


@_rule("string")
def _b_string(b: _Builder, t: Tree[Token], a: list[object]) -> _Name:
    tok = _is(a[0], Token)
    quote = 3 if tok.type.startswith("STRING_LONG") else 1
    return _Name(_unescape(str(tok)[quote:-quote]), token_span(tok))


@_rule("rdf_literal")
def _b_literal(b: _Builder, t: Tree[Token], a: list[object]) -> N.Literal:
    lexical = _is(a[0], _Name).text
    span = meta_span(t.meta)
    if len(a) == 1:
        return N.Literal(lexical, span=span)
    if isinstance(a[1], Token) and a[1].type == "LANGTAG":
        return N.Literal(lexical, lang=str(a[1])[1:], span=span)
    return N.Literal(lexical, _is(a[2], N.Iri).value, span=span)


_NUMBER_TYPES = {"INTEGER": N.XSD_INTEGER, "DECIMAL": N.XSD_DECIMAL, "DOUBLE": N.XSD_DOUBLE}


@_rule("number")
def _b_number(b: _Builder, t: Tree[Token], a: list[object]) -> N.Literal:
    tok = _is(a[0], Token)
    return N.Literal(str(tok), _NUMBER_TYPES[tok.type], span=token_span(tok))


@_rule("signed_number")
def _b_signed(b: _Builder, t: Tree[Token], a: list[object]) -> N.Literal:
    num = _is(a[-1], N.Literal)
    sign = str(a[0]) if len(a) == 2 else ""
    return N.Literal(sign + num.lexical, num.datatype, span=meta_span(t.meta))


@_rule("boolean")
def _b_boolean(b: _Builder, t: Tree[Token], a: list[object]) -> N.Literal:
    tok = _is(a[0], Token)
    return N.Literal(str(tok).lower(), N.XSD_BOOLEAN, span=token_span(tok))


# -- expressions

@_rule("e_paren")
def _b_paren(b: _Builder, t: Tree[Token], a: list[object]) -> object:
    return a[1]


@_rule("e_binary")
def _b_binary(b: _Builder, t: Tree[Token], a: list[object]) -> N.BinaryExpr:
    return N.BinaryExpr(str(a[1]), cast(N.Expr, a[0]), cast(N.Expr, a[2]),
                        span=meta_span(t.meta))


@_rule("e_unary")
def _b_unary(b: _Builder, t: Tree[Token], a: list[object]) -> N.UnaryExpr:
    return N.UnaryExpr(str(a[0]), cast(N.Expr, a[1]), span=meta_span(t.meta))


@_rule("e_in", "e_not_in")
def _b_in(b: _Builder, t: Tree[Token], a: list[object]) -> N.InExpr:
    return N.InExpr(cast(N.Expr, a[0]), _is(a[-1], _Args).values, t.data == "e_not_in",
                    span=meta_span(t.meta))


@_rule("arg_list")
def _b_args(b: _Builder, t: Tree[Token], a: list[object]) -> _Args:
    return _Args(tuple(cast(N.Expr, x) for x in a if not isinstance(x, Token)))


@_rule("func_call")
def _b_func(b: _Builder, t: Tree[Token], a: list[object]) -> N.Builtin:
    tok = _is(a[0], Token)
    name = str(tok).upper()
    args = _is(a[1], _Args).values
    if name not in _BUILTINS:
        b.error(f"Unknown function {tok}: SPAseq's FILTERs have SPARQL's built-in functions "
                "(REGEX, STR, LANG, DATATYPE, BOUND, STRLEN, CONTAINS, ABS, ROUND, IF, …) and "
                "casts written as IRIs, e.g. xsd:integer(?x)", tok)
    low, high = _BUILTINS[name]
    if len(args) < low or (high is not None and len(args) > high):
        want = (str(low) if low == high else
                f"{low} or more" if high is None else f"{low} to {high}")
        plural = "" if want == "1" else "s"
        b.error(f"{name} takes {want} argument{plural}, not {len(args)}", tok)
    if name == "BOUND" and not isinstance(args[0], N.Var):
        b.error("BOUND takes a variable, e.g. BOUND(?x)", tok)
    return N.Builtin(name, args, span=meta_span(t.meta))


@_rule("iri_call")
def _b_iri_call(b: _Builder, t: Tree[Token], a: list[object]) -> N.IriCall:
    return N.IriCall(_is(a[0], N.Iri), _is(a[1], _Args).values, span=meta_span(t.meta))
