"""The restricted check-expression language of ``check:`` gates (core layer, pure).

Parsing against an allow-list (:mod:`~skillnb.core.expr.syntax`), evaluation without ``eval``
(:mod:`~skillnb.core.expr.check`) under a cost bound fixed at load and a work budget at
evaluation (:mod:`~skillnb.core.expr.budget`), and why a check is false, in words
(:mod:`~skillnb.core.expr.reason`).
"""
