"""What a cell produced worth keeping: ranked suggestions, pins and novelty (core layer, pure).

Which names a cell changed (:mod:`~skillnb.core.suggest.namespace`), what its source says about
them (:mod:`~skillnb.core.suggest.source`), how new a value is beside the facts kept
(:mod:`~skillnb.core.suggest.novelty`), the ranking (:mod:`~skillnb.core.suggest.rank`), pinned
text (:mod:`~skillnb.core.suggest.pins`) and which suggestions are still on offer
(:mod:`~skillnb.core.suggest.pending`). The notebook side lives in :mod:`skillnb.jupyter.suggest`.
"""
