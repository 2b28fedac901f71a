"""The pure core of SKILL.nb: records, workflow definitions, the machine, gates and summaries.

Nothing here imports IPython, ipywidgets, nbformat or jupyter_server.
"""
