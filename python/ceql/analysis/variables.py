"""The variables a query reports, in pattern order, without a type name that repeats an alias.

A type name is a variable that binds its own occurrences; ``φ AS x`` binds every event of
``φ``. With ``SELECT *`` a type name ``T`` is left out when an ``AS`` variable binds exactly
the occurrences of ``T`` in the query (no other event, and none of ``T``'s missing), so the two
hold the same events in every match: ``SELL AS s`` reports ``s`` only, ``SELL AS s ; SELL``
reports ``SELL`` and ``s`` (``SELL`` binds more), ``(SELL OR BUY) AS t`` reports ``SELL``,
``BUY`` and ``t``.
"""

from __future__ import annotations

from ..ir import nodes as A
from ..ir.walks import formula_nodes, variable_leaves

__all__ = ["output_variables"]


def output_variables(query: A.Query) -> tuple[str, ...]:
    """The SELECT list, or for ``SELECT *`` the variables in order of first appearance in
    WHERE, minus type names that only repeat an alias (see the module docstring)."""
    if query.select is not None:
        return query.select
    leaves = variable_leaves(query.where)
    aliases = {n.var for n in formula_nodes(query.where) if isinstance(n, A.As)}
    alias_leaves = {leaves[name] for name in aliases}
    return tuple(name for name, ids in leaves.items()
                 if name in aliases or ids not in alias_leaves)
