"""Shared fixtures for browser tests: a real JupyterLab server and a headless Chromium page.

* ``lab_server`` (session): ``jupyter lab`` on 127.0.0.1 with a free port, no token, a
  temporary root dir, config, runtime, workspaces and user settings (no news toasts), and
  ``window.jupyterapp`` exposed. It yields a :class:`LabServer` (``url``, ``root``, ``api``).
  Tests put their notebooks in their own sub-folder of ``root`` (``lab_server.folder(name)``).
* ``browser`` (session) / ``page`` (per test): Playwright on Debian's ``/usr/bin/chromium``
  (never a downloaded browser). A failing test leaves ``test-output/ui/<test>-failure.png``.
* ``ui_output`` (session): ``test-output/ui/``, for screenshots.
* ``jupyter_cli`` (session): run ``jupyter ARGS`` (e.g. ``labextension list``), colours removed.
* ``review_notebook``: writes a notebook whose run waits for an approval (see below).
* ``jupyter_starter`` (session): :func:`start_jupyter`, to start another server (e.g. with
  a token) as a context manager.

Browser tests are marked ``@pytest.mark.browser``; they are skipped when Chromium or
Playwright is missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
]
REPO = Path(__file__).resolve().parents[2]
UI_OUTPUT = REPO / "test-output" / "ui"
STARTUP_TIMEOUT_S = 60.0
ANSI = re.compile(r"\x1b\[[0-9;]*m")

NO_NEWS = {"fetchNews": "false", "checkForUpdates": False}


@dataclass
class LabServer:
    """A running Jupyter server started by the fixtures."""

    url: str
    """Base URL with a trailing slash, e.g. ``http://127.0.0.1:8899/``."""
    root: Path
    """The server's root directory (contents paths are relative to it)."""
    log: Path
    """The server's combined stdout and stderr."""
    token: str = ""
    """The auth token ('' when authentication is off)."""
    env: dict[str, str] = field(default_factory=dict)
    """The environment the server (and its kernels) run with."""

    def folder(self, name: str) -> Path:
        """Create (or empty-check) a sub-folder of the root for one test's files."""
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def api(
        self,
        method: str,
        route: str,
        *,
        params: dict[str, str] | None = None,
        body: Any = None,
        token: str | None = None,
        raw_body: bytes | None = None,
    ) -> tuple[int, Any]:
        """Call the server's REST API and return ``(status, parsed JSON or text)``."""
        url = self.url + route.lstrip("/")
        if params:
            url += "?" + urllib.parse.urlencode(params)
        data = raw_body if raw_body is not None else None
        if body is not None:
            data = json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)  # noqa: S310 - local test server
        request.add_header("Content-Type", "application/json")
        auth = self.token if token is None else token
        if auth:
            request.add_header("Authorization", f"token {auth}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                status, text = response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read().decode()
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def kernels(self) -> list[dict[str, Any]]:
        """The kernels running on the server."""
        status, body = self.api("GET", "api/kernels")
        assert status == 200, body
        assert isinstance(body, list)
        return body


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


BUILT_EXTENSION = REPO / "skillnb_magics" / "skillnb" / "labextension"
"""Where ``jlpm build:prod`` in ``labextension/`` writes the prebuilt extension."""


def serve_built_extension(base: Path) -> str | None:
    """A ``JUPYTER_PATH`` entry under ``base`` that serves this checkout's built extension.

    When ``labextension/`` was built in this checkout, JupyterLab should load that build,
    not whichever copy is installed in the environment: ``JUPYTER_PATH`` entries come first
    when JupyterLab looks for ``labextensions/<name>``. Returns ``None`` (nothing to add)
    when there is no build here.
    """
    if not (BUILT_EXTENSION / "package.json").is_file():
        return None
    folder = base / "jupyter-path"
    link = folder / "labextensions" / "skillnb"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink():
        link.symlink_to(BUILT_EXTENSION, target_is_directory=True)
    return str(folder)


def jupyter_env(base: Path) -> dict[str, str]:
    """An environment that keeps the server's user-level state inside ``base``."""
    env = dict(os.environ)
    served = serve_built_extension(base)
    if served:
        env["JUPYTER_PATH"] = os.pathsep.join(filter(None, [served, env.get("JUPYTER_PATH")]))
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    for var, sub in (
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("JUPYTER_DATA_DIR", "data"),
        ("IPYTHONDIR", "ipython"),
        ("SKILLNB_HOME", "skillnb-home"),
    ):
        (base / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(base / sub)
    env["SKILLNB_USER"] = "ui-tester"
    env.pop("SKILLNB_NOTEBOOK", None)
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    return env


def write_user_settings(settings_dir: Path) -> None:
    """Quiet settings: no news or update toasts over the screenshots."""
    notification = settings_dir / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True, exist_ok=True)
    (notification / "notification.jupyterlab-settings").write_text(json.dumps(NO_NEWS))


def _wait_ready(server: LabServer, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"jupyter exited early:\n{server.log.read_text()[-4000:]}")
        with contextlib.suppress(OSError):
            status, _ = server.api("GET", "api/status")
            if status == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"jupyter did not answer in time:\n{server.log.read_text()[-4000:]}")


@contextlib.contextmanager
def start_jupyter(
    base: Path,
    *,
    app: str = "lab",
    token: str = "",
    extra_args: Sequence[str] = (),
    user: str = "ui-tester",
) -> Iterator[LabServer]:
    """Start ``jupyter <app>`` (``lab`` or ``server``) under ``base`` and stop it afterwards.

    ``user`` is the name the server's kernels decide and record as (``SKILLNB_USER``).
    """
    root = base / "root"
    root.mkdir(parents=True, exist_ok=True)
    settings = base / "settings"
    write_user_settings(settings)
    port = free_port()
    env = jupyter_env(base)
    env["SKILLNB_USER"] = user
    log = base / "server.log"
    module = "jupyterlab" if app == "lab" else "jupyter_server"
    args = [
        sys.executable,
        "-m",
        module,
        "--no-browser",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.root_dir={root}",
        f"--IdentityProvider.token={token}",
        "--ServerApp.password=",
        "--ServerApp.disable_check_xsrf=True",
        "--ServerApp.allow_root=True",
    ]
    if app == "lab":
        args += [
            "--LabApp.expose_app_in_browser=True",
            f"--LabApp.workspaces_dir={base / 'workspaces'}",
            f"--LabApp.user_settings_dir={settings}",
        ]
    args += list(extra_args)
    server = LabServer(url=f"http://127.0.0.1:{port}/", root=root, log=log, token=token, env=env)
    with log.open("wb") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=root)
        try:
            _wait_ready(server, process)
            yield server
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)


def jupyter_command(*args: str) -> str:
    """Run ``jupyter ARGS`` with this interpreter's environment; return its output sans colour."""
    exe = Path(sys.executable).parent / "jupyter"
    result = subprocess.run(
        [str(exe), *args], capture_output=True, text=True, timeout=120, check=False
    )
    return ANSI.sub("", result.stdout + result.stderr)


@pytest.fixture(scope="session")
def ui_output() -> Path:
    """``test-output/ui/``: where browser tests leave screenshots."""
    UI_OUTPUT.mkdir(parents=True, exist_ok=True)
    return UI_OUTPUT


@pytest.fixture(scope="session")
def jupyter_cli() -> Any:
    """:func:`jupyter_command`: run ``jupyter ARGS`` and return its output without colours."""
    return jupyter_command


@pytest.fixture(scope="session")
def jupyter_starter() -> Any:
    """The :func:`start_jupyter` context manager, for tests that need a server of their own."""
    return start_jupyter


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """A JupyterLab server on 127.0.0.1 for the whole session (see the module docstring)."""
    with start_jupyter(tmp_path_factory.mktemp("lab")) as server:
        yield server


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium from ``/usr/bin/chromium`` through Playwright."""
    if not CHROMIUM.exists():
        pytest.skip(f"browser tests need Chromium at {CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, headless=True
        )
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Remember each phase's report on the item, so ``page`` knows whether the test failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest, ui_output: Path) -> Iterator[Any]:
    """A fresh browser page (1400x900); screenshots itself when the test fails."""
    sync_api = pytest.importorskip("playwright.sync_api")
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(60_000)  # a click on a loaded 2-core machine
    page = context.new_page()
    try:
        yield page
    finally:
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            name = re.sub(r"[^\w.-]+", "_", request.node.name)
            with contextlib.suppress(sync_api.Error):  # a crashed page cannot be photographed
                page.screenshot(path=str(ui_output / f"{name}-failure.png"))
        context.close()


FIXTURES = Path(__file__).parent / "fixtures"
SUMMARY_WITH_MARKUP = "<b>Q3</b> revenue up <script>alert(1)</script>"
"""A fact value holding markup, to check that views show it as text."""


@pytest.fixture
def review_notebook() -> Any:
    """Return a function that writes a notebook and a run waiting for the ``sign_off`` approval.

    ``review_notebook(folder, name="report.ipynb", cells=(...), kernelspec=False)`` writes the
    notebook (without kernelspec metadata unless asked, so JupyterLab starts no kernel on its
    own), creates its sidecar with the Python API from ``fixtures/review_workflow.yaml``:
    a ``summary`` fact holding markup, ``submit`` fired (state ``review``) and ``publish``
    blocked on the pending ``sign_off`` approval, and returns the notebook's path.
    """
    import skillnb
    from skillnb.errors import GateBlocked

    def make(
        folder: Path,
        name: str = "report.ipynb",
        cells: Sequence[str] = ("%load_ext skillnb",),
        *,
        kernelspec: bool = False,
        mirrored: bool = False,
    ) -> Path:
        from labkit import write_code_notebook  # here: other suites load this file by path

        path = write_code_notebook(folder / name, cells, kernelspec=kernelspec)
        workflow = skillnb.Workflow.from_yaml(FIXTURES / "review_workflow.yaml")
        run = skillnb.open_run(path, workflow=workflow, user="setup", memory=False)
        run.formalize("summary", SUMMARY_WITH_MARKUP, kind="summary")
        run.fire("submit")
        with pytest.raises(GateBlocked):
            run.fire("publish")
        assert [a.gate for a in run.pending()] == ["sign_off"]
        if mirrored:  # the metadata mirror a kernel leaves: the notebook names its run
            from skillnb.notebookfile.sync import apply_mirror

            saved = json.loads(path.read_text(encoding="utf-8"))
            apply_mirror(saved, run)
            path.write_text(json.dumps(saved), encoding="utf-8")
        return path

    return make
