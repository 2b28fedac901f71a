"""The journal lines of fact writes are byte for byte those of the fixture.

``tests/fixtures/journal_fact_lines_v1.jsonl`` holds the ``fact.formalized`` lines that the
writes below produced before the record path was made plain; the same writes must produce
the same bytes. Without orjson (a fresh interpreter where importing it fails) the lines are
those of ``journal_fact_lines_v1_stdlib.jsonl``: the standard library spells some floats
otherwise (``1e-05`` where orjson writes ``0.00001``), the same JSON values.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from skillnb.run import open_run

FIXTURES = Path(__file__).parent.parent / "fixtures"
FIXTURE = FIXTURES / "journal_fact_lines_v1.jsonl"
STDLIB = FIXTURES / "journal_fact_lines_v1_stdlib.jsonl"


def fact_lines(folder: Path) -> bytes:
    """Write a fixed run of facts (values of every encoding, offsets, microseconds)."""
    start = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    west = timezone(timedelta(hours=-5, minutes=-30))
    times = iter(
        [start + timedelta(seconds=i, microseconds=i * 1001) for i in range(6)]
        + [datetime(2024, 5, 2, 9, 30, tzinfo=west)] * 10
    )
    with open_run(state_dir=folder, memory=False, clock=lambda: next(times)) as run:
        run.formalize("score", 3)
        run.formalize("label", 'héllo ☃ \u2028 "quoted"', kind="decision", note="a note")
        run.formalize("table", {"rows": [1, 2.5, None, True], "nested": {"a": [[]]}})
        run.formalize("score", 4, cell_id="cell-1", source_hash="ab" * 16)
        run.formalize("big", 2**70)
        run.formalize("path", Path("/tmp/x"))  # a value, never opened
        run.formalize("floats", [1e-05, 0.1, 1e300])
    lines = (folder / "journal.jsonl").read_bytes().splitlines(keepends=True)
    return b"".join(line for line in lines if b'"type":"fact.formalized"' in line)


def test_fact_lines_are_those_of_the_fixture(tmp_path: Path) -> None:
    assert fact_lines(tmp_path / "s") == FIXTURE.read_bytes()


def test_fact_lines_without_orjson_are_those_of_the_stdlib_fixture(tmp_path: Path) -> None:
    script = (
        "import sys; sys.modules['orjson'] = None\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from pathlib import Path\n"
        "from test_journal_golden import fact_lines\n"
        f"sys.stdout.buffer.write(fact_lines(Path({str(tmp_path / 's')!r})))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, check=True, timeout=120
    )
    assert out.stdout == STDLIB.read_bytes()
