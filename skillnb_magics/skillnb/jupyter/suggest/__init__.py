"""Suggestions in the notebook: under each cell, one click or magic away (Jupyter edge).

What a cell produced worth keeping, shown after it runs (:mod:`~skillnb.jupyter.suggest.cells`),
its buttons (:mod:`~skillnb.jupyter.suggest.buttons`) and the ``%formalize NAME`` / ``%recall``
magics (:mod:`~skillnb.jupyter.suggest.magics`). The ranking itself is :mod:`skillnb.core.suggest`.
"""
