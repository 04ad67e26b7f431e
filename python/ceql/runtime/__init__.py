"""The runtime: CORE's Algorithm 1 over the tECS, enumeration, partitions, time keys, and the
:class:`Evaluator` that feeds events through them."""

from .evaluator import Evaluator
from .match import Match
from .notices import NameSet, unseen_names_message
from .partitions import canonical_key

__all__ = ["Evaluator", "Match", "NameSet", "canonical_key", "unseen_names_message"]
