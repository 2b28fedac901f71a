"""What a run shows in a notebook: display bundles, widgets and saved forms (Jupyter edge).

Display bundles (:mod:`~skillnb.jupyter.views.display`), what each outcome shows
(:mod:`~skillnb.jupyter.views.outcomes`, :mod:`~skillnb.jupyter.views.blocked`), the banner and
the resume status, the live ipywidgets view and its escaped HTML
(:mod:`~skillnb.jupyter.views.widgets`,
:mod:`~skillnb.jupyter.views.render`), forms that stay readable when saved, the "as of" marker
and batch progress bars.
"""
