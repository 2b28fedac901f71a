"""A LangGraph thread read from a journal someone else wrote: data only, bounded, clear errors.

Each attack appends a forged ``langgraph.checkpoint`` event to a real run (as a cloned or
shared sidecar could hold it, with valid checksums), then reads the thread back through
``get_state``. Before the fixes a stored ``msgpack`` value made a ``JsonPlusSerializer`` call
``os.system``, a stored ``pickle`` value was unpickled with ``pickle_fallback=True``, a delta
naming its own version looped forever, malformed forms raised bare ``KeyError``/``TypeError``,
and two processes on one thread silently lost one's step.
"""

from __future__ import annotations

import base64
import os
import pickle
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import ormsgpack
import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, StateGraph

from lgkit import Log, log_graph, open_folder
from skillnb.core.runstate.records import EventDraft
from skillnb.errors import ConflictError, StoreCorrupted
from skillnb.integrations.langgraph import SkillnbSaver
from skillnb.run import Run

CONFIG: Any = {"configurable": {"thread_id": "t"}}


def _last_checkpoint(run: Run) -> dict[str, Any]:
    events = [e for e in run.store.history() if e.type == "langgraph.checkpoint"]
    return dict(events[-1].data)


def _forge(run: Run, data: dict[str, Any]) -> None:
    """Append ``data`` as a newer checkpoint of the thread (as an edited sidecar holds it)."""
    data = {**data, "id": "1ffffffff-forged", "parent": None}
    data.pop("head", None)
    draft = EventDraft(type="langgraph.checkpoint", at=datetime.now(UTC), data=data)
    run.journal.commit(lambda _state: [draft], sync=True)


def _fresh_items(data: dict[str, Any], stored: Any) -> dict[str, Any]:
    """``data`` with ``stored`` as the ``items`` channel at a new version (stored versions stay)."""
    version = "0" * 31 + "9.forged"
    checkpoint = {**data["checkpoint"]}
    checkpoint["channel_versions"] = {**checkpoint["channel_versions"], "items": version}
    values = {**data["values"], "items": stored(version) if callable(stored) else stored}
    versions = {**data["versions"], "items": version}
    return {**data, "checkpoint": checkpoint, "values": values, "versions": versions}


def _foreign(type_: str, payload: bytes) -> dict[str, Any]:
    return {"$t": "serde", "type": type_, "b64": base64.b64encode(payload).decode("ascii")}


def _thread_with(folder: Path, serde: Any, forged: dict[str, Any]) -> Run:
    run = open_folder(folder)
    with SkillnbSaver(run, serde=serde) as saver:
        log_graph(saver).invoke({"items": []}, CONFIG)
    _forge(run, {**_last_checkpoint(run), **forged})
    return run


class _Shell:
    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return os.system, (self.command,)


def test_a_stored_msgpack_constructor_is_never_called(tmp_path: Path) -> None:
    sentinel = tmp_path / "pwned"
    ext = ormsgpack.Ext(1, ormsgpack.packb(["os", "system", [f"touch {sentinel}"]]))
    evil = _foreign("msgpack", ormsgpack.packb({"v": 4, "id": "x", "channel_versions": ext}))
    run = _thread_with(tmp_path / "run", JsonPlusSerializer(), {"checkpoint": evil})
    saver = SkillnbSaver(run, serde=JsonPlusSerializer())
    with saver, pytest.raises(StoreCorrupted, match="1ffffffff-forged"):
        log_graph(saver).get_state(CONFIG)
    assert not sentinel.exists()
    run.store.close()


def test_a_stored_pickle_is_never_unpickled(tmp_path: Path) -> None:
    sentinel = tmp_path / "pwned"
    evil = _foreign("pickle", pickle.dumps(_Shell(f"touch {sentinel}")))
    serde = JsonPlusSerializer(pickle_fallback=True)
    run = _thread_with(tmp_path / "run", serde, {"metadata": evil})
    saver = SkillnbSaver(run, serde=serde)
    with saver, pytest.raises(StoreCorrupted, match=r"1ffffffff-forged.*pickle"):
        log_graph(saver).get_state(CONFIG)
    assert not sentinel.exists()
    run.store.close()


def test_the_default_serializer_refuses_a_foreign_leaf_too(tmp_path: Path) -> None:
    sentinel = tmp_path / "pwned"
    evil = _foreign("pickle", pickle.dumps(_Shell(f"touch {sentinel}")))
    run = _thread_with(tmp_path / "run", None, {"metadata": evil})
    with SkillnbSaver(run) as saver, pytest.raises(StoreCorrupted, match="1ffffffff-forged"):
        log_graph(saver).get_state(CONFIG)
    assert not sentinel.exists()
    run.store.close()


@pytest.mark.timeout(60)
def test_a_delta_naming_its_own_version_is_refused(tmp_path: Path) -> None:
    run = open_folder(tmp_path / "run")
    with SkillnbSaver(run) as saver:
        log_graph(saver).invoke({"items": []}, CONFIG)
    data = _fresh_items(_last_checkpoint(run), lambda version: {"a": version, "add": ["x"]})
    _forge(run, data)
    with SkillnbSaver(run) as saver, pytest.raises(StoreCorrupted, match="loop"):
        log_graph(saver).get_state(CONFIG)
    run.store.close()


@pytest.mark.parametrize(
    "forged",
    [
        {"checkpoint": "not a checkpoint"},
        {"checkpoint": {"channel_versions": ["items"]}},
        {"metadata": ["not", "a", "mapping"]},
        {"items": {"d": "missing-base", "set": {}, "del": []}},
        {"items": "whole"},
        {"values": ["items"]},
        {"versions": {"items": {"unhashable": 1}}},
    ],
    ids=[
        "checkpoint-text",
        "versions-list",
        "metadata-list",
        "missing-base",
        "bare-value",
        "values-list",
        "version-dict",
    ],
)
def test_a_malformed_checkpoint_is_named_in_a_clear_error(
    tmp_path: Path, forged: dict[str, Any]
) -> None:
    run = open_folder(tmp_path / "run")
    with SkillnbSaver(run) as saver:
        log_graph(saver).invoke({"items": []}, CONFIG)
    data = _last_checkpoint(run)
    _forge(run, _fresh_items(data, forged["items"]) if "items" in forged else {**data, **forged})
    with SkillnbSaver(run) as saver:
        graph = log_graph(saver)
        with pytest.raises(StoreCorrupted, match="1ffffffff-forged"):
            graph.get_state(CONFIG)
        with pytest.raises(StoreCorrupted, match="1ffffffff-forged"):
            graph.invoke({"items": []}, CONFIG)
    run.store.close()


_OTHER_PROCESS = """
import sys
import skillnb
from skillnb.integrations.langgraph import SkillnbSaver
sys.path[:0] = [sys.argv[2], sys.argv[3]]
from lgkit import log_graph
from test_langgraph_reads import CONFIG
run = skillnb.open_run(state_dir=sys.argv[1], memory=False)
with SkillnbSaver(run) as saver:
    log_graph(saver).invoke({"items": ["other"]}, CONFIG)
run.store.close()
"""


_HERE = [str(Path(__file__).parent), str(Path(__file__).parents[1])]


def test_two_processes_on_one_thread_get_a_conflict_not_a_lost_update(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    run = open_folder(folder)

    def meanwhile(state: Log) -> dict[str, Any]:
        # This step read the thread; another process now runs a whole step on it.
        subprocess.run(
            [sys.executable, "-c", _OTHER_PROCESS, str(folder), *_HERE],
            check=True,
            env={**os.environ},
        )
        return {"items": ["mine"]}

    builder = StateGraph(Log)
    builder.add_node("meanwhile", meanwhile)
    builder.add_edge(START, "meanwhile")
    with SkillnbSaver(run) as saver:
        log_graph(saver).invoke({"items": []}, CONFIG)
        graph = builder.compile(checkpointer=saver)
        with pytest.raises(ConflictError, match="changed underneath") as caught:
            graph.invoke({"items": []}, CONFIG)
        assert caught.value.thread == "t"  # type: ignore[attr-defined]
        # The other process's step is the thread's head, and a retry builds on it.
        assert graph.get_state(CONFIG).values["items"] == ["n0", "other", "n2"]
        assert log_graph(saver).invoke({"items": []}, CONFIG)["items"] == [
            "n0",
            "other",
            "n2",
            "n3",
        ]
    run.store.close()
