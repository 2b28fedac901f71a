"""The run as text: the renderer of ``describe()``, the LLM summary, listings (core, pure).

The plain-text view every edge falls back to (:mod:`~skillnb.core.views.viewtext`), the budgeted
summary (:mod:`~skillnb.core.views.summary`), a run's listing row and inbox items
(:mod:`~skillnb.core.views.listing`) and the one set of status marks
(:mod:`~skillnb.core.views.marks`).
"""
