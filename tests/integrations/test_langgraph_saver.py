"""SkillnbSaver on real graphs: what it stores, what it gives back, across reopenings.

Each graph also runs with LangGraph's InMemorySaver; every checkpoint of the thread must come
back from the run with the same values, metadata and pending writes.
"""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

import skillnb
from skillnb.integrations.langgraph import SkillnbSaver
from skillnb.integrations.langgraph.index import FULL_EVERY
from skillnb.run import Run

CONFIG: Any = {"configurable": {"thread_id": "t1"}}


class Grow(TypedDict):
    d: Annotated[dict[str, Any], operator.or_]
    log: Annotated[list[Any], operator.add]


def add_key(state: Grow) -> dict[str, Any]:
    n = len(state["d"])
    return {"d": {f"k{n}": n}, "log": [(n, f"step {n}")]}


def grow_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    builder = StateGraph(Grow)
    builder.add_node("add", add_key)
    builder.add_edge(START, "add")
    builder.add_edge("add", END)
    return builder.compile(checkpointer=saver)


def open_(folder: Path) -> Run:
    return skillnb.open_run(state_dir=folder, memory=False)


def journal(folder: Path) -> list[dict[str, Any]]:
    """Every event of the run in ``folder``, archived ones included, as plain data."""
    run = open_(folder)
    try:
        return [{"type": e.type, "data": e.data} for e in run.store.history()]
    finally:
        run.store.close()


def history(saver: BaseCheckpointSaver[Any]) -> list[tuple[Any, ...]]:
    return [
        (t.checkpoint["channel_values"], t.metadata, t.pending_writes, t.checkpoint["id"] != "")
        for t in saver.list(CONFIG)
    ]


def test_every_checkpoint_matches_the_in_memory_saver(tmp_path: Path) -> None:
    run = open_(tmp_path)
    ours, reference = grow_graph(SkillnbSaver(run)), grow_graph(InMemorySaver())
    for _ in range(30):
        ours.invoke({"d": {}, "log": []}, CONFIG)
        reference.invoke({"d": {}, "log": []}, CONFIG)
    mine = history(ours.checkpointer)
    theirs = history(reference.checkpointer)
    assert len(mine) == len(theirs) == 90
    for a, b in zip(mine, theirs, strict=True):
        # LangGraph's own serializer turns tuples into lists; SKILL.nb's keeps them
        assert json.loads(json.dumps(a[0])) == b[0]
        assert {k: v for k, v in a[1].items() if k != "run_id"} == {
            k: v for k, v in b[1].items() if k != "run_id"
        }
        assert json.loads(json.dumps([w[1:] for w in a[2]])) == [list(w[1:]) for w in b[2]]
    # reopened by a new run object and saver, the thread reads the same
    assert mine[0][0]["log"][-1] == (29, "step 29")
    again = grow_graph(SkillnbSaver(open_(tmp_path)))
    assert history(again.checkpointer) == mine
    assert again.get_state(CONFIG).values["log"][-1] == (29, "step 29")


def test_a_step_stores_the_change_not_the_channel(tmp_path: Path) -> None:
    run = open_(tmp_path)
    graph = grow_graph(SkillnbSaver(run))
    for _ in range(FULL_EVERY + 40):
        graph.invoke({"d": {}, "log": []}, CONFIG)
    stored = [
        e["data"]["values"]["d"]
        for e in journal(tmp_path)
        if e["type"] == "langgraph.checkpoint" and "d" in e["data"]["values"]
    ]
    deltas = [s for s in stored if "d" in s]
    wholes = [s for s in stored if "f" in s]
    # whole values: while the dict is tiny (a delta would not be smaller), then every
    # FULL_EVERY deltas
    assert len(wholes) <= 2 + len(stored) // FULL_EVERY, wholes
    assert all(len(s["set"]) <= 1 and not s["del"] for s in deltas)
    assert len(deltas) > 2 * FULL_EVERY
    logs = [
        e["data"]["values"]["log"]
        for e in journal(tmp_path)
        if e["type"] == "langgraph.checkpoint" and "log" in e["data"]["values"]
    ]
    assert all(len(s.get("add", [])) <= 1 for s in logs if "a" in s)
    # the tuples in the list survive as tuples, across a reopening
    state = grow_graph(SkillnbSaver(open_(tmp_path))).get_state(CONFIG)
    assert len(state.values["d"]) == FULL_EVERY + 40
    assert state.values["log"][5] == (5, "step 5")


def test_a_reopened_thread_goes_on_with_deltas(tmp_path: Path) -> None:
    graph = grow_graph(SkillnbSaver(open_(tmp_path)))
    for _ in range(5):
        graph.invoke({"d": {}, "log": []}, CONFIG)
    before = len(journal(tmp_path))
    graph = grow_graph(SkillnbSaver(open_(tmp_path)))
    graph.invoke({"d": {}, "log": []}, CONFIG)
    new = [e for e in journal(tmp_path)[before:] if e["type"] == "langgraph.checkpoint"]
    d_values = [e["data"]["values"]["d"] for e in new if "d" in e["data"]["values"]]
    assert d_values
    assert all("f" not in v for v in d_values), "the first step after reopening is a delta too"
    assert graph.get_state(CONFIG).values["d"] == {f"k{i}": i for i in range(6)}


def test_another_process_writes_are_seen(tmp_path: Path) -> None:
    first = grow_graph(SkillnbSaver(open_(tmp_path)))
    second = grow_graph(SkillnbSaver(open_(tmp_path)))
    first.invoke({"d": {}, "log": []}, CONFIG)
    second.invoke({"d": {}, "log": []}, CONFIG)
    first.invoke({"d": {}, "log": []}, CONFIG)
    assert first.get_state(CONFIG).values["d"] == {"k0": 0, "k1": 1, "k2": 2}
    assert second.get_state(CONFIG).values["d"] == {"k0": 0, "k1": 1, "k2": 2}


@pytest.mark.slow
def test_a_long_thread_survives_compaction(tmp_path: Path) -> None:
    run = open_(tmp_path)
    graph = grow_graph(SkillnbSaver(run))
    for _ in range(450):  # 5 events a step: the run compacts its journal past 2,000 events
        graph.invoke({"d": {}, "log": []}, CONFIG)
    assert (tmp_path / "snapshot.json").exists()
    assert run.journal.refresh().graph_threads["t1"].checkpoints == 450 * 3
    reopened = grow_graph(SkillnbSaver(open_(tmp_path)))
    values = reopened.get_state(CONFIG).values
    assert values["d"] == {f"k{i}": i for i in range(450)}
    assert len(list(reopened.checkpointer.list(CONFIG, limit=5))) == 5
    oldest = list(reopened.checkpointer.list(CONFIG))[-1]
    assert oldest.metadata["step"] == -1
