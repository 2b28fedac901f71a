"""Attack: a team-store password shown in a text, whatever the URL's shape.

libpq reads the user part up to the first ``@`` before any ``/``, so a password holding an
unencoded ``#`` or ``?`` still connects; a mistyped URL makes libpq quote the whole URL in its
error. Neither may show the password: not ``repr(store)``, not ``skillnb db upgrade``, ``push``
or ``pull``, not any error.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from pg import PgServer, fresh_database, run_name
from skillnb.cli.main import main
from skillnb.errors import SkillnbError
from skillnb.run import open_run
from skillnb.store.choose import open_store
from skillnb.store.postgres.store import PostgresStore
from skillnb.store.postgres.url import password_of, redact, scrub

SECRETS = ["Se#cr3t-word", "Se?cr3t=word", "Se#c?r3t&x", "Se/cr3t#w"]  # unencoded, as typed


def _with_password(url: str, secret: str) -> str:
    """``url`` (``postgresql://postgres@/db?host=...``) with ``secret`` written unencoded."""
    assert url.startswith("postgresql://postgres@") or url.startswith("postgresql://postgres:@")
    rest = url.split("@", 1)[1]
    return f"postgresql://postgres:{secret}@{rest}"


def _hidden(secret: str, *texts: str) -> None:
    for text in texts:
        assert secret not in text
        assert "r3t" not in text  # no piece of it either (every test password holds "r3t")


@pytest.mark.parametrize("secret", SECRETS)
def test_redact_masks_a_password_holding_url_delimiters(secret: str) -> None:
    url = f"postgresql://ann:{secret}@db.example:5432/x?sslmode=require"
    shown = redact(url)
    _hidden(secret, shown)
    assert shown.startswith("postgresql://ann:***@")
    assert password_of(url) == secret
    libpq_error = f'invalid URI query parameter: "{url}"'
    _hidden(secret, scrub(libpq_error, url), redact(libpq_error))


def test_a_query_password_with_a_hash_is_masked_to_the_next_parameter() -> None:
    url = "postgresql://db/x?password=hun#ter?2&sslmode=require"
    assert redact(url) == "postgresql://db/x?password=***&sslmode=require"


def test_a_mistyped_url_keeps_the_password_out_of_the_error() -> None:
    url = "postgresql://ann:Sekr1t-pw@[::1:5432/db"
    with pytest.raises(SkillnbError) as raised:
        open_run(store=url, name="market/weekly", memory=False)
    text = str(raised.value)
    assert "Sekr1t" not in text
    assert "Sekr1t" not in repr(raised.value)
    assert "IPv6" in text  # libpq's reason is kept, only the password goes
    assert raised.value.__cause__ is None


def test_a_mistyped_url_for_a_servers_pool_is_refused_without_the_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = "postgresql://ann:Sekr1t-pw@[::1:5432/db"
    with caplog.at_level(logging.DEBUG), pytest.raises(SkillnbError) as raised:
        open_store(url, "market/weekly", pooled=True)  # as the server opens a team run
    assert "Sekr1t" not in str(raised.value)
    assert "IPv6" in str(raised.value)
    assert all("Sekr1t" not in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("secret", SECRETS[:3])
def test_the_store_and_the_team_commands_never_print_the_password(
    secret: str, tmp_path: Path, pg_server: PgServer, capsys: pytest.CaptureFixture[str]
) -> None:
    url = _with_password(fresh_database(pg_server), secret)  # trust auth: libpq still connects
    assert main(["db", "upgrade", url]) == 0
    out, err = capsys.readouterr()
    assert "schema" in out
    _hidden(secret, out, err)

    name = run_name("pw")
    with PostgresStore(url, name) as store:
        _hidden(secret, repr(store), store.location, store.url)
    with open_run(store=url, name=name, memory=False) as run:
        run.formalize("budget", 5)
        _hidden(secret, repr(run), repr(run.store), run.summary(), json.dumps(run.describe()))

    nb = tmp_path / "copy.ipynb"
    nb.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert main(["pull", name, "--from", url, "--to", str(nb)]) == 0
    out, err = capsys.readouterr()
    assert "pulled run" in out
    _hidden(secret, out, err)
    assert main(["push", str(nb), "--to", url, "--name", run_name("pw")]) == 0
    out, err = capsys.readouterr()
    assert "pushed run" in out
    _hidden(secret, out, err)
    assert main(["push", str(nb), "--to", url, "--name", name]) != 0  # taken: an error
    out, err = capsys.readouterr()
    assert err
    _hidden(secret, out, err)
