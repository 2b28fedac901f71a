"""Saved notebooks and their runs, without a kernel: the layer the CLI and the server share.

Reading and atomically rewriting ``.ipynb`` files (:mod:`~skillnb.notebookfile.ipynb`), the
metadata mirror (:mod:`~skillnb.notebookfile.mirror`), recovering and rebuilding a run from a saved
notebook (:mod:`~skillnb.notebookfile.recover`, :mod:`~skillnb.notebookfile.rebuild`), Jupyter's
trust, and which run a notebook is (:mod:`~skillnb.notebookfile.identity`: renames, moves,
copies). It sits on the run service and imports nothing from IPython, ipykernel or ipywidgets.
"""
