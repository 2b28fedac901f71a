"""Loading, reloading and configuring the extension in a real IPython shell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from shellkit import RaisingShell, bundles, cell, last, make_shell, saved_outputs

from skillnb.errors import SkillnbError
from skillnb.jupyter.config import SkillNB
from skillnb.jupyter.extension import current_run, current_session
from skillnb.jupyter.session import NoRunLocation, NotebookSession

MAGICS = {"cell": {"formalize", "gate", "workflow"}, "line": {"workflow", "resume", "skillnb"}}


def session_handlers(shell: InteractiveShell, event: str) -> list[object]:
    return [
        cb
        for cb in shell.events.callbacks[event]
        if isinstance(getattr(cb, "__self__", None), NotebookSession)
    ]


def test_load_registers_the_magics_and_one_handler_per_event(ip: RaisingShell) -> None:
    for kind, names in MAGICS.items():
        assert names <= set(ip.magics_manager.magics[kind])
    assert len(session_handlers(ip, "pre_run_cell")) == 1
    assert len(session_handlers(ip, "post_run_cell")) == 1
    assert sum(isinstance(c, SkillNB) for c in ip.configurables) == 1


def test_reload_ext_leaves_exactly_one_handler_per_event(ip: RaisingShell) -> None:
    for _ in range(3):
        ip.run_line_magic("reload_ext", "skillnb")
    assert len(session_handlers(ip, "pre_run_cell")) == 1
    assert len(session_handlers(ip, "post_run_cell")) == 1
    assert sum(isinstance(c, SkillNB) for c in ip.configurables) == 1
    cell(ip, "%%formalize answer\n6 * 7")
    assert ip.user_ns["answer"] == 42


def test_unload_removes_magics_handlers_and_settings(ip: RaisingShell) -> None:
    ip.run_line_magic("unload_ext", "skillnb")
    for kind, names in MAGICS.items():
        assert not names & set(ip.magics_manager.magics[kind])
    assert session_handlers(ip, "pre_run_cell") == []
    assert session_handlers(ip, "post_run_cell") == []
    assert not any(isinstance(c, SkillNB) for c in ip.configurables)
    assert current_session(ip) is None


def test_config_magic_sets_verbosity_and_rejects_bad_values(ip: RaisingShell) -> None:
    cell(ip, '%config SkillNB.verbosity = "quiet"')
    session = current_session(ip)
    assert session is not None
    assert session.config.verbosity == "quiet"
    cell(ip, '%config SkillNB.verbosity = "loud"')
    assert session.config.verbosity == "quiet"
    cell(ip, "%%formalize answer\n42")
    assert last(ip)["text/plain"] == "📌 answer v1"  # quiet: the badge only


def test_state_dir_setting_moves_the_run(ip: RaisingShell, tmp_path: Path) -> None:
    cell(ip, f'%config SkillNB.state_dir = "{tmp_path / "runs"}"')
    cell(ip, "%%formalize answer\n42")
    assert (tmp_path / "runs" / "journal.jsonl").exists()
    assert not (tmp_path / ".skillnb").exists()


def test_load_without_a_run_says_where_it_will_live(bare_shell: RaisingShell) -> None:
    bare_shell.run_line_magic("load_ext", "skillnb")
    data = last(bare_shell)
    assert data["text/plain"].startswith("SKILL.nb ready · analysis.ipynb")
    assert not Path(".skillnb").exists()  # nothing is created until a magic needs it


def test_load_with_a_run_shows_the_resume_banner(ip: RaisingShell) -> None:
    cell(ip, "%%formalize budget --kind decision\n5000")
    cell(ip, "%%gate --name publish --approval 'Ship it?' --on-block skip\npass")
    again = make_shell()
    try:
        again.run_line_magic("load_ext", "skillnb")
        data = last(again)
        text = data["text/plain"]
        assert data["application/vnd.skillnb.v1+json"]["kind"] == "resume"
        assert data["application/vnd.skillnb.v1+json"]["status"] == "waiting"
        assert "waiting for approval:" in text
        assert (
            "⏳ publish.approval (for gate:publish): Ship it? → %skillnb approve publish.approval"
            in (text)
        )
        assert "%resume puts the facts back" in text
        assert "budget" not in again.user_ns  # the banner restores nothing by itself
    finally:
        again.run_line_magic("unload_ext", "skillnb")


def test_load_without_a_notebook_explains_how_to_say_where(
    bare_shell: RaisingShell, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("SKILLNB_NOTEBOOK")
    shown = len(bare_shell.display_pub.outputs)  # type: ignore[attr-defined]
    bare_shell.run_line_magic("load_ext", "skillnb")
    # No warning yet: a `%skillnb use` on the next line may settle it.
    assert len(bare_shell.display_pub.outputs) == shown  # type: ignore[attr-defined]
    with pytest.raises(NoRunLocation, match=r"%skillnb use PATH\.ipynb"):
        cell(bare_shell, "%%formalize answer\n42")
    with pytest.raises(SkillnbError, match="no notebook"):
        cell(bare_shell, f"%skillnb use {tmp_path / 'other.ipynb'}")
    assert not (tmp_path / ".skillnb").exists()
    (tmp_path / "other.ipynb").write_text("{}")
    cell(bare_shell, f"%skillnb use {tmp_path / 'other.ipynb'}")
    cell(bare_shell, "%%formalize answer\n42")
    assert (tmp_path / ".skillnb" / "other" / "journal.jsonl").exists()
    assert current_run(bare_shell).fact("answer") is not None


HOSTILE: dict[str, Callable[[str], object]] = {
    "wrong types": lambda code: {"v": 1, "run_id": 12, "state": [code], "facts": {"x": {}}},
    "script": lambda code: {"v": 1, "run_id": f"<script>{code}</script>", "facts": {}},
    "huge": lambda code: {"v": 1, "run_id": "r", "facts": {}, "padding": code * 50_000},
    "not an object": lambda code: [f"<script>{code}</script>"],
    "code": lambda code: {"v": 1, "run_id": "r", "facts": {"x": {"version": 1, "preview": code}}},
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_notebook_metadata_gives_a_warning_and_runs_nothing(
    bare_shell: RaisingShell, notebook: Path, tmp_path: Path, case: str
) -> None:
    marker = tmp_path / "pwned"
    code = f"__import__('os').system('touch {marker}')"
    hostile = HOSTILE[case](code)
    notebook.write_text(
        json.dumps(
            {"nbformat": 4, "nbformat_minor": 5, "metadata": {"skillnb": hostile}, "cells": []}
        ),
        encoding="utf-8",
    )
    bare_shell.run_line_magic("load_ext", "skillnb")
    shown = bundles(bare_shell)
    warned = [d for d in shown if d["application/vnd.skillnb.v1+json"]["status"] == "warning"]
    assert len(warned) == 1
    if case == "code":  # valid, inert text: shown as a hint, never run
        assert "recorded a run, but its sidecar is missing" in warned[0]["text/plain"]
    else:
        assert "ignoring the SKILL.nb metadata mirror" in warned[0]["text/plain"]
    assert all("<script>" not in d["text/html"] for d in shown)
    assert len(warned[0]["text/plain"]) < 2000
    assert not marker.exists()
    assert not (tmp_path / ".skillnb").exists()


def test_current_run_needs_the_extension(bare_shell: RaisingShell) -> None:
    with pytest.raises(SkillnbError, match="%load_ext skillnb"):
        current_run(bare_shell)
    with pytest.raises(SkillnbError, match="%load_ext skillnb"):
        current_run()  # the running shell (the singleton) has not loaded it either


def test_current_run_is_the_sessions_run_opened_on_first_use(ip: RaisingShell) -> None:
    session = current_session(ip)
    assert session is not None
    assert not session.run_exists()
    run = current_run()  # the running shell, as in a code cell
    assert run is session.run
    assert run.progress_factory is not None  # batch loops get a bar
    cell(ip, "%%formalize answer\n42")
    assert current_run(ip) is run
    assert run.fact("answer") is not None


def test_current_run_without_a_notebook_names_the_ways_to_say_where(
    bare_shell: RaisingShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SKILLNB_NOTEBOOK")
    bare_shell.run_line_magic("load_ext", "skillnb")
    with pytest.raises(NoRunLocation, match=r"%skillnb use PATH\.ipynb") as caught:
        current_run(bare_shell)
    assert isinstance(caught.value, SkillnbError)


def test_magic_errors_are_short_messages(ip: RaisingShell) -> None:
    with pytest.raises(SkillnbError) as caught:
        cell(ip, "%skillnb rollback nothing 3")
    lines = caught.value._render_traceback_()  # type: ignore[attr-defined]
    assert lines == ["⛔ SkillnbError: fact 'nothing' has no version 3"]
    assert len(bundles(ip)) == 0


def test_the_session_computes_the_sidecar_folder_like_the_store(ip: RaisingShell) -> None:
    from skillnb.store.sidecar.layout import sidecar_dir_for

    session = current_session(ip)
    assert session is not None
    kind, path = session.target()
    assert kind == "notebook"
    assert session.folder() == sidecar_dir_for(path)


def test_loading_imports_no_run_store_or_widgets(tmp_path: Path) -> None:
    """A bare shell's start imports nothing it does not use.

    No run, store, widgets or models; and in a shell no frontend talks to, no ``asyncio`` (no
    loop runs there), no ``comm`` (nobody opens one) and no ``psutil`` (the notebook is named).
    """
    code = (
        "import sys\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "InteractiveShell.instance().run_line_magic('load_ext', 'skillnb')\n"
        "heavy = ('skillnb.run', 'skillnb.store.sidecar.store', 'skillnb.core.runstate.records',"
        " 'pydantic', 'asyncio', 'comm', 'psutil',"
        " 'ipywidgets', 'nbformat', 'tqdm')\n"
        "print('HEAVY:' + ','.join(sorted(m for m in heavy if m in sys.modules)))\n"
    )
    env = {"SKILLNB_NOTEBOOK": str(tmp_path / "n.ipynb"), "SKILLNB_HOME": str(tmp_path / "h")}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env},
        cwd=tmp_path,
    )
    assert out.stdout.strip().splitlines()[-1] == "HEAVY:"


def test_a_saved_notebook_whose_sidecar_is_gone_gets_a_rebuild_hint(
    ip: RaisingShell, notebook: Path, tmp_path: Path
) -> None:
    import shutil

    ip.run_line_magic("config", "SkillNB.mirror_values = True")  # values, not previews
    cell(ip, "%%formalize budget\n5000")
    cell(ip, "%%formalize plan\n'go'")
    outputs = saved_outputs(ip)  # the events travel in the outputs' metadata
    code = {
        "cell_type": "code",
        "source": "",
        "metadata": {},
        "outputs": outputs,
        "execution_count": 1,
    }
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [code]}
    notebook.write_text(json.dumps(nb), encoding="utf-8")
    shutil.rmtree(tmp_path / ".skillnb")
    again = make_shell()
    try:
        again.run_line_magic("load_ext", "skillnb")
        assert last(again)["text/plain"].splitlines() == [
            "SKILL.nb · analysis.ipynb recorded a run, but its sidecar is missing",
            "version 7, 2 facts recorded in the saved notebook",
            "%resume rebuilds the run from this notebook's outputs",
        ]
        cell(again, "%resume")
        assert again.user_ns["budget"] == 5000
        assert again.user_ns["plan"] == "go"
    finally:
        again.run_line_magic("unload_ext", "skillnb")


def test_the_run_gets_a_progress_bar_factory(ip: RaisingShell) -> None:
    run = current_run(ip)
    assert run.progress_factory is not None
    assert list(run.items("files", ["a", "b"])) == ["a", "b"]
    assert list(run.items("files", ["a", "b", "c"])) == ["c"]


def test_runs_opened_bound_or_rebuilt_all_get_progress_bars(
    ip: RaisingShell, notebook: Path, tmp_path: Path
) -> None:
    import shutil

    cell(
        ip,
        "%%workflow\nworkflow:\n  name: weekly\n  states: [a, b]\n"
        "  transitions:\n    - {from: a, to: b, trigger: go}\n",
    )
    bound = current_run(ip)
    assert bound.progress_factory is not None
    cell(ip, "%%formalize budget\n5000")
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}
    nb["cells"].append(
        {
            "cell_type": "code",
            "source": "",
            "metadata": {},
            "outputs": saved_outputs(ip),
            "execution_count": 1,
        }
    )
    notebook.write_text(json.dumps(nb), encoding="utf-8")
    session = current_session(ip)
    assert session is not None
    session.close_run()
    shutil.rmtree(tmp_path / ".skillnb")
    cell(ip, "%resume")
    rebuilt = current_run(ip)
    assert rebuilt is not bound
    assert rebuilt.fact("budget") is not None
    assert rebuilt.progress_factory is not None
    # the factory the session installed: tqdm's text bar, since this shell is not a kernel's
    bar = rebuilt.progress_factory("files", 3, 1)
    try:
        assert (bar.n, bar.total, bar.desc) == (1, 3, "files")
    finally:
        bar.close()


def test_the_banner_shows_the_skill_memorys_last_operation(ip: RaisingShell) -> None:
    cell(
        ip,
        "%%workflow\nworkflow:\n  name: weekly\n  states: [a, b]\n"
        "  transitions:\n    - {from: a, to: b, trigger: go}\n",
    )
    cell(ip, "%%gate go\npass")
    again = make_shell()
    try:
        again.run_line_magic("load_ext", "skillnb")
        text = last(again)["text/plain"]
        assert text.startswith("▶ resumed weekly at state b\nworkflow weekly · state 'b'")
        assert "skill memory:\n  last: transition: go: a → b" in text
    finally:
        again.run_line_magic("unload_ext", "skillnb")
