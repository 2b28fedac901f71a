"""Suggestions in a real kernel (nbclient): offered, kept, withdrawn, and kept again for nothing.

The test plays the JupyterLab extension: it opens the ``skillnb.mirror`` comm to the kernel
(the handshake a frontend does), runs cells with their cell ids as the notebook sends them,
and keeps a suggestion with the request the panel's Keep sends (``%formalize NAME --kind
KIND``, silent). It reads what the panel would read: the lists on the comm and the output of
the silent request.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_core.utils import run_sync
from nbclient import NotebookClient

pytestmark = pytest.mark.slow

MIME = "application/vnd.skillnb.v1+json"


class Frontend:
    """nbclient's kernel client, listening on ``skillnb.mirror`` like the extension does."""

    def __init__(self, client: NotebookClient) -> None:
        self.kc = client.kc
        self.lists: list[list[str]] = []
        """The names of each list of suggestions the kernel sent, in order."""
        self.buttons: dict[str, str] = {}
        """The comm id of each button shown, by the description it had when shown."""
        self.models: dict[str, str] = {}
        """The latest description of each button, by comm id."""

    def open_mirror(self) -> None:
        content = {"comm_id": uuid.uuid4().hex, "target_name": "skillnb.mirror", "data": {}}
        self.kc.shell_channel.send(self.kc.session.msg("comm_open", content))

    def run(self, code: str, cell_id: str | None = None, *, silent: bool = False) -> list[Any]:
        """Execute ``code``; return its IOPub outputs (display data, streams, errors)."""
        content = {
            "code": code,
            "silent": silent,
            "store_history": not silent,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": False,
        }
        metadata = {"cellId": cell_id} if cell_id else {}
        outputs = self._send(self.kc.session.msg("execute_request", content, metadata=metadata))
        shell = run_sync(self.kc.get_shell_msg)(timeout=120)
        assert shell["content"]["status"] == "ok", shell["content"]
        return outputs

    def click(self, description: str) -> None:
        """Click the button showing ``description``, as the widget frontend does."""
        data = {"method": "custom", "content": {"event": "click"}}
        content = {"comm_id": self.buttons[description], "data": data}
        self._send(self.kc.session.msg("comm_msg", content))

    def _send(self, msg: dict[str, Any]) -> list[Any]:
        """Send ``msg`` on the shell channel; read IOPub until the kernel is idle after it."""
        self.kc.shell_channel.send(msg)
        outputs = []
        while True:
            reply = run_sync(self.kc.get_iopub_msg)(timeout=120)
            if reply["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
                continue
            kind, body = reply["msg_type"], reply["content"]
            if kind == "status" and body["execution_state"] == "idle":
                return outputs
            self._read(kind, body)
            if kind in ("display_data", "stream", "error"):
                outputs.append(body)

    def _read(self, kind: str, body: dict[str, Any]) -> None:
        """Note the suggestion lists and the buttons' models (and their descriptions)."""
        data = body.get("data", {})
        if kind == "comm_msg" and "suggestions" in data:
            self.lists.append([s["name"] for s in data["suggestions"]])
        state = data.get("state", {}) if isinstance(data, dict) else {}
        if kind in ("comm_open", "comm_msg") and "description" in state:
            self.models[body["comm_id"]] = state["description"]
            self.buttons[state["description"]] = body["comm_id"]

    def keep_from_panel(self, name: str, kind: str) -> list[Any]:
        """What the panel's Keep sends."""
        return self.run(f"%formalize {name} --kind {kind} --tell-kept", silent=True)

    def fact_versions(self, key: str) -> list[int]:
        (out,) = self.run(
            "import json\nfrom skillnb.jupyter.extension import current_run\n"
            f"print(json.dumps([f.version for f in current_run().fact_history({key!r})]))"
        )
        versions: list[int] = json.loads(out["text"])
        return versions


def _plain(outputs: list[Any]) -> list[str]:
    return [o["data"]["text/plain"] for o in outputs if "data" in o]


@pytest.fixture
def frontend(tmp_path: Path) -> Iterator[Frontend]:
    client = NotebookClient(
        nbformat.v4.new_notebook(),
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    with client.setup_kernel():
        front = Frontend(client)
        front.run(f'%load_ext skillnb\n%config SkillNB.state_dir = "{tmp_path / "state"}"')
        front.open_mirror()
        yield front


def test_a_suggestion_goes_once_kept_and_keeping_it_again_writes_no_version(
    frontend: Frontend,
) -> None:
    out = frontend.run("deadline = '2026-12-15'\nbudget = 4000", cell_id="c1")
    assert _plain(out) == [
        "Keep? budget (constraint) · deadline (constraint) — %formalize NAME keeps one",
        "Keep budget — not kept · Keep deadline — not kept",  # the buttons' saved form
    ]
    assert frontend.lists == [["budget", "deadline"]]

    button = frontend.buttons["Keep deadline"]
    frontend.click("Keep deadline")  # the Keep under the cell
    assert frontend.models[button] == "✓ deadline v1"
    assert frontend.lists[-1] == ["budget"]  # the panel stops offering it
    assert frontend.fact_versions("deadline") == [1]

    out = frontend.keep_from_panel("deadline", "constraint")  # a stale Keep in the panel
    (bundle,) = [o["data"] for o in out]
    assert bundle["text/plain"] == "deadline is already kept as v1 with this value"
    assert (bundle[MIME]["status"], bundle[MIME]["badge"]) == (
        "restored",
        "deadline is already kept as v1 with this value",
    )
    assert frontend.fact_versions("deadline") == [1]  # no v2
    assert frontend.lists[-1] == ["budget"]

    frontend.run("print('more work')", cell_id="c3")
    assert frontend.lists[-1] == ["budget"]  # a later cell that leaves budget alone
    frontend.run("deadline = '2027-01-31'  # moved by the client", cell_id="c4")
    assert frontend.lists[-1] == ["deadline", "budget"]
    out = frontend.keep_from_panel("deadline", "constraint")  # a new value: a new version
    assert _plain(out) == ["📌 deadline v2\nconstraint = 2027-01-31"]
    assert frontend.fact_versions("deadline") == [1, 2]
    assert frontend.lists[-1] == ["budget"]

    frontend.run("budget = 5000", cell_id="c5")  # reassigned: offered from this cell now
    frontend.run("print('budget no longer set here')", cell_id="c5")  # c5 runs again
    assert frontend.lists[-1] == []
