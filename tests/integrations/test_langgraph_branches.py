"""SkillnbSaver under what LangGraph's own graph tests do: forks, replays, old versions, errors.

Each case failed before its fix: a fork reused the version numbers of the branch it left (the
old branch then read the fork's values), string versions could not be continued, named
tuples came back as plain tuples, a failed task's error could not be stored, and opening a run
drew from ``uuid.uuid4`` (shifting ids in code that mocks it).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, NamedTuple
from unittest import mock

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.graph import START, StateGraph

from lgkit import Log, log_graph, open_folder
from skillnb.integrations.langgraph import SkillnbSaver
from skillnb.integrations.langgraph.serde import SkillnbSerializer


def _snapshot(graph: Any, config: Any) -> list[tuple[str, Any]]:
    return [
        (s.config["configurable"]["checkpoint_id"], s.values)
        for s in graph.get_state_history(config)
    ]


def test_a_fork_leaves_every_earlier_checkpoint_as_it_was(tmp_path: Path) -> None:
    config: Any = {"configurable": {"thread_id": "t"}}
    run = open_folder(tmp_path / "run")
    with SkillnbSaver(run) as saver:
        graph = log_graph(saver)
        for _ in range(3):
            graph.invoke({"items": []}, config)
        before = _snapshot(graph, config)
        old = list(graph.get_state_history(config))[3].config  # after the first run
        forked = graph.update_state(old, {"items": ["fork"]})
        graph.invoke(None, forked)
        graph.invoke({"items": []}, forked)
        after = _snapshot(graph, config)
        assert [s for s in after if s[0] in dict(before)] == before
        assert "fork" in graph.get_state(config).values["items"]
        assert all("fork" not in values["items"] for _, values in before)
    run.store.close()
    reopened = open_folder(tmp_path / "run")
    with SkillnbSaver(reopened) as saver:
        assert _snapshot(log_graph(saver), config) == after
    reopened.store.close()


def test_versions_are_unique_per_write_and_continue_older_ones(tmp_path: Path) -> None:
    run = open_folder(tmp_path / "run")
    with SkillnbSaver(run) as saver:
        first, second = saver.get_next_version(None, None), saver.get_next_version(None, None)
        assert first != second
        assert first.split(".")[0] == second.split(".")[0]
        assert saver.get_next_version(first, None) > first
        assert saver.get_next_version(7, None).startswith(f"{8:032}.")
        foreign = InMemorySaver().get_next_version(None, None)  # "<int>.<random float>"
        assert saver.get_next_version(foreign, None).startswith(f"{2:032}.")
    run.store.close()


def test_a_thread_written_with_string_versions_continues(tmp_path: Path) -> None:
    config: Any = {"configurable": {"thread_id": "t"}}
    memory = InMemorySaver()
    log_graph(memory).invoke({"items": []}, config)
    run = open_folder(tmp_path / "run")
    with SkillnbSaver(run) as saver:
        for stored in reversed(list(memory.list(config))):
            parent = stored.parent_config or {
                "configurable": {"thread_id": "t", "checkpoint_ns": ""}
            }
            saver.put(
                parent, stored.checkpoint, stored.metadata, stored.checkpoint["channel_versions"]
            )
        graph = log_graph(saver)
        assert graph.invoke({"items": []}, config) == {"items": ["n0", "n1"]}
    run.store.close()


class Point(NamedTuple):
    x: int
    y: tuple[int, ...]


def test_named_tuples_come_back_as_themselves() -> None:
    serde = SkillnbSerializer()
    for value in (_DeltaSnapshot({"a": [1, 2]}), Point(1, (2, 3)), [Point(0, ())]):
        back = serde.loads_typed(serde.dumps_typed(value))
        assert back == value
        first, original = (back[0], value[0]) if isinstance(value, list) else (back, value)
        assert type(first) is type(original)


def _fails(state: Log) -> dict[str, Any]:
    raise RuntimeError("Simulated failure")


def test_a_failed_task_shows_its_error_as_langgraph_does(tmp_path: Path) -> None:
    config: Any = {"configurable": {"thread_id": "t"}}

    def failing(saver: Any) -> Any:
        builder = StateGraph(Log)
        builder.add_node("fails", _fails)
        builder.add_edge(START, "fails")
        return builder.compile(checkpointer=saver)

    shown = []
    run = open_folder(tmp_path / "run")
    with SkillnbSaver(run) as saver:
        for checkpointer in (InMemorySaver(), saver):
            graph = failing(checkpointer)
            with pytest.raises(RuntimeError, match="Simulated failure"):
                graph.invoke({"items": []}, config)
            shown.append(graph.get_state(config).tasks[0].error)
    run.store.close()
    assert shown[1] == shown[0] == "RuntimeError('Simulated failure')"


def test_opening_a_run_and_a_saver_draws_no_uuid4(tmp_path: Path) -> None:
    with mock.patch("uuid.uuid4", side_effect=AssertionError("uuid4 drawn")) as drawn:
        run = open_folder(tmp_path / "run")
        saver = SkillnbSaver(run)
        log_graph(saver).invoke({"items": []}, {"configurable": {"thread_id": "t"}})
    saver.close()
    run.store.close()
    assert drawn.call_count == 0
    assert uuid.uuid4() != uuid.uuid4()


@pytest.mark.parametrize("kind", ["jsonplus", "encrypted"])
def test_a_langgraph_serializer_still_round_trips_alog_graph(tmp_path: Path, kind: str) -> None:
    pytest.importorskip("Crypto")
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    serde: Any = (
        JsonPlusSerializer()
        if kind == "jsonplus"
        else EncryptedSerializer.from_pycryptodome_aes(key=b"1234567890123456")
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    run = open_folder(tmp_path / "run")
    with SkillnbSaver(run, serde=serde) as saver:
        graph = log_graph(saver)
        graph.invoke({"items": []}, config)
        assert graph.invoke({"items": []}, config) == {"items": ["n0", "n1"]}
        assert len(list(graph.get_state_history(config))) == 6  # 3 per invoke
    run.store.close()
