"""The sidecar: a run kept in plain files beside its notebook (store layer).

The journal line format and its scanners, the append descriptor and group commit, the tail
cursor, snapshots, compaction and packing of archived segments, blobs, and the folder layout,
with :class:`~skillnb.store.sidecar.store.SidecarStore` on top. Pure Python over the file
toolkit (:mod:`skillnb.store.durable`); nothing here imports Jupyter or the run service.
"""
