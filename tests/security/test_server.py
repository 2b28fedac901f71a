"""The server extension fed hostile notebooks, sidecars and requests, on a real server.

One ``jupyter server`` on 127.0.0.1 (started with the browser tests' own helper) serves a
root full of traps; a decoy file outside the root must keep its hash, no subprocess may run,
and ``/api/status`` must keep answering while the traps are requested.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from securitykit import digest, shell_workflow, write_notebook

from skillnb.core.runstate.records import EventDraft
from skillnb.core.workflow.model import Workflow
from skillnb.run import open_run
from skillnb.store import SidecarStore, sidecar_dir_for

pytestmark = pytest.mark.xdist_group("security-server")

_UI_KIT = Path(__file__).parents[1] / "ui" / "conftest.py"
_spec = importlib.util.spec_from_file_location("skillnb_ui_kit", _UI_KIT)
assert _spec is not None
assert _spec.loader is not None
ui_kit = sys.modules.setdefault("skillnb_ui_kit", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(ui_kit)

HOSTILE_CHECKS = [
    "[[0]*999999]*999999 == [[0]*999999]*999999",
    "sum([[1]*999999]*999999, [])",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with ui_kit.start_jupyter(tmp_path_factory.mktemp("security"), app="server") as srv:
        yield srv


@pytest.fixture
def decoy(server: Any) -> Path:
    path = server.root.parent / f"decoy-{time.monotonic_ns()}.txt"
    path.write_text("precious data outside the server root\n")
    return path


def _status_ms(server: Any) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(server.url + "api/status", timeout=5) as response:  # noqa: S310
        assert response.status == 200
    return (time.perf_counter() - started) * 1000


def _hostile_definition(check: str) -> dict[str, Any]:
    """A definition no loader accepts, as an attacker writes it straight into a journal."""
    return {
        "workflow": {
            "name": "hostile",
            "states": ["a", "b"],
            "transitions": [{"from": "a", "to": "b", "trigger": "go", "gates": ["freeze"]}],
            "gates": {"freeze": {"check": check}},
        }
    }


def _plant_definition(notebook: Path, definition: dict[str, Any]) -> None:
    write_notebook(notebook, [])
    store = SidecarStore(sidecar_dir_for(notebook))
    at = datetime.now(UTC)
    drafts = [
        EventDraft(type="run.created", at=at, data={"run_id": "attack"}),
        EventDraft(
            type="workflow.bound",
            at=at,
            data={
                "workflow": "hostile",
                "hash": "0" * 64,
                "initial": "a",
                "definition": definition,
            },
        ),
    ]
    store.append(drafts, expected_version=0)
    store.close()


def _get(server: Any, route: str, path: str) -> tuple[int, Any]:
    status, body = server.api("GET", f"skillnb/api/{route}", params={"path": path})
    return int(status), body


@pytest.mark.parametrize("check", HOSTILE_CHECKS)
def test_a_stored_freezing_check_is_refused_and_the_server_keeps_answering(
    server: Any, check: str
) -> None:
    folder = server.folder(f"freeze-{HOSTILE_CHECKS.index(check)}")
    _plant_definition(folder / "nb.ipynb", _hostile_definition(check))
    rel = f"{folder.name}/nb.ipynb"
    with ThreadPoolExecutor(4) as pool:
        answers = [pool.submit(_get, server, "run", rel) for _ in range(4)]
        answers += [pool.submit(_get, server, "version", rel) for _ in range(4)]
        latencies = [_status_ms(server) for _ in range(5)]
        results = [a.result(timeout=60) for a in answers]
    assert max(latencies) < 1000, latencies
    for status, body in results:
        assert status in (200, 400), body
        if status == 400:
            assert "repeating a sequence" in body["error"] or "sum()" in body["error"]


def test_a_budget_bound_check_on_big_facts_answers(server: Any) -> None:
    folder = server.folder("big-facts")
    notebook = write_notebook(folder / "nb.ipynb", [])
    definition = _hostile_definition("[x] * 100 == [x] * 100")
    run = open_run(notebook, workflow=Workflow.from_dict(definition), memory=False)
    run.formalize("x", list(range(200_000)))
    status, body = _get(server, "run", f"{folder.name}/nb.ipynb")
    assert status == 200, body
    (result,) = body["next"][0]["gates"]
    assert result["passed"] is False
    assert "budget" in result["message"]
    assert _status_ms(server) < 1000


def test_the_server_never_runs_a_stored_python_gate(server: Any) -> None:
    folder = server.folder("python-gate")
    notebook = write_notebook(folder / "nb.ipynb", [])
    sentinel = folder / "sentinel"
    open_run(notebook, workflow=Workflow.from_dict(shell_workflow()), memory=False).formalize(
        str(sentinel), 1
    )
    status, body = _get(server, "run", f"{folder.name}/nb.ipynb")
    assert status == 200, body
    (gate,) = body["next"][0]["gates"]
    assert gate["passed"] is None
    assert gate["message"] == "evaluated in the kernel"
    assert not sentinel.exists()


def test_gets_create_nothing(server: Any) -> None:
    folder = server.folder("read-only")
    write_notebook(folder / "fresh.ipynb", [])
    empty = write_notebook(folder / "empty.ipynb", [])
    sidecar = sidecar_dir_for(empty)
    sidecar.mkdir(parents=True)
    (sidecar / "journal.jsonl").touch()  # files, but no committed run
    before = sorted(str(p) for p in folder.rglob("*"))
    for name in ("fresh", "empty"):
        for route in ("run", "version"):
            status, body = _get(server, route, f"{folder.name}/{name}.ipynb")
            assert status in (200, 404), body
            if route == "version":
                assert body == {"exists": False, "version": None}
    assert sorted(str(p) for p in folder.rglob("*")) == before


def test_a_symlinked_journal_never_writes_outside_the_root(server: Any, decoy: Path) -> None:
    folder = server.folder("symlink")
    write_notebook(folder / "j.ipynb", [])
    sidecar = sidecar_dir_for(folder / "j.ipynb")
    sidecar.mkdir(parents=True)
    target = os.path.relpath(decoy, sidecar)
    (sidecar / "journal.jsonl").symlink_to(target)  # a relative link, as a clone holds it
    (sidecar / "lock").symlink_to(target)
    mode, before = decoy.stat().st_mode, digest(decoy)
    for route in ("run", "version", "run", "version"):
        status, body = _get(server, route, f"{folder.name}/j.ipynb")
        assert status != 500, body
    assert digest(decoy) == before
    assert decoy.stat().st_mode == mode


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("../decoy.ipynb", 400),
        ("/etc/passwd.ipynb", 400),
        ("a/../../x.ipynb", 400),
        ("out.ipynb", 403),
        ("x\x00.ipynb", 404),  # tornado drops the NUL: no such notebook
    ],
)
def test_paths_outside_the_root_are_refused(
    server: Any, decoy: Path, path: str, expected: int
) -> None:
    link = server.root / "out.ipynb"
    if not link.is_symlink():
        link.symlink_to(decoy)
    before = digest(decoy)
    assert _get(server, "run", path)[0] == expected
    assert digest(decoy) == before


def test_hidden_notebooks_are_refused_like_the_contents_api(server: Any) -> None:
    folder = server.folder(".hidden")
    notebook = write_notebook(folder / "nb.ipynb", [])
    open_run(notebook, memory=False).formalize("secret", "s3cr3t")
    dotted = write_notebook(server.folder("visible") / ".nb.ipynb", [])
    open_run(dotted, memory=False).formalize("secret", "s3cr3t")
    for rel in (".hidden/nb.ipynb", "visible/.nb.ipynb"):
        contents_status, _ = server.api("GET", f"api/contents/{rel}")
        status, body = _get(server, "run", rel)
        assert contents_status == 404
        assert status == 404, body
        assert "s3cr3t" not in json.dumps(body)


@pytest.mark.parametrize(
    "raw",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"path": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b"\xff\xfe not utf-8",
        b'{"path": "x.ipynb", "gate": ' + b'"' + b"g" * 100_000 + b'"}',
    ],
)
def test_hostile_bodies_get_400_never_500(server: Any, raw: bytes) -> None:
    for route in ("approve", "reject", "milestone"):
        status, body = server.api("POST", f"skillnb/api/{route}", raw_body=raw)
        assert status == 400, body
        assert isinstance(body, dict)
        assert body["error"]
    assert _status_ms(server) < 1000


def test_answers_are_json_not_html(server: Any) -> None:
    folder = server.folder("xss")
    notebook = write_notebook(folder / "nb.ipynb", [])
    open_run(notebook, memory=False).formalize("title", "<script>alert(1)</script>")
    request = urllib.request.Request(  # noqa: S310 - local test server
        server.url + f"skillnb/api/run?path={folder.name}/nb.ipynb"
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        assert response.headers["Content-Type"].startswith("application/json")
        assert json.loads(response.read())["facts"]
