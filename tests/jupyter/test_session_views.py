"""Every ``RunView`` the session shows follows the run through the run's one feed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.displaypub import CapturingDisplayPublisher
from shellkit import RaisingShell, cell
from traitlets.config import Config

from skillnb.errors import GateBlocked
from skillnb.jupyter.extension import current_session
from skillnb.jupyter.session import NotebookSession
from skillnb.jupyter.views.widgets import RunView

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


class ZMQInteractiveShell(RaisingShell):
    """Named like ipykernel's shell, so the session takes it for a kernel with widgets."""


@pytest.fixture
def kernel_shell(notebook: Path) -> Iterator[ZMQInteractiveShell]:
    """A kernel-like shell (the running one) with ``%load_ext skillnb`` done."""
    ZMQInteractiveShell.clear_instance()
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = ZMQInteractiveShell.instance(config=config)
    shell.display_pub = CapturingDisplayPublisher()
    shell.run_line_magic("load_ext", "skillnb")
    yield shell
    shell.run_line_magic("unload_ext", "skillnb")
    ZMQInteractiveShell.clear_instance()


def _session(shell: RaisingShell) -> NotebookSession:
    session = current_session(shell)
    assert session is not None
    return session


def _widget_outputs(shell: RaisingShell) -> int:
    return sum(WIDGET_MIME in o["data"] for o in shell.display_pub.outputs)


def test_every_view_follows_the_run_through_one_feed(
    kernel_shell: ZMQInteractiveShell, tmp_path: Path
) -> None:
    session = _session(kernel_shell)
    shown: list[RunView] = []

    def latest() -> RunView:
        view = session.view
        assert view is not None
        if view not in shown:
            shown.append(view)
        return view

    try:
        cell(kernel_shell, "%%formalize budget\n1200")
        cell(kernel_shell, "%skillnb status")
        first = latest()
        cell(kernel_shell, "%skillnb status")
        second = latest()
        cell(kernel_shell, "%resume")  # one output of the run as resumed: no live view
        cell(kernel_shell, "%skillnb status")
        third = latest()
        with pytest.raises(GateBlocked):
            # a block that waits for a person shows the view (its Approve buttons)
            cell(kernel_shell, "%%gate --name ship --approval 'Ship it?'\npass")
        blocked = latest()
        assert len(set(map(id, shown))) == 4
        assert all(view.live for view in shown)
        assert _widget_outputs(kernel_shell) == 4
        [feed] = session.feeds.open  # one subscription for the run, not one per view
        assert feed.views == shown
        assert {id(view.feed) for view in shown} == {id(feed)}

        before = feed.publishes
        code = "from skillnb.jupyter.extension import current_run\n"
        cell(kernel_shell, code + "current_run().formalize('owner', 1)")
        assert all("owner" in view.facts.value for view in shown)  # every view follows
        assert feed.publishes == before + 1  # the run was described once for all of them

        second.close()
        assert second not in feed.views
        third.stop()
        assert not third.live
        assert feed.views == [first, blocked]
        third.refresh_button.click()  # a stopped view stays usable

        (tmp_path / "other.ipynb").write_text("{}")
        cell(kernel_shell, f"%skillnb use {tmp_path / 'other.ipynb'}")
        assert feed.closed  # the run it followed is no longer the session's
        assert not blocked.live
        assert session.feeds.open == []
    finally:
        for view in shown:
            view.close()


def test_no_view_without_widgets(kernel_shell: ZMQInteractiveShell) -> None:
    cell(kernel_shell, "%config SkillNB.widgets = False")
    cell(kernel_shell, "%skillnb status")
    assert _session(kernel_shell).view is None
    assert _widget_outputs(kernel_shell) == 0
