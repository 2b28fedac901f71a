"""LangGraph values through SKILL.nb's codec: faithful round trips, no pickle, clear refusals."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Interrupt, Send

import skillnb
from skillnb.integrations.langgraph import SkillnbSaver, SkillnbSerializer
from skillnb.integrations.langgraph.serde import TYPE_NAME

VALUES: list[Any] = [
    None,
    True,
    3,
    2.5,
    "text",
    b"\x00\xffbytes",
    (1, "two", (3,)),
    {1, 2, 3},
    frozenset({"a"}),
    {"$t": "a key that looks like a tag", "n": 1},
    {1: "int key", (2, 3): "tuple key"},
    datetime(2024, 5, 1, 12, 0, tzinfo=UTC),
    Path("/tmp/x"),
    float("nan"),
    Send("node", {"arg": [1, 2]}),
    Interrupt(value={"question": "ok?"}, id="abc"),
    (Interrupt(value="why", id="i1"),),
    HumanMessage("hello", id="m1"),
    AIMessage("", tool_calls=[{"name": "t", "args": {"x": 1}, "id": "c1"}], id="m2"),
    ToolMessage("refused: no", tool_call_id="c1", id="m3"),
    {"messages": [HumanMessage("nested", id="m4")], "count": 1},
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_values_come_back_as_they_were(value: Any) -> None:
    serde = SkillnbSerializer()
    type_, payload = serde.dumps_typed(value)
    assert type_ == TYPE_NAME
    back = serde.loads_typed((type_, payload))
    if isinstance(value, float) and value != value:
        assert back != back
        return
    assert type(back) is type(value)
    if isinstance(value, Send):
        assert (back.node, back.arg) == (value.node, value.arg)
    else:
        assert back == value


def test_pickle_and_other_formats_are_refused() -> None:
    serde = SkillnbSerializer()
    with pytest.raises(TypeError, match="never pickle"):
        serde.loads_typed(("pickle", pickle.dumps({"a": 1})))
    with pytest.raises(TypeError, match="refusing"):
        serde.loads_typed(JsonPlusSerializer().dumps_typed({"a": 1}))


class Opaque:
    """No encoder knows it."""


def test_a_value_without_encoding_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"Opaque value has no JSON encoding"):
        SkillnbSerializer().dumps_typed({"x": Opaque()})
    saver = SkillnbSaver(skillnb.open_run(state_dir=tmp_path, memory=False))
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    checkpoint: Any = {
        "v": 1,
        "id": "1",
        "ts": "",
        "channel_values": {"x": Opaque()},
        "channel_versions": {"x": 1},
        "versions_seen": {},
        "updated_channels": None,
    }
    with pytest.raises(TypeError, match="Opaque"):
        saver.put(config, checkpoint, {}, {"x": 1})
    assert saver.get_tuple(config) is None  # nothing half-written


def test_a_pickling_serializer_is_refused_by_the_saver(tmp_path: Path) -> None:
    class Pickler:
        def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
            return "pickle", pickle.dumps(obj)

        def loads_typed(self, data: tuple[str, bytes]) -> Any:
            raise AssertionError("never called")

    saver = SkillnbSaver(skillnb.open_run(state_dir=tmp_path, memory=False), serde=Pickler())
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    with pytest.raises(TypeError, match="pickled"):
        saver.put_writes(
            {**config, "configurable": {**config["configurable"], "checkpoint_id": "1"}},
            [("c", 1)],
            "task",
        )


def test_another_langgraph_serializer_is_wrapped(tmp_path: Path) -> None:
    saver = SkillnbSaver(
        skillnb.open_run(state_dir=tmp_path, memory=False), serde=JsonPlusSerializer()
    )
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    checkpoint: Any = {
        "v": 1,
        "id": "1",
        "ts": "",
        "channel_values": {"d": {"k": (1, 2)}},
        "channel_versions": {"d": 1},
        "versions_seen": {},
        "updated_channels": None,
    }
    stored = saver.put(config, checkpoint, {"source": "input", "step": -1}, {"d": 1})
    found = saver.get_tuple(stored)
    assert found is not None
    assert found.checkpoint["channel_values"]["d"]["k"] in ([1, 2], (1, 2))
    assert found.metadata["step"] == -1
