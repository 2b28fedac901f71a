"""Gates: their evaluation, the callables they may name, and what bent (core layer, pure).

Gate specifications and their evaluation against a run's state
(:mod:`~skillnb.core.gates.evaluate`), the registry of named python gates and actions that
untrusted definitions resolve to (:mod:`~skillnb.core.gates.registry`), and the audit of gates
that bent (:mod:`~skillnb.core.gates.bending`). Check expressions are :mod:`skillnb.core.expr`.
"""
