"""The server extension: path checks, the run registry, and the HTTP API on a real server."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

import pytest
from labkit import write_code_notebook, write_named_users_config

from skillnb.core.runstate.records import Approval, Event
from skillnb.errors import ApprovalError
from skillnb.server import _jupyter_server_extension_points
from skillnb.server.paths import PathRefused, resolve_notebook
from skillnb.server.runs import NoRun, RunAccess, RunRegistry

REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")
NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` on a loop of its own (a browser test may hold this thread's loop)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def test_extension_points_name_the_server_module() -> None:
    assert _jupyter_server_extension_points() == [{"module": "skillnb.server"}]
    config = json.loads(
        (REPO / "jupyter-config" / "jupyter_server_config.d" / "skillnb.json").read_text()
    )
    assert config == {"ServerApp": {"jpserver_extensions": {"skillnb.server": True}}}


# -- paths -----------------------------------------------------------------------------------


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "nb.ipynb").write_text("{}")
    (tmp_path / "outside.ipynb").write_text("{}")
    return root


@pytest.mark.parametrize(
    ("request_path", "status", "message"),
    [
        ("", 400, "relative to the server root"),
        ("/etc/passwd.ipynb", 400, "not absolute"),
        ("C:/x.ipynb", 400, "not absolute"),
        ("\\\\host\\share\\x.ipynb", 400, "not absolute"),
        ("sub/../../outside.ipynb", 400, "'..'"),
        ("sub\\..\\nb.ipynb", 400, "backslashes"),
        ("sub/nb.txt", 400, ".ipynb"),
        ("sub/nb.ipynb\x00", 400, "relative to the server root"),
        ("sub/missing.ipynb", 404, "no notebook at 'sub/missing.ipynb'"),
    ],
)
def test_bad_paths_are_refused(root: Path, request_path: str, status: int, message: str) -> None:
    with pytest.raises(PathRefused) as info:
        resolve_notebook(root, request_path)
    assert info.value.status == status
    assert message in info.value.message


def test_a_symlink_out_of_the_root_is_forbidden(root: Path) -> None:
    (root / "link.ipynb").symlink_to(root.parent / "outside.ipynb")
    (root / "dirlink").symlink_to(root.parent, target_is_directory=True)
    for request_path in ("link.ipynb", "dirlink/outside.ipynb"):
        with pytest.raises(PathRefused) as info:
            resolve_notebook(root, request_path)
        assert info.value.status == 403


def test_a_good_path_is_joined_not_resolved(root: Path) -> None:
    (root / "alias").symlink_to(root / "sub", target_is_directory=True)
    assert resolve_notebook(root, "sub/nb.ipynb") == root / "sub" / "nb.ipynb"
    assert resolve_notebook(root, "./alias/nb.ipynb") == root / "alias" / "nb.ipynb"


# -- registry with a fake run ----------------------------------------------------------------


@dataclass
class FakeRun:
    """Stands in for skillnb.run.Run."""

    version: int = 3
    pending: list[str] = field(default_factory=lambda: ["sign_off"])
    calls: list[tuple[Any, ...]] = field(default_factory=list)
    closes: int = 0

    def describe(self) -> dict[str, Any]:
        return {"v": 1, "version": self.version, "pending": list(self.pending)}

    def _decide(
        self, status: Literal["approved", "rejected"], gate: str, by: str | None, note: str | None
    ) -> Approval:
        if gate not in self.pending:
            raise ApprovalError(f"early approval: no request for {gate!r}")
        self.pending.remove(gate)
        self.version += 1
        self.calls.append((status, gate, by, note))
        return Approval(
            id="r1", gate=gate, requested_at=NOW, status=status, decided_by=by, note=note
        )

    def approve(self, gate: str, by: str | None = None, note: str | None = None) -> Approval:
        return self._decide("approved", gate, by, note)

    def reject(self, gate: str, by: str | None = None, note: str | None = None) -> Approval:
        return self._decide("rejected", gate, by, note)

    def milestone(self, name: str) -> Event:
        self.version += 1
        self.calls.append(("milestone", name))
        return Event(seq=self.version, type="milestone.recorded", at=NOW, data={"name": name})

    def close(self) -> None:
        self.closes += 1


@dataclass
class FakeAccess:
    """Counts opens; runs exist for the notebooks in ``runs``."""

    runs: dict[Path, FakeRun] = field(default_factory=dict)
    opened: list[Path] = field(default_factory=list)

    def access(self) -> RunAccess:
        def open_(notebook: Path) -> FakeRun:
            self.opened.append(notebook)
            return self.runs[notebook]

        return RunAccess(
            open=open_,
            read=open_,
            exists=lambda notebook: notebook in self.runs,
            sidecar_dir=lambda notebook: notebook.parent / ".skillnb" / notebook.stem,
        )


def test_registry_caches_runs_and_reports_missing_ones(root: Path) -> None:
    fake = FakeAccess()
    registry = RunRegistry(root, access=fake.access())
    try:
        assert run_async(registry.version("sub/nb.ipynb")) == {"exists": False, "version": None}
        with pytest.raises(NoRun, match=r"no SKILL\.nb run for 'sub/nb\.ipynb'"):
            run_async(registry.describe("sub/nb.ipynb"))
        run = fake.runs[root / "sub" / "nb.ipynb"] = FakeRun()
        assert run_async(registry.describe("sub/nb.ipynb"))["version"] == 3
        assert run_async(registry.version("sub/nb.ipynb")) == {"exists": True, "version": 3}
        assert fake.opened == [root / "sub" / "nb.ipynb"]  # opened once, then cached
        answer = run_async(registry.decide("sub/nb.ipynb", "reject", "sign_off", "ana", "no"))
        assert answer["version"] == 4
        assert answer["approval"]["status"] == "rejected"
        assert run.calls == [("rejected", "sign_off", "ana", "no")]
        answer = run_async(registry.milestone("sub/nb.ipynb", "week-1"))
        assert answer["event"]["data"] == {"name": "week-1"}
    finally:
        registry.close()


def test_registry_evicts_the_least_recently_used_run(root: Path) -> None:
    fake = FakeAccess()
    for name in ("a", "b", "c"):
        (root / f"{name}.ipynb").write_text("{}")
        fake.runs[root / f"{name}.ipynb"] = FakeRun()
    registry = RunRegistry(root, access=fake.access(), cache_size=2)
    try:
        for name in ("a", "b", "a", "c", "a", "b"):
            run_async(registry.version(f"{name}.ipynb"))
        assert [p.stem for p in fake.opened] == ["a", "b", "c", "b"]
        closes = [fake.runs[root / f"{n}.ipynb"].closes for n in "abc"]
        assert closes == [0, 1, 1]  # b, then c, dropped from the cache: closed
    finally:
        registry.close()
    assert [fake.runs[root / f"{n}.ipynb"].closes for n in "abc"] == [1, 2, 1]


def test_registry_refuses_a_sidecar_linked_out_of_the_root(root: Path) -> None:
    (root / "sub" / ".skillnb").mkdir()
    (root / "sub" / ".skillnb" / "nb").symlink_to(root.parent, target_is_directory=True)
    fake = FakeAccess(runs={root / "sub" / "nb.ipynb": FakeRun()})
    registry = RunRegistry(root, access=fake.access())
    try:
        with pytest.raises(PathRefused) as info:
            run_async(registry.describe("sub/nb.ipynb"))
        assert info.value.status == 403
        assert fake.opened == []
    finally:
        registry.close()


# -- the HTTP API on a real server -----------------------------------------------------------


def make_notebook(folder: Path, name: str) -> Path:
    return write_code_notebook(folder / name, ["%load_ext skillnb"], kernelspec=False)


@pytest.fixture(scope="module")
def api_server(tmp_path_factory: pytest.TempPathFactory, jupyter_starter: Any) -> Any:
    token = secrets.token_hex(8)
    with jupyter_starter(tmp_path_factory.mktemp("api"), app="server", token=token) as server:
        yield server


def test_api_refuses_unauthenticated_requests(api_server: Any) -> None:
    status, _ = api_server.api("GET", "skillnb/api/version", params={"path": "x.ipynb"}, token="")
    assert status == 403
    status, _ = api_server.api(
        "POST", "skillnb/api/milestone", body={}, token=api_server.token[::-1]
    )
    assert status == 403


def test_api_serves_and_changes_a_run(api_server: Any, review_notebook: Any) -> None:
    import skillnb

    folder = api_server.root / "api"
    folder.mkdir(exist_ok=True)
    notebook = make_notebook(folder, "report.ipynb")
    path = "api/report.ipynb"

    status, body = api_server.api("GET", "skillnb/api/run", params={"path": path})
    assert status == 404
    assert "no SKILL.nb run for 'api/report.ipynb'" in body["error"]
    assert api_server.api("GET", "skillnb/api/version", params={"path": path}) == (
        200,
        {"exists": False, "version": None},
    )

    review_notebook(folder, "report.ipynb")
    run = skillnb.open_run(notebook, memory=False)
    status, body = api_server.api("GET", "skillnb/api/run", params={"path": path})
    assert status == 200, body
    assert (body["v"], body["state"], body["workflow"]) == (1, "review", "weekly-report")
    assert [p["gate"] for p in body["pending"]] == ["sign_off"]
    status, body = api_server.api("GET", "skillnb/api/version", params={"path": path})
    assert body == {"exists": True, "version": run.version}

    status, body = api_server.api(
        "POST", "skillnb/api/approve", body={"path": path, "gate": "sign_off", "note": "ok"}
    )
    assert status == 200, body
    assert body["approval"]["status"] == "approved"
    reopened = skillnb.open_run(notebook, memory=False)
    [approval] = [a for a in reopened.snapshot.approvals.values() if a.gate == "sign_off"]
    assert (approval.status, approval.note) == ("approved", "ok")
    assert approval.decided_by == "ui-tester"  # anonymous server identity: the run's user

    status, body = api_server.api(
        "POST", "skillnb/api/approve", body={"path": path, "gate": "sign_off"}
    )
    assert status == 409
    assert "already approved" in body["error"]

    status, body = api_server.api(
        "POST", "skillnb/api/milestone", body={"path": path, "name": "  week 1  "}
    )
    assert status == 200, body
    assert body["event"]["type"] == "milestone.recorded"
    assert body["event"]["data"]["name"] == "week 1"
    assert skillnb.open_run(notebook, memory=False).version == body["version"]


def test_api_serves_a_run_views_saved_forms_marked_with_its_version(
    api_server: Any, review_notebook: Any
) -> None:
    import skillnb

    folder = api_server.root / "api-view"
    folder.mkdir(exist_ok=True)
    notebook = make_notebook(folder, "report.ipynb")
    path = "api-view/report.ipynb"
    status, body = api_server.api("GET", "skillnb/api/view", params={"path": path})
    assert status == 404, body

    review_notebook(folder, "report.ipynb")
    run = skillnb.open_run(notebook, memory=False)
    status, body = api_server.api("GET", "skillnb/api/view", params={"path": path})
    assert status == 200, body
    assert (body["v"], body["run_id"], body["version"]) == (1, run.id, run.version)
    html = body["data"]["text/html"]
    assert f'data-skillnb-run="{run.id}"' in html
    assert f'data-skillnb-version="{run.version}"' in html
    assert f"as of v{run.version}, <time" in html
    assert "Pending approvals" in html
    assert "sign_off" in html
    assert "Pending approvals:" in body["data"]["text/plain"]
    # the state machine as the kernel draws it: inline SVG, its current state marked
    assert "<svg" in html
    assert 'role="img"' in html

    run.approve("sign_off", by="editor")
    status, body = api_server.api("GET", "skillnb/api/view", params={"path": path})
    assert status == 200, body
    assert body["version"] == run.version
    assert "Pending approvals" not in body["data"]["text/html"]


@pytest.mark.parametrize(
    ("route", "payload", "status", "message"),
    [
        ("skillnb/api/milestone", {"path": "api/report.ipynb"}, 400, "'name' is required"),
        ("skillnb/api/milestone", {"path": "api/report.ipynb", "name": " "}, 400, "not be empty"),
        ("skillnb/api/approve", {"path": "api/report.ipynb", "gate": 5}, 400, "must be a string"),
        ("skillnb/api/approve", {"path": "../etc.ipynb", "gate": "g"}, 400, "'..'"),
        ("skillnb/api/reject", {"path": "/abs.ipynb", "gate": "g"}, 400, "not absolute"),
        ("skillnb/api/reject", ["path"], 400, "must be a JSON object"),
    ],
)
def test_api_validates_input(
    api_server: Any, route: str, payload: Any, status: int, message: str
) -> None:
    folder = api_server.root / "api"
    folder.mkdir(exist_ok=True)
    if not (folder / "report.ipynb").exists():
        make_notebook(folder, "report.ipynb")
    answer_status, body = api_server.api("POST", route, body=payload)
    assert answer_status == status
    assert message in body["error"]


def test_api_refuses_paths_leading_out_of_the_root(api_server: Any) -> None:
    outside = api_server.root.parent / "outside.ipynb"
    outside.write_text("{}")
    link = api_server.root / "escape.ipynb"
    if not link.is_symlink():
        link.symlink_to(outside)
    status, body = api_server.api("GET", "skillnb/api/run", params={"path": "escape.ipynb"})
    assert status == 403
    assert "outside the server root" in body["error"]
    status, body = api_server.api("POST", "skillnb/api/approve", raw_body=b"{not json")
    assert status == 400
    assert "not JSON" in body["error"]


# -- who a decision is recorded as -------------------------------------------------------------


@pytest.fixture(scope="module")
def named_server(tmp_path_factory: pytest.TempPathFactory, jupyter_starter: Any) -> Any:
    base = tmp_path_factory.mktemp("named")
    write_named_users_config(base)
    token = secrets.token_hex(8)
    with jupyter_starter(base, app="server", token=token) as server:
        yield server


def test_decisions_are_recorded_under_the_servers_user(
    named_server: Any, review_notebook: Any
) -> None:
    import skillnb

    folder = named_server.root / "named"
    folder.mkdir(exist_ok=True)
    notebook = review_notebook(folder, "report.ipynb")
    path = "named/report.ipynb"
    status, body = named_server.api("GET", "skillnb/api/identity")
    assert (status, body) == (200, {"name": "ada", "display_name": "Ada", "source": "server"})

    # Another name in the body is refused: the signed-in user decides.
    status, body = named_server.api(
        "POST", "skillnb/api/approve", body={"path": path, "gate": "sign_off", "by": "mallory"}
    )
    assert status == 400
    assert "'by' must be the signed-in user ('ada')" in body["error"]

    status, body = named_server.api(
        "POST", "skillnb/api/approve", body={"path": path, "gate": "sign_off"}
    )
    assert status == 200, body
    assert body["approval"]["decided_by"] == "ada"
    reopened = skillnb.open_run(notebook, memory=False)
    [approval] = [a for a in reopened.snapshot.approvals.values() if a.gate == "sign_off"]
    assert (approval.status, approval.decided_by) == ("approved", "ada")


def test_a_shared_token_server_records_the_runs_user(api_server: Any) -> None:
    # jupyter_server names each token request "Anonymous <moon>": nobody is identified, so
    # the run's default user ($SKILLNB_USER here) is recorded, and the dialog is told so.
    status, body = api_server.api("GET", "skillnb/api/identity")
    assert (status, body) == (
        200,
        {"name": "ui-tester", "display_name": "ui-tester", "source": "run"},
    )
    status, _ = api_server.api("GET", "skillnb/api/identity", token="")
    assert status == 403


def test_a_copy_made_by_the_contents_api_is_answered_as_a_copy_with_the_ways_on(
    api_server: Any, review_notebook: Any
) -> None:
    """A file browser's Duplicate: the copy's routes say whose run its views show."""
    import skillnb

    folder = api_server.folder("api-copy")
    review_notebook(folder, "report.ipynb", mirrored=True)
    run_id = skillnb.open_run(folder / "report.ipynb", memory=False).id
    status, body = api_server.api(
        "POST", "api/contents/api-copy", body={"copy_from": "api-copy/report.ipynb"}
    )
    assert status == 201, body
    copy = body["path"]
    assert copy == "api-copy/report-Copy1.ipynb"

    ways = {
        "text": "This notebook is a copy of report.ipynb; the run shown is the original's",
        "original": "report.ipynb",
        "run_id": run_id,
        "fork_from": "%skillnb fork-from report.ipynb",
        "fork": "skillnb fork report.ipynb report-Copy1.ipynb",
        "new_run": "%skillnb new-run",
    }
    status, body = api_server.api("GET", "skillnb/api/version", params={"path": copy})
    assert (status, body) == (200, {"exists": False, "version": None, "copy_of": ways})
    status, body = api_server.api(
        "GET", "skillnb/api/version", params={"path": copy, "after": "0", "wait": "0.1"}
    )
    assert (status, body["copy_of"]) == (200, ways)
    status, body = api_server.api("GET", "skillnb/api/view", params={"path": copy})
    assert (status, body) == (200, {"v": 1, "run_id": None, "copy_of": ways})
    # the original is answered as itself; nothing was created for the copy
    status, body = api_server.api(
        "GET", "skillnb/api/version", params={"path": "api-copy/report.ipynb"}
    )
    assert body["exists"] is True
    assert "copy_of" not in body
    assert not (folder / ".skillnb" / "report-Copy1").exists()
