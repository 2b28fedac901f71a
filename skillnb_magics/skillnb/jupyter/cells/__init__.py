"""A magic's cell body: parsed, transformed and compiled once, run in the shell (Jupyter edge).

IPython's static input transforms (:mod:`~skillnb.jupyter.cells.transform`), bodies compiled
once per text (:mod:`~skillnb.jupyter.cells.code`), running them and catching their value
(:mod:`~skillnb.jupyter.cells.execute`), and what a ``%%formalize`` cell reads
(:mod:`~skillnb.jupyter.cells.inputs`).
"""
