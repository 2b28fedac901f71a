"""The run service: what :class:`skillnb.run.Run` is made of (service layer).

:mod:`~skillnb.service.journal` (state, refresh, commit) at the bottom; :mod:`.steps` (one
durable-step lifecycle), :mod:`.facts`, :mod:`.gates` and :mod:`.approvals`,
:mod:`.batches` and :mod:`.view` receive it. Nothing here imports :mod:`skillnb.run` or
anything from Jupyter.
"""
