"""The runtime: CORE's Algorithm 1 over the tECS, enumeration, partitions, time keys, and the
:class:`Evaluator` that feeds events through them."""

from .evaluator import Evaluator, no_gc
from .match import Match
from .notices import NameSet, unseen_names_message
from .partitions import canonical_key

__all__ = ["Evaluator", "Match", "NameSet", "canonical_key", "no_gc", "unseen_names_message"]
