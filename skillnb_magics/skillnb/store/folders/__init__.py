"""What people do to whole sidecar folders: find, repair, copy, set aside, write back (store layer).

Each module works on a sidecar folder as a unit, beside :mod:`skillnb.store.sidecar` (which reads
and appends inside one): discovering the runs under a folder, whose a folder is, repairing a
damaged one, forking it for a copied notebook, setting it aside and writing a held run back.
"""
