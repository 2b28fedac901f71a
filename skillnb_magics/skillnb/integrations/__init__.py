"""Optional integrations with agent frameworks (edge layer).

Each sub-package imports its framework lazily and is installed with an extra, e.g.
``pip install skillnb[langgraph]`` for :mod:`skillnb.integrations.langgraph`.
"""
