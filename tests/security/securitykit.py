"""Shared pieces of the security suite: hostile definitions, notebooks, re-sealed lines."""

from __future__ import annotations

import hashlib
import json
import zlib
from pathlib import Path
from typing import Any

from skillnb.core.runstate.records import Event

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


def seal(obj: dict[str, Any]) -> bytes:
    """A journal line for ``obj`` with a valid checksum, as a hostile writer would recompute it."""
    content = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()[:-1]
    return content + b',"crc":"%08x"}\n' % zlib.crc32(content + b"}")


def reseal(path: Path, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` in every line of journal-like file ``path``, checksums redone."""
    out = []
    for raw in path.read_bytes().splitlines():
        obj = json.loads(raw)
        obj.pop("crc")
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).replace(old, new)
        out.append(seal(json.loads(text)))
    path.write_bytes(b"".join(out))


def event_obj(seq: int, type_: str, data: dict[str, Any]) -> dict[str, Any]:
    """A journal event object (no checksum yet)."""
    return {"v": 1, "seq": seq, "type": type_, "at": "2024-05-01T12:00:00+00:00", "data": data}


def fact_data(key: str, value: Any = 1, seq: int = 2) -> dict[str, Any]:
    """The data of a ``fact.formalized`` event for ``key``."""
    fact = {
        "v": 1,
        "key": key,
        "value": value,
        "encoding": "json",
        "restorable": True,
        "kind": "data",
        "version": 1,
        "seq": seq,
        "at": "2024-05-01T12:00:00Z",
        "cell_id": None,
        "source_hash": None,
        "note": None,
        "preview": str(value),
    }
    return {"fact": fact}
