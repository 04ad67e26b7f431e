"""SPAseq queries over streams of RDF graphs (docs/SPASEQ.md), evaluated on ceql's engine.

>>> import ceql.spaseq
>>> q = ceql.spaseq.compile('''
... PREFIX : <http://example/>
... SELECT ?p WITHIN 10 SECONDS FROM STREAM S <http://example/s>
... WHERE { SEQ (A ; B) DEFINE GPM A ON S { ?c :price ?p } DEFINE GPM B ON S { ?c :sold ?x } }''')
>>> [m.bindings for m in q.run([
...     {"stream": "S", "time": 1, "graph": "<http://example/g> <http://example/price> 5 ."},
...     {"stream": "S", "time": 2, "graph": "<http://example/g> <http://example/sold> 1 ."}])]
[{'p': 5}]
"""

from .evaluator import Evaluator
from .match import Match
from .query import Query, compile

__all__ = ["Evaluator", "Match", "Query", "compile"]
