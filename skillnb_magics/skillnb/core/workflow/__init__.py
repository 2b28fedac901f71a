"""Workflow definitions: the state machine a run follows, and its pictures (core layer, pure).

The definition model (:mod:`~skillnb.core.workflow.model`), its validation from plain data with
positioned problems (:mod:`~skillnb.core.workflow.definition`,
:mod:`~skillnb.core.workflow.fieldcheck`) read by a bounded safe YAML loader
(:mod:`~skillnb.core.workflow.yamlsafe`), and the machine drawn as Mermaid/DOT text
(:mod:`~skillnb.core.workflow.graph`) or accessible inline SVG
(:mod:`~skillnb.core.workflow.diagram`).
"""
