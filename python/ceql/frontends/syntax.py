"""What the front ends' syntax errors share: the error with its caret, how a token is shown
and how wide it is, the expected terminals in words, and reading a text with an LALR parser
up to the first token it refuses. Each language keeps its own wording (:mod:`.ceql`,
:mod:`.mr`, :mod:`.spaseq` ``diagnostics``)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedToken

from ..errors import CeqlSyntaxError, caret_snippet

__all__ = ["expected_in_words", "or_list", "read_until_refused", "show_token", "syntax_error",
           "token_width"]


def syntax_error(text: str, message: str, line: int, column: int, width: int = 1,
                 expected: tuple[str, ...] = ()) -> CeqlSyntaxError:
    """A :class:`CeqlSyntaxError` at ``line``/``column`` with ``width`` carets."""
    return CeqlSyntaxError(message, line=line, column=column,
                           snippet=caret_snippet(text, line, column, width), expected=expected)


def token_width(token: Token) -> int:
    """How many columns the first line of ``token`` takes."""
    return max(1, len(str(token).split("\n", 1)[0]))


def show_token(tok: Token, as_written: Collection[str] = ()) -> str:
    """A token as a message shows it: its first line (at most 30 characters) in quotes, or
    as written for the token types ``as_written`` (a string literal carries its own quotes)."""
    text = str(tok).split("\n", 1)[0]
    if len(text) > 30:
        text = text[:27] + "..."
    return text if tok.type in as_written else f"'{text}'"


def or_list(items: Sequence[str]) -> str:
    """``a, b or c``."""
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} or {items[-1]}"


def expected_in_words(terms: Iterable[str], words: Mapping[str, str],
                      punct: Mapping[str, str], keyword: Callable[[str], str] = str
                      ) -> list[str]:
    """The terminals a parser would accept, in words: kinds of token (``words``), keywords
    (``keyword`` spells one), symbols in quotes (``punct``) and the end — each group sorted,
    in that order."""
    kinds: set[str] = set()
    keywords: set[str] = set()
    symbols: set[str] = set()
    end = False
    for term in terms:
        if term == "$END":
            end = True
        elif term in words:
            kinds.add(words[term])
        elif term in punct:
            symbols.add(f"'{punct[term]}'")
        else:
            keywords.add(keyword(term))
    return [*sorted(kinds), *sorted(keywords), *sorted(symbols), *(["end of query"] * end)]


def read_until_refused(parser: Lark, text: str) -> tuple[list[Token], Token | None, set[str]]:
    """The tokens ``parser`` (LALR, contextual lexer) accepts from ``text``, the one it refuses
    (None: the lexer found no token, or the text ended), and the terminals it would have
    accepted instead."""
    accepted: list[Token] = []
    bad: Token | None = None
    ip = parser.parse_interactive(text)
    try:
        for tok in ip.lexer_thread.lex(ip.parser_state):  # type: ignore[no-untyped-call]
            try:
                ip.feed_token(tok)
            except UnexpectedToken:
                bad = tok
                break
            accepted.append(tok)
    except UnexpectedToken as exc:  # the contextual lexer: a token, but not one wanted here
        bad = exc.token
    except UnexpectedCharacters:
        pass
    state = parser.parse_interactive("")
    for tok in accepted:
        state.feed_token(tok)
    return accepted, bad, set(state.accepts())  # type: ignore[no-untyped-call]
