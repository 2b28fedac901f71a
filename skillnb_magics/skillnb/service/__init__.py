"""The run service: what :class:`skillnb.run.Run` is made of (service layer).

:mod:`~skillnb.service.journal` (state, refresh, commit, identity) at the bottom, with
:mod:`.owner` (process identity and liveness) and :mod:`.skillfeed` (the skill memory a run
feeds); :mod:`.claims`, :mod:`.facts`, :mod:`.markers`, :mod:`.steps` (one claimed durable-step
lifecycle), :mod:`.approvals`, :mod:`.gates`, :mod:`.batches` and :mod:`.view` receive the
journal. Nothing here imports :mod:`skillnb.run` or anything from Jupyter; the import-linter
contracts in ``pyproject.toml`` check the order.
"""
