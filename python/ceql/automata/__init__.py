"""Automata: the complex event automaton of a formula (CEA), the selection strategies'
run-component constructions, and the lazy, bounded, strategy-aware determinization."""

from .cea import CEA, Transition, build_cea
from .dfa import DFA, DFAOwner, Step
from .strategies import (
    AllStrategy,
    LastStrategy,
    MaxStrategy,
    NextStrategy,
    Strategy,
    Successor,
    strategy_for,
)

__all__ = [
    "CEA",
    "DFA",
    "AllStrategy",
    "DFAOwner",
    "LastStrategy",
    "MaxStrategy",
    "NextStrategy",
    "Step",
    "Strategy",
    "Successor",
    "Transition",
    "build_cea",
    "strategy_for",
]
