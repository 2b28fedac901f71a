"""Fact values and JSON: the encoders, typed values, and numpy/pandas when loaded (store layer).

:mod:`~skillnb.store.codec.values` turns Python values into JSON and back for facts, through the
encoders of :mod:`~skillnb.store.codec.encoders` (standard values and user ones),
:mod:`~skillnb.store.codec.typed` (values whose JSON would lose their type) and
:mod:`~skillnb.store.codec.arrays` (numpy and pandas, imported only when such a value is seen).
"""
