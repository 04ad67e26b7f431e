"""The runtime: CORE's Algorithm 1 over the tECS, enumeration, partitions, time keys, and the
:class:`Evaluator` that feeds events through them."""

from .evaluator import Evaluator
from .match import Match

__all__ = ["Evaluator", "Match"]
