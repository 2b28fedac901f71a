"""The pure core of SKILL.nb: records and their fold, workflows, gates, views (core layer).

:mod:`~skillnb.core.runstate` (persisted records and the fold into a run's state),
:mod:`~skillnb.core.workflow` (definitions and their pictures), :mod:`~skillnb.core.gates`
and :mod:`~skillnb.core.expr` (gate evaluation, check expressions), :mod:`~skillnb.core.contract`
(the JSON shapes of the frontends), :mod:`~skillnb.core.views` (text views, the LLM summary) and
:mod:`~skillnb.core.suggest`, over the validators of :mod:`~skillnb.core.limits`. Nothing here
imports IPython, ipywidgets, nbformat or jupyter_server, nor anything above the core.
"""
