"""Batch progress bars: tqdm's notebook bar in a kernel, the text bar elsewhere, resumed counts."""

from __future__ import annotations

import io

import pytest
from tqdm.notebook import tqdm as notebook_tqdm
from tqdm.std import tqdm as text_tqdm

from skillnb.jupyter.views.progress import has_widget_frontend, install_progress, progress_factory
from skillnb.run import Run, open_run
from skillnb.store import MemoryStore


class ZMQInteractiveShell:
    """Stands for ipykernel's shell (only its class name matters)."""


class TerminalInteractiveShell:
    """Stands for a terminal IPython."""


@pytest.fixture
def run() -> Run:
    return open_run(store=MemoryStore(), user="tester", memory=False)


def test_text_bar_resumes_from_the_count_done_in_earlier_sessions(run: Run) -> None:
    items = [f"r{i}.pdf" for i in range(5)]
    first = io.StringIO()
    install_progress(run, notebook=False, file=first)
    for i, _item in enumerate(run.items("resumes", items)):
        if i == 2:
            break  # item 2 was in flight: it stays not done
    assert "2/5" in first.getvalue()

    second = io.StringIO()
    install_progress(run, notebook=False, file=second)
    seen = list(run.items("resumes", items))
    assert seen == items[2:]
    out = second.getvalue()
    assert "resumes:" in out
    assert "2/5" in out  # starts at the earlier count, not at 0/3
    assert "5/5" in out
    assert "0/3" not in out


def test_notebook_bar_is_tqdm_notebook_with_initial_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bar = progress_factory(notebook=True)("resumes", 27, 12)
    try:
        assert isinstance(bar, notebook_tqdm)
        assert (bar.n, bar.total, bar.desc) == (12, 27, "resumes")
        bar.update(1)
        assert bar.n == 13
    finally:
        bar.close()
    capsys.readouterr()  # without a kernel IPython prints the widget's repr


def test_install_picks_the_bar_from_the_shell(run: Run, capsys: pytest.CaptureFixture[str]) -> None:
    factory = install_progress(run, shell=ZMQInteractiveShell())
    assert run.progress_factory is factory
    bar = factory("b", 2, 0)
    assert isinstance(bar, notebook_tqdm)
    bar.close()
    plain = install_progress(run, shell=TerminalInteractiveShell(), file=io.StringIO())
    assert run.progress_factory is plain
    text_bar = plain("b", 2, 1)
    assert isinstance(text_bar, text_tqdm)
    assert not isinstance(text_bar, notebook_tqdm)
    text_bar.close()
    capsys.readouterr()


@pytest.mark.parametrize(
    ("shell", "expected"),
    [(None, False), (ZMQInteractiveShell(), True), (TerminalInteractiveShell(), False)],
)
def test_widget_frontend_detection(shell: object, expected: bool) -> None:
    assert has_widget_frontend(shell) is expected


def test_qt_console_gets_text_bars() -> None:
    class QtZMQInteractiveShell(ZMQInteractiveShell):
        pass

    assert has_widget_frontend(QtZMQInteractiveShell()) is False


def notebook_bars(run: Run) -> list[notebook_tqdm]:
    """Install notebook bars on ``run`` and keep each bar made, to look at it afterwards."""
    made: list[notebook_tqdm] = []
    factory = progress_factory(notebook=True)

    def keep(batch: str, total: int, done_before: int) -> notebook_tqdm:
        bar = factory(batch, total, done_before)
        made.append(bar)
        return bar

    run.progress_factory = keep
    return made


def test_a_batch_stopped_by_its_limit_is_neutral_and_red_only_on_error(
    run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    items = [f"cv-{n:02d}" for n in range(27)]
    bars = notebook_bars(run)
    assert len(list(run.items("resumes", items, limit=7))) == 7  # a planned day's share

    def fail_on_first() -> None:
        for _item in run.items("resumes", items):
            raise RuntimeError("the extractor failed")

    with pytest.raises(RuntimeError):
        fail_on_first()
    assert len(list(run.items("resumes", items))) == 20  # the rest, to the end
    capsys.readouterr()
    assert [(b.n, b.total) for b in bars] == [(7, 27), (7, 27), (27, 27)]
    assert [b.container.children[1].bar_style for b in bars] == ["info", "danger", "success"]
