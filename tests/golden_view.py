"""The golden ``describe()`` fixture: a real run with every section of the view filled.

``tests/fixtures/describe.json`` is what :func:`build_view` returns for a run driven through
the public API (a workflow with a warning and an approval gate, facts, a follow-up, a pending
approval, a batch, a milestone, key ids, an uncertain step and a LangGraph thread waiting on
``interrupt()``). Both test suites read that one file: pytest validates it against the
contract's models and renders it through the Python renderers; the extension's node tests
parse and render it (``labextension/test/fakes.ts``). A test checks that the file still
matches what the run gives today (ids and times aside); regenerate it from the repository
root with::

    PYTHONPATH=$PWD/skillnb_magics .venv/bin/python tests/golden_view.py
"""

from __future__ import annotations

import contextlib
import json
import operator
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, TypedDict

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "describe.json"
"""The committed golden view."""

LANGGRAPH_CONFIG: Any = {"configurable": {"thread_id": "drafting"}}


def _clock() -> Callable[[], datetime]:
    """A clock that ticks one second per reading, from a fixed start (readable times)."""
    now = [datetime(2026, 1, 5, 9, 0, tzinfo=UTC)]

    def read() -> datetime:
        now[0] += timedelta(seconds=1)
        return now[0]

    return read


def _workflow() -> Any:
    from skillnb.core.workflow.model import Workflow

    return (
        Workflow.build("golden_report")
        .states("draft", "review", "published")
        .transition("draft", "review", trigger="submit", gates=["has_budget", "enough_sources"])
        .transition("review", "published", trigger="publish", gates=["sign_off"])
        .transition("review", "draft", trigger="rework")
        .gate("has_budget", requires="budget")
        .gate(
            "enough_sources",
            check="len(sources) >= 3",
            severity="warn",
            follow_up="Add sources before the report goes out",
        )
        .gate("sign_off", approval="Publish the report?")
        .done()
    )


class _Thread(TypedDict):
    d: Annotated[dict[str, Any], operator.or_]


def _ask(state: _Thread) -> dict[str, Any]:
    from langgraph.types import interrupt

    answer = interrupt({"question": "Send the draft to <b>legal</b>?"})
    return {"d": {"answer": answer}}


def _langgraph_thread(run: Any) -> None:
    """A LangGraph thread checkpointed in ``run``, waiting on ``interrupt()``."""
    from langgraph.graph import END, START, StateGraph

    from skillnb.integrations.langgraph import SkillnbSaver

    builder = StateGraph(_Thread)
    builder.add_node("ask", _ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    builder.compile(checkpointer=SkillnbSaver(run)).invoke(
        {"d": {}}, LANGGRAPH_CONFIG, durability="sync"
    )


def build_view(folder: Path) -> dict[str, Any]:
    """Drive a run in ``folder`` through every section of the view and describe it."""
    from skillnb.errors import GateBlocked
    from skillnb.run import open_run

    notebook = folder / "golden.ipynb"
    run = open_run(notebook, workflow=_workflow(), memory=False, clock=_clock(), user="ana")
    try:
        run.formalize("budget", 1200, kind="decision")
        run.formalize("sources", ["survey 2025", "interviews"])
        run.formalize("summary", "Demand grows 4 % a year; <script>x</script> stays text.")
        run.fire("submit")  # the warning gate leaves a follow-up
        with contextlib.suppress(GateBlocked):
            run.fire("publish")  # asks for the sign-off
        for _page in run.items("pages", ["intro", "method", "results", "outlook"], limit=2):
            pass
        run.milestone("draft reviewed")
        run.set_key_ids(session="s-42", ticket=1729)
        run.journal.commit(
            lambda _s: [run.journal.draft("step.started", key="gate:export", source_hash="h")]
        )
        _langgraph_thread(run)
        return run.describe()
    finally:
        run.close()


def comparable(view: dict[str, Any]) -> dict[str, Any]:
    """``view`` without what differs between two builds: ids, times and where LangGraph's
    approval request falls among its checkpoint writes (they come from worker threads)."""
    from skillnb.service.view import stable_view

    out = stable_view(view)
    for row in out["pending"]:
        if str(row["gate"]).startswith("langgraph:"):
            row["requested_seq"] = None
    for row in out["history"]:
        if str(row["summary"]).startswith("approval requested: langgraph:"):
            row["seq"] = None
    return out


def load_fixture() -> dict[str, Any]:
    """The committed golden view."""
    loaded: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return loaded


def main() -> int:
    """Rebuild the golden view and write it to :data:`FIXTURE`."""
    with tempfile.TemporaryDirectory() as tmp:
        view = build_view(Path(tmp))
    FIXTURE.write_text(json.dumps(view, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    sys.stdout.write(f"wrote {FIXTURE}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
