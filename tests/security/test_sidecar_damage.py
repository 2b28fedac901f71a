"""Damage is never silent, and every error that sends the user to ``repair`` is one it fixes.

Bit flips in complete lines (the last one included), a journal replaced by something that is
not a journal, a 0-byte journal beside a snapshot, a header without its newline: each is a
StoreCorrupted naming the file (and line), nothing is written past it, and ``skillnb repair``
then keeps every valid event, sets the damaged file aside and lets the run open again.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

import skillnb
from skillnb.core.runstate.records import Event, EventDraft, RunState
from skillnb.errors import SkillnbError, StoreCorrupted
from skillnb.store import SidecarStore
from skillnb.store.folders.repair import LOST_EVENT_TYPE, repair
from skillnb.store.sidecar import journal as journal_module
from skillnb.store.sidecar.journal import EventRejected, encode_events

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
RUN = "run-damage"


def draft(type_: str, **data: object) -> EventDraft:
    return EventDraft(type=type_, at=NOW, data=data)


def fill(folder: Path, n: int = 6) -> list[str]:
    """A run with ``n`` events after run.created; return the event types in order."""
    with SidecarStore(folder) as store:
        store.append([draft("run.created", run_id=RUN)], expected_version=0)
        for i in range(n):
            store.append([draft(f"fact{i}", i=i)], expected_version=i + 1)
    return ["run.created", *(f"fact{i}" for i in range(n))]


def flip_bit(path: Path, line: int) -> None:
    """Flip the low bit of one letter inside line ``line`` (1-based) of ``path``."""
    raw = path.read_bytes().splitlines(keepends=True)
    target = raw[line - 1]
    at = target.index(b'"type":"') + len(b'"type":"')  # a lowercase letter: never a newline
    raw[line - 1] = target[:at] + bytes([target[at] ^ 1]) + target[at + 1 :]
    path.write_bytes(b"".join(raw))


def journal(folder: Path) -> Path:
    return folder / "journal.jsonl"


def types(folder: Path) -> list[str]:
    with SidecarStore(folder) as store:
        return [e.type for e in store.history()]


@pytest.mark.parametrize("where", ["last complete line", "middle"])
def test_a_bit_flip_is_corruption_then_repair_keeps_every_valid_event(
    tmp_path: Path, where: str
) -> None:
    folder = tmp_path / ".skillnb" / "nb"
    expected = fill(folder)
    header_lines = 1  # the journal starts with a header naming the run
    line = header_lines + (len(expected) if where == "last complete line" else 3)
    flip_bit(journal(folder), line)
    damaged = journal(folder).read_bytes()
    for read in (lambda s: s.head(), lambda s: s.load(), lambda s: list(s.history())):
        with SidecarStore(folder) as store, pytest.raises(StoreCorrupted) as raised:
            read(store)
        assert raised.value.path == journal(folder)
        assert raised.value.line == line
        assert "skillnb repair" in str(raised.value)
    with SidecarStore(folder) as store, pytest.raises(StoreCorrupted):
        store.append([draft("next")], expected_version=len(expected))  # no reused seq
    assert journal(folder).read_bytes() == damaged

    report = repair(folder)
    [fixed] = report.files
    assert fixed.moved_to.read_bytes() == damaged  # the damaged file is kept, not deleted
    assert fixed.damaged_lines == (line,)
    lost = line - header_lines
    assert fixed.lost == (lost,)
    after = types(folder)
    assert after == [LOST_EVENT_TYPE if i == lost - 1 else t for i, t in enumerate(expected)]
    with SidecarStore(folder) as store:  # the run goes on after its last sequence number
        assert store.run_id() == RUN
        assert (
            store.append([draft("next")], expected_version=len(expected))[0].seq
            == len(expected) + 1
        )


@pytest.mark.parametrize("content", [b"[1,2,3]\n", b"[1,2,3]", b"my notes\nabout it\n", b"hi"])
def test_a_file_that_is_not_a_journal_is_refused_then_set_aside(
    tmp_path: Path, content: bytes
) -> None:
    folder = tmp_path / ".skillnb" / "nb"
    folder.mkdir(parents=True)
    journal(folder).write_bytes(content)
    with SidecarStore(folder) as store:
        for read in (store.head, store.load, store.exists):
            with pytest.raises(StoreCorrupted, match=r"not a SKILL\.nb journal") as raised:
                read()
            assert raised.value.path == journal(folder)
        with pytest.raises(StoreCorrupted, match=r"not a SKILL\.nb journal"):
            store.append([draft("run.created", run_id="fresh")], expected_version=0)
    with pytest.raises(StoreCorrupted, match=r"not a SKILL\.nb journal"):
        skillnb.open_run(state_dir=folder, memory=False)  # never a fresh run over it
    assert journal(folder).read_bytes() == content

    report = repair(folder)
    [fixed] = report.files
    assert fixed.moved_to.read_bytes() == content
    assert journal(folder).read_bytes() == b""
    run = skillnb.open_run(state_dir=folder, memory=False)
    run.formalize("x", 1)
    assert run.fact("x") is not None


def compacted(folder: Path) -> int:
    """A run compacted at its head (snapshot + segment + header-only journal)."""
    fill(folder, 3)
    with SidecarStore(folder) as store:
        head = store.head()
        store.compact(RunState(run_id=RUN, version=head))
    return head


def opening_sends_to_repair(folder: Path) -> None:
    with pytest.raises(SkillnbError) as raised:
        skillnb.open_run(state_dir=folder, memory=False)
    assert "skillnb repair" in str(raised.value)
    result = subprocess.run(
        [sys.executable, "-m", "skillnb", "repair", "--state-dir", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "nothing to repair" not in result.stdout


@pytest.mark.parametrize("damage", ["0-byte journal", "header without newline"])
def test_what_open_sends_to_repair_repair_fixes(tmp_path: Path, damage: str) -> None:
    folder = tmp_path / ".skillnb" / "nb"
    head = compacted(folder)
    raw = journal(folder).read_bytes()
    journal(folder).write_bytes(b"" if damage == "0-byte journal" else raw.rstrip(b"\n"))
    opening_sends_to_repair(folder)
    with SidecarStore(folder) as store:
        assert store.head() == head
        assert store.run_id() == RUN
        assert len(list(store.history())) == head
    run = skillnb.open_run(state_dir=folder, memory=False)
    assert run.version == head
    run.formalize("after", 1)
    assert run.version == head + 1
    assert list(folder.glob("journal.jsonl.damaged-*"))


def sized_event(size: int) -> Event:
    """An event whose journal line (newline excluded) is exactly ``size`` bytes."""
    event = Event(seq=1, type="note", at=NOW, data={"pad": ""})
    base = len(encode_events([event])) - 1
    return event.model_copy(update={"data": {"pad": "x" * (size - base)}})


def test_writer_and_reader_agree_on_the_line_limit_to_the_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "MAX_LINE_BYTES", 4096)
    folder = tmp_path / "state"
    fits, over = sized_event(4096), sized_event(4097)
    assert len(encode_events([fits])) == 4097  # the line and its newline
    with SidecarStore(folder) as store:
        with pytest.raises(EventRejected, match="4097 bytes as a journal line") as raised:
            store.append([EventDraft(type="note", at=NOW, data=over.data)], expected_version=0)
        assert isinstance(raised.value, SkillnbError)
        assert not journal(folder).exists()  # refused before anything was written
        store.append([EventDraft(type="note", at=NOW, data=fits.data)], expected_version=0)
    with SidecarStore(folder) as again:  # acknowledged, so readable after reopening
        [event] = again.load().events
        assert event.data == fits.data


def test_a_torn_final_fragment_warns_where_its_bytes_went(tmp_path: Path) -> None:
    folder = tmp_path / ".skillnb" / "nb"
    fill(folder, 2)
    torn = b'{"v":1,"seq":4,"type":"half'
    with journal(folder).open("ab") as f:
        f.write(torn)
    with SidecarStore(folder) as store:
        with pytest.warns(UserWarning, match="ignoring 27 bytes"):
            assert store.head() == 3
        with pytest.warns(UserWarning, match=r"moved 27 bytes .* to (\S+)") as warned:
            store.append([draft("next")], expected_version=3)
    kept = Path(str(warned[0].message).split(" to ")[1].split(";")[0])
    assert kept.read_bytes() == torn
    assert kept.parent == folder
    assert json.loads(journal(folder).read_bytes().splitlines()[-1])["seq"] == 4
