"""The ``skillnb`` command line (edge layer).

One parser (:mod:`~skillnb.cli.main`), a small function per command, and one output function
(:mod:`~skillnb.cli.output`) that escapes control and bidi characters. Notebooks run headless
through nbclient (:mod:`~skillnb.cli.headless`); saved notebooks are read with
:mod:`skillnb.notebookfile`. Nothing here imports IPython or the Jupyter edge.
"""
