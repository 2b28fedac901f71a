"""A consumer's completion on a run others wrote to meanwhile: caught up by its take.

A consumer of a team batch takes its next item before it records the current one done, and
the take also reads what was committed since the consumer's journal version: the completion
then commits on the current head, without a refused append and its retry. Checked on a real
PostgreSQL by counting the completion statements and the events written.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from pg import PgServer, run_name
from skillnb.run import Run, open_run


def _completions(sent: list[str]) -> int:
    """Append statements that may complete an item (they update ``skillnb_items``)."""
    return sum(s.startswith("WITH k AS MATERIALIZED") and "UPDATE skillnb_items" in s for s in sent)


def _consuming(pg_server: PgServer, prefix: str) -> tuple[str, Run, Iterator[str]]:
    """A new team run, and its consumer of batch ``tickets`` (a, b, c) holding ``a``."""
    name = run_name(prefix)
    run = open_run(store=pg_server.url, name=name, memory=False)
    items = iter(run.items("tickets", ["a", "b", "c"]))
    assert next(items) == "a"
    return name, run, items


def test_a_completion_after_another_writer_is_not_refused(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, run, items = _consuming(pg_server, "catch-up")
    other = open_run(store=pg_server.url, name=name, memory=False)
    other.formalize("k", 1)  # the run moves on: the consumer's journal is one behind
    other.formalize("k", 2)
    sent: list[str] = []
    original = psycopg.Connection.execute

    def execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(" ".join((query.decode() if isinstance(query, bytes) else str(query)).split()))
        return original(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "execute", execute)
    assert next(items) == "b"  # takes b, catching up, then records a done
    monkeypatch.undo()
    assert _completions(sent) == 1  # one statement: not refused, not retried
    assert not any(s.startswith("SELECT head, missed") for s in sent)
    assert list(items) == ["c"]
    assert other.journal.refresh().batches["tickets"].done == ["a", "b", "c"]
    assert [e.type for e in other.history(3)] == ["batch.item_done"] * 3
    facts = [e for e in other.history(10) if e.type == "fact.formalized"]
    assert len(facts) == 2  # the other writer's events stay, in their place
    run.close()
    other.close()


def test_a_completion_that_fails_gives_back_the_item_it_took_first(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, run, items = _consuming(pg_server, "give-back")

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise OSError("the completion failed")

    monkeypatch.setattr(type(run.journal), "commit", refuse)
    with pytest.raises(OSError, match="the completion failed"):
        next(items)  # took b first, then failed to record a done
    monkeypatch.undo()
    store = run.journal.store
    assert store.item_rows("tickets").held() == []  # neither a nor b is held any more
    again = open_run(store=pg_server.url, name=name, memory=False)
    assert list(again.items("tickets", ["a", "b", "c"])) == ["a", "b", "c"]
    run.close()
    again.close()
