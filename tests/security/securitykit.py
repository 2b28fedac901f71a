"""Shared pieces of the security suite: hostile definitions, a sentinel, a saved notebook."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from skillnb.core.records import Event

BUNDLE_MIME = "application/vnd.skillnb.v1+json"


def shell_workflow(sentinel_gate: str = "subprocess:run") -> dict[str, Any]:
    """A workflow whose gate and action name a shell-running callable by import path.

    ``subprocess.run(facts)`` iterates the facts mapping, so fact keys become the argv.
    """
    return {
        "workflow": {
            "name": "innocent",
            "states": ["draft", "done"],
            "transitions": [
                {
                    "from": "draft",
                    "to": "done",
                    "trigger": "publish",
                    "gates": ["looks_fine"],
                    "action": "subprocess:run",
                }
            ],
            "gates": {"looks_fine": {"python": sentinel_gate}},
        }
    }


def digest(path: Path) -> str:
    """sha256 of a file's bytes (a decoy must keep it)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def bundle_output(events: list[Event], run_id: str) -> dict[str, Any]:
    """A SKILL.nb display output as a notebook saves it, carrying ``events``."""
    dumps = [e.model_dump(mode="json") for e in events]
    payload = {"v": 1, "kind": "formalize", "badge": "📌", "status": "ok", "key": None}
    payload["trigger"] = None
    meta = {"v": 1, "run_id": run_id, "at": "2024-01-01T00:00:00+00:00", "events": dumps}
    meta["mirror"] = {"notebook": None, "cell": None}
    return {
        "output_type": "display_data",
        "data": {BUNDLE_MIME: payload, "text/plain": "📌"},
        "metadata": {BUNDLE_MIME: meta},
    }


def write_notebook(
    path: Path, outputs: list[dict[str, Any]], *, source: str = "", metadata: Any = None
) -> Path:
    """Write a one-cell notebook with ``outputs``."""
    cell = {
        "cell_type": "code",
        "id": "c0",
        "metadata": {},
        "source": source,
        "outputs": outputs,
        "execution_count": 1,
    }
    nb = {"cells": [cell], "metadata": metadata or {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path
