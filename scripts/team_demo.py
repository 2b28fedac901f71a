"""Two hands on one run in PostgreSQL: a scheduler waits, an editor approves from elsewhere.

Run with ``.venv/bin/python scripts/team_demo.py``. It starts a throwaway PostgreSQL 16 with
pgserver (in a temporary folder, removed at the end), then:

1. the "scheduler" (this process) drafts the weekly report and stops at the approval gate;
2. a watcher waits for changes with LISTEN/NOTIFY (no polling) and prints each one;
3. the "editor" approves from another process, with the ``skillnb`` CLI and ``--store``;
4. the scheduler runs the gate again: it passes, the report is published;
5. the run's history shows who did what.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pgserver

import skillnb
from skillnb.store.postgres.store import PostgresStore

WORKFLOW = """
workflow:
  name: weekly_report
  states: [draft, review, published]
  transitions:
    - {from: draft, to: review, trigger: submit, gates: [has_budget]}
    - {from: review, to: published, trigger: publish, gates: [editor_ok]}
  gates:
    has_budget: {requires: [budget]}
    editor_ok: {approval: "Publish the weekly report?"}
"""
NAME = "market/weekly"


def say(text: str) -> None:
    """Print one line of the demo's story."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def watch(url: str, ready: threading.Event, stop: threading.Event) -> None:
    """Print each change of the run as it is committed, woken by NOTIFY."""
    with PostgresStore(url, NAME) as store:
        seen = store.head()
        store.wait_for_change(seen, timeout=0)  # listening from here on
        ready.set()
        while not stop.is_set():
            store.wait_for_change(seen, timeout=0.5)
            for event in store.read_since(seen):
                say(f"   [watcher] v{event.seq} {event.type}")
                seen = event.seq


def main() -> int:
    """Play the story on a fresh server; return the exit code."""
    with tempfile.TemporaryDirectory(prefix="skillnb-team-") as folder:
        server = pgserver.get_server(Path(folder), cleanup_mode="stop")
        url = str(server.get_uri())
        say(f"PostgreSQL 16 at {url}")
        ready, stop = threading.Event(), threading.Event()
        watcher = threading.Thread(target=watch, args=(url, ready, stop), daemon=True)
        run = skillnb.open_run(
            store=url, name=NAME, workflow=skillnb.Workflow.from_yaml(WORKFLOW), memory=False
        )
        watcher.start()
        ready.wait(30)
        say("1. scheduler: budget, submit, publish")
        run.formalize("budget", 1200, kind="decision")
        run.fire("submit")
        outcome = run.gates.run_gated("publish", lambda: "published", on_block="skip", subject=run)
        say(f"   publish: {outcome.status} (waiting for the editor)")
        say("2. editor, in another process: skillnb approve ... --store URL")
        subprocess.run(  # noqa: S603  # our own interpreter and arguments
            [
                sys.executable,
                "-m",
                "skillnb",
                "approve",
                NAME,
                "editor_ok",
                "--by",
                "editor",
                "--note",
                "numbers checked",
                "--store",
                url,
            ],
            check=True,
            env={**os.environ, "SKILLNB_USER": "editor"},
        )
        say("3. scheduler again")
        outcome = run.gates.run_gated("publish", lambda: "published", on_block="skip", subject=run)
        say(f"   publish: {outcome.status}; state {run.state}")
        stop.set()
        watcher.join()
        say("4. the run's history")
        subprocess.run(  # noqa: S603  # our own interpreter and arguments
            [sys.executable, "-m", "skillnb", "history", NAME, "--store", url, "-n", "12"],
            check=True,
        )
        run.store.close()
        server.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
