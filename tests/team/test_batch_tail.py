"""The end of a team batch: a consumer waits only for items others hold, briefly at first.

A consumer takes its next item before it records the current one done, so at the end of the
batch its own last item is still held (by itself) when it finds nothing free: that is no
reason to wait or to warn. Items another consumer holds are looked at again after a short
pause that grows up to the loop's poll, so the loop ends soon after the last of them is done.
Checked on a real PostgreSQL.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from pg import PgServer, run_name
from skillnb.run import open_run
from skillnb.service import batch_rows
from skillnb.service.batch_rows import FIRST_PAUSE


def test_a_lone_consumer_neither_waits_nor_warns_about_its_own_last_item(
    pg_server: PgServer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(batch_rows, "time", SimpleNamespace(sleep=pauses.append))
    run = open_run(store=pg_server.url, name=run_name("tail"), memory=False)
    with caplog.at_level(logging.WARNING):
        assert list(run.items("tickets", ["a", "b", "c"])) == ["a", "b", "c"]
    assert pauses == []
    assert "skipped for now" not in caplog.text
    assert run.journal.refresh().batches["tickets"].done == ["a", "b", "c"]
    run.close()


def test_an_item_held_elsewhere_is_looked_at_again_sooner_first_then_at_the_poll(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skillnb.service.batches import _POLL_S

    name = run_name("held")
    run = open_run(store=pg_server.url, name=name, memory=False)
    run.formalize("seed", 1)  # the run exists: its items may have rows
    rows = run.journal.store.item_rows("tickets")  # type: ignore[attr-defined]
    rows.offer(["a", "b"], [])
    other = "elsewhere:4242:1.0"  # a consumer on another machine, its lease running
    assert rows.take(other, "the other machine", 60.0) == "a"
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 6:  # the other consumer gives its item back
            rows.release("a", other)

    monkeypatch.setattr(batch_rows, "time", SimpleNamespace(sleep=pause))
    assert list(run.items("tickets", ["a", "b"])) == ["b", "a"]
    assert pauses == [FIRST_PAUSE * 2**i for i in range(4)] + [_POLL_S, _POLL_S]
    assert run.journal.refresh().batches["tickets"].done == ["b", "a"]
    assert rows.held() == []
    run.close()
