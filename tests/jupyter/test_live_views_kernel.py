"""Live views in a real kernel (nbclient): one feed per run, fed by other processes' changes.

The kernel shows two views of a run blocked on an approval. They share one feed and one
watcher thread. The ``skillnb`` CLI, another process, approves the request; while the
kernel is idle (no cell runs) the feed notices the journal change and both views replace
their buttons by the outcome. Closing the views stops the watcher thread.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.slow

WORKFLOW = """%%workflow
workflow:
  name: review
  states: [draft, review]
  transitions:
    - {from: draft, to: review, trigger: submit, gates: [boss]}
  gates:
    boss: {approval: "Send it?"}
"""
DEADLINE_S = 1.0
"""How soon a change made elsewhere must reach the views."""
CLI = (sys.executable, "-m", "skillnb")
MARGIN_S = 15.0
"""Extra waiting allowed for a loaded machine before the test gives up."""

PROBE = """
import json, threading, time
from skillnb.jupyter.extension import current_session
_s = current_session()
_feeds = _s.feeds.open
print(json.dumps({
    "feeds": len(_feeds),
    "views": [len(f.views) for f in _feeds],
    "watching": [f.watching for f in _feeds],
    "threads": sum(t.name == "skillnb-follow" and t.is_alive() for t in threading.enumerate()),
    "buttons": [len(v.controls) for f in _feeds for v in f.views],
    "settled": [[r.value for r in v.settled.values()] for f in _feeds for v in f.views],
    "published_at": globals().get("_published_at"),
    "cell_started": time.time(),
}))
"""

RECORD_PUBLISH = """
import time
_feed = current_session().feeds.open[0]
_publish = _feed.publish
_published_at = None
def _recording():
    global _published_at
    _publish()
    _published_at = time.time()
_feed.publish = _recording
"""


class Kernel:
    """One nbclient kernel; :meth:`run` executes a code cell and returns its stdout."""

    def __init__(self, client: NotebookClient) -> None:
        self.client = client
        self.index = 0

    def run(self, source: str) -> str:
        cell = nbformat.v4.new_code_cell(source)
        self.client.nb.cells.append(cell)
        self.client.execute_cell(cell, len(self.client.nb.cells) - 1)
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert not errors or source.startswith("%%gate"), errors
        return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")

    def probe(self) -> dict[str, Any]:
        out: dict[str, Any] = json.loads(self.run(PROBE).strip().splitlines()[-1])
        return out


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[Kernel]:
    nb = nbformat.v4.new_notebook()
    client = NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    with client.setup_kernel():
        yield Kernel(client)


def approve_from_cli(state: Path) -> float:
    """Approve ``boss`` with the ``skillnb`` CLI (another process); return when it wrote."""
    subprocess.run(
        [*CLI, "approve", "--state-dir", str(state), "boss", "--by", "carol", "--note", "CLI"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return (state / "journal.jsonl").stat().st_mtime  # the approval's append


def test_views_share_one_watcher_and_follow_changes_from_another_process(
    kernel: Kernel, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    kernel.run(f'%load_ext skillnb\n%config SkillNB.state_dir = "{state}"')
    kernel.run(WORKFLOW)
    kernel.run("%%gate submit\n'sent'")  # blocked: shows a view with Approve / Reject
    kernel.run("%skillnb status")  # a second view of the same run
    seen = kernel.probe()
    assert (seen["feeds"], seen["views"], seen["watching"]) == (1, [2], [True])
    assert seen["threads"] == 1  # one watcher for the run, not one per view
    assert seen["buttons"] == [1, 1]

    kernel.run(RECORD_PUBLISH)
    approved_at = approve_from_cli(state)
    time.sleep(DEADLINE_S)  # the kernel stays idle: no cell runs meanwhile
    deadline = approved_at + DEADLINE_S + MARGIN_S
    seen = kernel.probe()
    while seen["buttons"] != [0, 0] and time.time() < deadline:
        time.sleep(0.2)
        seen = kernel.probe()
    assert seen["buttons"] == [0, 0]
    assert all(len(rows) == 1 and "✓ approved by carol at " in rows[0] for rows in seen["settled"])
    assert seen["published_at"] is not None
    assert seen["published_at"] <= seen["cell_started"]  # shown between cells, not by one
    latency = seen["published_at"] - approved_at
    print(f"CLI approval -> kernel views updated in {latency:.3f} s (aimed at < {DEADLINE_S} s)")

    kernel.run(
        "for _f in current_session().feeds.open:\n    for _v in _f.views:\n        _v.close()\n"
    )
    seen = kernel.probe()
    assert (seen["feeds"], seen["views"], seen["watching"]) == (1, [0], [False])
    until = time.time() + MARGIN_S
    while seen["threads"] and time.time() < until:
        time.sleep(0.2)
        seen = kernel.probe()
    assert seen["threads"] == 0  # the watcher thread ended with the last view


def test_a_view_collected_unregisters_and_the_watcher_stops(kernel: Kernel, tmp_path: Path) -> None:
    state = tmp_path / "state"
    kernel.run(f'%load_ext skillnb\n%config SkillNB.state_dir = "{state}"')
    kernel.run("%%formalize budget\n1200")
    out = kernel.run(
        "import gc\n"
        "from skillnb.jupyter.extension import current_run\n"
        "from skillnb.jupyter.live import RunFeed\n"
        "from skillnb.jupyter.views.widgets import RunView\n"
        "_feed = RunFeed(current_run())\n"
        "_view = RunView(current_run(), feed=_feed)\n"
        "print(_feed.watching, len(_feed.views))\n"
        "for _w in (*_view.widget.children, _view.widget, _view.svg, _view.chips,\n"
        "           _view.diagram_toggle, *_view.diagram_buttons.values()):\n"
        "    _w.close()\n"
        "del _view, _w\n"
        "gc.collect()\n"
        "print(_feed.watching, len(_feed.views))\n"
    )
    assert out.split() == ["True", "1", "False", "0"]
