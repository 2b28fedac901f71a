"""Helpers of the LangGraph tests: the small real graphs they run, over a run in a folder."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

import skillnb
from skillnb.integrations.langgraph import SkillnbSaver
from skillnb.run import Run


def open_folder(folder: Path) -> Run:
    """The run whose sidecar is ``folder`` (no skill memory)."""
    return skillnb.open_run(state_dir=folder, memory=False)


class Log(TypedDict):
    """A list channel that each step appends to."""

    items: Annotated[list[str], operator.add]


def _append(state: Log) -> dict[str, Any]:
    return {"items": [f"n{len(state['items'])}"]}


def log_graph(saver: Any) -> Any:
    """One node, ``append``, adding ``n<count>`` to ``items`` on each invoke."""
    builder = StateGraph(Log)
    builder.add_node("append", _append)
    builder.add_edge(START, "append")
    return builder.compile(checkpointer=saver)


class Answers(TypedDict):
    """A dict channel merged with ``|``."""

    d: Annotated[dict[str, Any], operator.or_]


def asking_graph(run: Run, question: dict[str, Any]) -> Any:
    """One node, ``ask``, that interrupts with ``question`` and stores the answer in ``d``."""

    def ask(state: Answers) -> dict[str, Any]:
        return {"d": {"answer": interrupt(question)}}

    builder = StateGraph(Answers)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=SkillnbSaver(run))
