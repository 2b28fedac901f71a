"""The JSON contract with the frontends, as pydantic models (core layer, pure).

Every shape sent to the JupyterLab extension, the notebook mirror and the CLI's ``--json``:
bundles and messages (:mod:`~skillnb.core.contract.shapes`), the run view
(:mod:`~skillnb.core.contract.view`), the mirror (:mod:`~skillnb.core.contract.mirror`) and
listings (:mod:`~skillnb.core.contract.listing`). ``contract.schema.json`` is their schema and
``labextension/src/types.ts`` is generated from it.
"""
