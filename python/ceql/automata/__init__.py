"""Automata: the complex event automaton of a formula (CEA) and its lazy, strategy-aware
determinization."""

from .cea import CEA, Transition, build_cea
from .dfa import DFA, Step

__all__ = ["CEA", "DFA", "Step", "Transition", "build_cea"]
