"""The Jupyter edge of SKILL.nb: magics, the session, display bundles, widgets (edge layer).

This package imports IPython and ipywidgets (each lazily, where it can) and holds no workflow
rule; every decision is made by :class:`skillnb.run.Run`. It is loaded by ``%load_ext skillnb``
(see :mod:`skillnb.jupyter.extension`). A cell's body is handled in :mod:`~skillnb.jupyter.cells`,
what a run shows in :mod:`~skillnb.jupyter.views`, suggestions in
:mod:`~skillnb.jupyter.suggest`; saved ``.ipynb`` files are :mod:`skillnb.notebookfile`'s.
"""
