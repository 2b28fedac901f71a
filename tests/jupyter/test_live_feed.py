"""``RunFeed``: one subscription per run, shared by its views, fed by other writers' changes."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import skillnb
from skillnb.jupyter.live import Feeds, JournalStat, RunFeed
from skillnb.jupyter.views.widgets import RunView, saved_views_message
from skillnb.run import Run

WAIT_S = 15.0


class Loop:
    """Callbacks handed to "the event loop", run when the test says so."""

    def __init__(self) -> None:
        self.calls: list[Callable[[], None]] = []

    def schedule(self, callback: Callable[[], None]) -> None:
        self.calls.append(callback)

    def run_when_called(self, timeout: float = WAIT_S) -> int:
        """Wait until a callback was handed over, then run every one; return how many."""
        deadline = time.monotonic() + timeout
        while not self.calls and time.monotonic() < deadline:
            time.sleep(0.02)
        calls, self.calls = self.calls, []
        for call in calls:
            call()
        return len(calls)


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def run(state: Path) -> Iterator[Run]:
    opened = skillnb.open_run(state_dir=state, user="kernel", memory=False)
    opened.formalize("budget", 1200)
    yield opened
    opened.close()


@pytest.fixture
def loop() -> Loop:
    return Loop()


@pytest.fixture
def feeds() -> Iterator[list[RunFeed]]:
    made: list[RunFeed] = []
    yield made
    for feed in made:
        feed.close()


def make_feed(run: Run, loop: Loop, feeds: list[RunFeed], **options: Any) -> RunFeed:
    feed = RunFeed(run, schedule=loop.schedule, refresh_interval=0.0, **options)
    feeds.append(feed)
    return feed


def test_journal_stat_moves_when_the_files_change(tmp_path: Path) -> None:
    stat = JournalStat(tmp_path, interval=0.01)
    assert stat.head() == 0  # the folder holds nothing yet: that is the starting point
    (tmp_path / "journal.jsonl").write_text("one\n")
    assert stat.head() == 1
    assert stat.head() == 1  # nothing new
    started = time.monotonic()
    assert stat.wait_for_change(1, timeout=0.1) == 1  # times out
    assert time.monotonic() - started >= 0.1
    with (tmp_path / "journal.jsonl").open("a") as journal:
        journal.write("two\n")
    assert stat.wait_for_change(1, timeout=5) == 2
    (tmp_path / "journal.jsonl").unlink()  # set aside: a change too
    assert stat.head() == 3


def test_views_share_one_feed_and_follow_another_writer(
    run: Run, state: Path, loop: Loop, feeds: list[RunFeed]
) -> None:
    feed = make_feed(run, loop, feeds)
    first, second = RunView(run, feed=feed), RunView(run, feed=feed)
    assert feed.views == [first, second]
    assert feed.watching
    follower = feed.follower
    assert follower is not None
    RunView(run, feed=feed).close()  # a third view comes and goes: still one watcher
    assert feed.follower is follower

    other = skillnb.open_run(state_dir=state, user="cli", memory=False)  # e.g. the CLI
    other.formalize("owner", "carol")
    other.close()
    assert "owner" not in first.facts.value  # nothing runs outside the loop
    assert loop.run_when_called() >= 1
    assert feed.publishes == 1  # described once for both views
    assert all("owner" in view.facts.value for view in (first, second))

    before = feed.publishes
    run.formalize("local", 1)  # this kernel's own commit: shown at once, by the subscription
    assert feed.publishes == before + 1
    loop.run_when_called(timeout=1.0)  # the watcher sees the same change: nothing more to show
    assert feed.publishes == before + 1

    first.close()
    second.stop()
    assert feed.views == []
    assert not feed.watching
    deadline = time.monotonic() + WAIT_S
    while follower.alive and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not follower.alive  # the thread ended with the last view


def test_a_view_garbage_collected_leaves_the_feed(
    run: Run, loop: Loop, feeds: list[RunFeed]
) -> None:
    feed = make_feed(run, loop, feeds)

    class Probe:
        def __init__(self) -> None:
            self.shown: list[Any] = []

        def refresh(self, view: Any = None) -> None:
            self.shown.append(view)

        def stop(self) -> None:
            raise AssertionError("not called on a view that is gone")

    probe = Probe()
    feed.add(probe)
    run.formalize("a", 1)
    assert [v["version"] for v in probe.shown] == [run.version]
    assert feed.watching
    del probe
    gc.collect()
    assert feed.views == []
    assert not feed.watching


def test_a_view_no_frontend_shows_leaves_the_feed_and_catches_up_when_shown(
    run: Run, loop: Loop, feeds: list[RunFeed]
) -> None:
    feed = make_feed(run, loop, feeds)
    view = RunView(run, feed=feed)
    view.widget._view_count = 1  # the frontend displayed it
    view.widget._view_count = 0  # its output was cleared (the cell ran again)
    assert not view.listening
    assert view.live  # not stopped: it comes back if shown again
    assert feed.views == []
    run.formalize("while_hidden", 1)
    assert "while_hidden" not in view.facts.value
    view.widget._view_count = 1
    assert view.listening
    assert "while_hidden" in view.facts.value
    view.close()


def test_feeds_make_one_feed_per_run_and_close_them(run: Run) -> None:
    sent: list[tuple[Any, list[Any]]] = []
    feeds = Feeds(published=lambda view, views: sent.append((view, views)))
    feed = feeds.feed(run)
    assert feeds.feed(run) is feed
    view = RunView(run, feed=feed)
    run.formalize("x", 1)
    [(described, views)] = sent
    assert views == [view]
    message = saved_views_message(described, views)
    assert message is not None
    assert message["models"] == [view.widget.model_id]
    assert message["data"]["text/plain"] == view.to_text()
    assert message["data"]["text/html"] == view.to_html()
    feeds.shutdown()
    assert feed.closed
    assert not view.live
    assert feeds.open == []
    assert feeds.feed(run) is not feed  # a new one on demand
    feeds.shutdown()
    view.close()
    assert saved_views_message(described, [view]) is None  # closed views get no fallback
