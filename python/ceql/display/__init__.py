"""Queries and automata shown to people: the plain-text listing and DOT, pictures (Graphviz's
when installed, else ceql's own SVG), and a query's HTML for notebooks.

Modules: :mod:`.automaton` (text and DOT), :mod:`.svg` (ceql's own drawing), :mod:`.graphviz`
(the optional Graphviz path), :mod:`.page` (HTML). Matches are shown by ``runtime.display``.
"""

from .automaton import describe, mandatory_lines, to_dot
from .page import automaton_picture, explanation_html, query_html

__all__ = ["automaton_picture", "describe", "explanation_html", "mandatory_lines", "query_html",
           "to_dot"]
