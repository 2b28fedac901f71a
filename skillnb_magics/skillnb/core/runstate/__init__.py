"""A run's persisted records and their fold into the run's state (core layer, pure).

Facts, events and the snapshot (:mod:`~skillnb.core.runstate.records`), checked events held as
columns (:mod:`~skillnb.core.runstate.eventrecords`) and folded straight from them
(:mod:`~skillnb.core.runstate.columnfold`), the fold itself (:mod:`~skillnb.core.runstate.state`),
the indexes that keep views cheap (:mod:`~skillnb.core.runstate.viewindex`) and claim keys
(:mod:`~skillnb.core.runstate.claims`). Both stores and the service build on these.
"""
