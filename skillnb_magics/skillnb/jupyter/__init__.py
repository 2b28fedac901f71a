"""The Jupyter edge of SKILL.nb: magics, display bundles, the metadata mirror and widgets.

Edge layer: this package imports IPython, ipywidgets and nbformat (each lazily, where it can)
and holds no workflow rule; every decision is made by :class:`skillnb.run.Run`. It is loaded
by ``%load_ext skillnb`` (see :mod:`skillnb.jupyter.extension`).
"""
