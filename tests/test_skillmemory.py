"""Skill memory across sessions: real processes, real files, damaged files, unsafe names."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from skillnb.skillmemory import SkillMemory, SkillMemoryWarning, default_home

SKILL = "doc-extract-engine"
CST = timezone(timedelta(hours=8))
FIXED = datetime(2026, 2, 25, 11, 29, 9, 654321, tzinfo=CST)

RESUMES = ["杨彩.pdf", "姚遥.pdf", "李明.pdf", "王芳 🚀.pdf"] + [
    f"候选人{i:02d}.pdf" for i in range(23)
]


def fixed_clock() -> datetime:
    return FIXED


def run_python(code: str, home: Path, *args: str) -> str:
    """Run ``code`` in a fresh interpreter with SKILLNB_HOME=home; warnings are errors."""
    env = {**os.environ, "SKILLNB_HOME": str(home), "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-c", code, *args],
        env=env,
        capture_output=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# -- the story: day 1 and day 2 are different processes ------------------------------------

DAY_1 = """
import json, sys
from skillnb.skillmemory import SkillMemory
files = json.loads(sys.argv[1])
mem = SkillMemory("doc-extract-engine")
mem.record("batch_extract", "session_id=246 批量提取 7 份简历",
           ids={"last_session_id": 246, "last_batch_id": 374}, files=files[:7])
jupyter = ["IPython", "ipywidgets", "nbformat", "jupyter_server", "ipykernel"]
print(json.dumps({"path": str(mem.path), "jupyter": [m for m in jupyter if m in sys.modules]}))
"""

DAY_2 = """
import json, sys
from skillnb.skillmemory import SkillMemory
all_files = json.loads(sys.argv[1])
mem = SkillMemory("doc-extract-engine")
last = mem.get_last_operation()
done = set(last["files"])
print(json.dumps({
    "last": last,
    "session": mem.get_id("last_session_id"),
    "batch": mem.get_id("last_batch_id"),
    "remaining": [f for f in all_files if f not in done],
    "summary": mem.to_prompt_summary(),
}, ensure_ascii=False))
"""


def test_day_two_process_continues_where_day_one_stopped(tmp_path: Path) -> None:
    home = tmp_path / "home"
    day1 = json.loads(run_python(DAY_1, home, json.dumps(RESUMES)))
    assert Path(day1["path"]) == home / "memory" / f"{SKILL}.json"
    assert day1["jupyter"] == []  # the service layer loads no Jupyter module

    day2 = json.loads(run_python(DAY_2, home, json.dumps(RESUMES)))
    assert day2["last"]["action"] == "batch_extract"
    assert day2["last"]["summary"] == "session_id=246 批量提取 7 份简历"
    assert day2["last"]["files"] == RESUMES[:7]
    assert (day2["session"], day2["batch"]) == (246, 374)
    assert day2["remaining"] == RESUMES[7:]
    assert len(day2["remaining"]) == 20
    assert '"last_batch_id": 374' in day2["summary"]
    assert "session_id=246 批量提取 7 份简历" in day2["summary"]


def test_non_ascii_text_round_trips_unescaped(tmp_path: Path) -> None:
    mem = SkillMemory(SKILL, root=tmp_path, clock=fixed_clock)
    mem.record(
        "批量提取", "提取完成 ✅ 🚀", ids={"负责人": "杨彩 👩‍💻"}, files=["姚遥.pdf", "😀.pdf"]
    )
    raw = mem.path.read_bytes()
    for text in ["批量提取", "提取完成 ✅ 🚀", "负责人", "杨彩 👩‍💻", "姚遥.pdf", "😀.pdf"]:
        assert text.encode("utf-8") in raw
    assert b"\\u" not in raw
    again = SkillMemory(SKILL, root=tmp_path)
    assert again.get_last_operation() == {
        "action": "批量提取",
        "summary": "提取完成 ✅ 🚀",
        "timestamp": "2026-02-25T11:29:09+08:00",
        "files": ["姚遥.pdf", "😀.pdf"],
    }
    assert again.get_id("负责人") == "杨彩 👩‍💻"


def test_file_shape_matches_the_documented_format(tmp_path: Path) -> None:
    mem = SkillMemory(SKILL, root=tmp_path, clock=fixed_clock)
    mem.record("extract_one", "first", ids={"last_session_id": 245})
    mem.record("batch_extract", "second", ids={"last_batch_id": 374}, files=[Path("a/b.pdf")])
    data = json.loads(mem.path.read_text(encoding="utf-8"))
    assert list(data) == [
        "skill_name",
        "schema_version",
        "updated_at",
        "last_operation",
        "key_ids",
        "history",
    ]
    assert data["skill_name"] == SKILL
    assert data["schema_version"] == "1.0"
    assert data["updated_at"] == "2026-02-25T11:29:09+08:00"
    assert data["last_operation"] == {
        "action": "batch_extract",
        "summary": "second",
        "timestamp": "2026-02-25T11:29:09+08:00",
        "files": ["a/b.pdf"],
    }
    assert data["key_ids"] == {"last_session_id": 245, "last_batch_id": 374}
    assert [op["action"] for op in data["history"]] == ["extract_one"]


# -- concurrency -----------------------------------------------------------------------------

RECORDER = """
import sys, time
from pathlib import Path
from skillnb.skillmemory import SkillMemory
worker, max_history, go = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
mem = SkillMemory("doc-extract-engine", max_history=max_history)
while not go.exists():
    time.sleep(0.002)
for j in range(25):
    mem.record(f"extract_{worker}", f"worker {worker} item {j}", ids={f"w{worker}_k{j}": j})
"""


@pytest.mark.parametrize("max_history", [20, 150])
def test_concurrent_recorders_lose_nothing(tmp_path: Path, max_history: int) -> None:
    home, go = tmp_path / "home", tmp_path / "go"
    env = {**os.environ, "SKILLNB_HOME": str(home)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-W", "error", "-c", RECORDER, str(w), str(max_history), str(go)],
            env=env,
            stderr=subprocess.PIPE,
        )
        for w in range(4)
    ]
    time.sleep(0.3)  # let every interpreter start, then release them together
    go.touch()
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()

    data = json.loads((home / "memory" / f"{SKILL}.json").read_text(encoding="utf-8"))
    assert data["key_ids"] == {f"w{w}_k{j}": j for w in range(4) for j in range(25)}
    assert len(data["history"]) == min(99, max_history)
    operations = [*data["history"], data["last_operation"]]
    summaries = [op["summary"] for op in operations]
    assert len(set(summaries)) == len(summaries)
    for w in range(4):  # each worker's operations appear in the order it recorded them
        mine = [int(s.rsplit(" ", 1)[1]) for s in summaries if s.startswith(f"worker {w} ")]
        assert mine == sorted(mine)
    if max_history >= 99:
        assert set(summaries) == {f"worker {w} item {j}" for w in range(4) for j in range(25)}
    assert not [p.name for p in (home / "memory").iterdir() if p.name.startswith(".tmp-")]


def test_concurrent_threads_lose_nothing(tmp_path: Path) -> None:
    def work(worker: int) -> None:
        mem = SkillMemory(SKILL, root=tmp_path, max_history=5)
        for j in range(10):
            mem.record(f"t{worker}", f"thread {worker} item {j}", ids={f"t{worker}_{j}": j})

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(work, range(4)))
    mem = SkillMemory(SKILL, root=tmp_path)
    assert mem.key_ids == {f"t{w}_{j}": j for w in range(4) for j in range(10)}
    assert len(mem.get_history(100)) == 5


CRASH_BEFORE_RENAME = """
import os
from skillnb.skillmemory import SkillMemory
mem = SkillMemory("doc-extract-engine")
mem.record("kept", "written before the crash", ids={"k": 1})
def die(*args, **kwargs):
    os._exit(17)  # the process dies with the new content written to a temp file only
os.replace = die
mem.record("lost", "never acknowledged", ids={"k": 2})
"""


def test_writer_killed_before_rename_leaves_the_old_file_intact(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc = subprocess.run(
        [sys.executable, "-c", CRASH_BEFORE_RENAME],
        env={**os.environ, "SKILLNB_HOME": str(home)},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 17, proc.stderr
    folder = home / "memory"
    assert len(list(folder.glob(".tmp-*"))) == 1  # the orphan of the dead writer

    mem = SkillMemory(SKILL, root=home)
    last = mem.get_last_operation()
    assert last is not None
    assert last["action"] == "kept"
    assert mem.get_id("k") == 1
    mem.record("next", "after the crash", ids={"k": 3})
    assert list(folder.glob(".tmp-*")) == []  # cleaned up under the lock
    assert mem.get_id("k") == 3
    assert [op["action"] for op in mem.get_history()] == ["kept"]


def test_every_read_sees_what_another_writer_recorded(tmp_path: Path) -> None:
    reader = SkillMemory(SKILL, root=tmp_path)
    writer = SkillMemory(SKILL, root=tmp_path)
    assert reader.get_last_operation() is None
    writer.record("one", "first", ids={"k": 1})
    assert reader.get_id("k") == 1
    writer.record("two", "second", ids={"k": 2})
    assert reader.get_last_operation() is not None
    assert reader.key_ids == {"k": 2}
    assert [op["action"] for op in reader.get_history()] == ["one"]


# -- permissions -----------------------------------------------------------------------------

UMASK_ZERO = """
import json, os, stat
os.umask(0)
created, before_replace = [], []
real_open, real_replace = os.open, os.replace

def spy_open(path, flags, mode=0o777, *args, **kwargs):
    fd = real_open(path, flags, mode, *args, **kwargs)
    if os.path.basename(path).startswith(".tmp-"):
        created.append(stat.S_IMODE(os.fstat(fd).st_mode))
    return fd

def spy_replace(src, dst, *args, **kwargs):
    before_replace.append(stat.S_IMODE(os.stat(src).st_mode))
    return real_replace(src, dst, *args, **kwargs)

os.open, os.replace = spy_open, spy_replace
from skillnb.skillmemory import SkillMemory
mem = SkillMemory("doc-extract-engine")
mem.record("a", "first")
mem.record("b", "second")
modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in [mem.path.parent.parent,
         mem.path.parent, *mem.path.parent.iterdir()]}
print(json.dumps({"created": created, "before_replace": before_replace, "modes": modes}))
"""


def test_files_are_private_even_with_umask_zero(tmp_path: Path) -> None:
    home = tmp_path / "home"
    seen = json.loads(run_python(UMASK_ZERO, home))
    assert seen["created"] == [0o600, 0o600]  # the temp file is born 0o600
    assert seen["before_replace"] == [0o600, 0o600]
    assert seen["modes"] == {
        "home": 0o700,
        "memory": 0o700,
        f"{SKILL}.json": 0o600,
        f"{SKILL}.json.lock": 0o600,
    }


def test_existing_wide_memory_folder_is_narrowed(tmp_path: Path) -> None:
    home = tmp_path / "shared-home"
    folder = home / "memory"
    folder.mkdir(parents=True)
    for path in (home, folder):
        path.chmod(0o755)
    SkillMemory(SKILL, root=home).record("a", "b")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(home.stat().st_mode) == 0o755  # a home the user chose is left alone


# -- damaged or foreign files --------------------------------------------------------------

GOOD: dict[str, object] = {
    "skill_name": SKILL,
    "schema_version": "1.0",
    "updated_at": "2026-02-25T11:29:09+08:00",
    "last_operation": None,
    "key_ids": {},
    "history": [],
}
OP = {"action": "a", "summary": "s", "timestamp": "2026-02-25T11:29:09+08:00", "files": []}


def dumps(**changes: object) -> bytes:
    return json.dumps({**GOOD, **changes}).encode()


DAMAGED = {
    "bad json": b'{"skill_name": "doc-extract-engine", ',
    "empty": b"",
    "binary garbage": bytes(range(256)) * 4,
    "not utf-8": '{"skill_name": "é"}'.encode("latin-1"),
    "a list": b"[1, 2, 3]",
    "a string": b'"hello"',
    "missing field": json.dumps({k: v for k, v in GOOD.items() if k != "history"}).encode(),
    "unknown field": dumps(extra=1),
    "wrong type key_ids": dumps(key_ids=[1, 2]),
    "wrong type files": dumps(last_operation={**OP, "files": "a.pdf"}),
    "string for int": dumps(last_operation={**OP, "action": 5}),
    "naive timestamp": dumps(updated_at="2026-02-25T11:29:09"),
    "not a timestamp": dumps(updated_at="yesterday"),
    "newer schema": dumps(schema_version="9.0"),
    "foreign skill": dumps(skill_name="another-skill"),
    "NaN constant": b'{"skill_name": NaN}',
    "deep nesting": b"[" * 100_000 + b"]" * 100_000,
}


@pytest.mark.parametrize("content", DAMAGED.values(), ids=DAMAGED.keys())
def test_damaged_file_is_moved_aside_and_memory_starts_fresh(
    tmp_path: Path, content: bytes
) -> None:
    mem = SkillMemory(SKILL, root=tmp_path, clock=fixed_clock)
    mem.path.parent.mkdir(parents=True)
    mem.path.write_bytes(content)

    with pytest.warns(SkillMemoryWarning, match="moved it to"):
        assert mem.get_last_operation() is None
    aside = mem.path.with_name(f"{SKILL}.json.corrupt-20260225T112909+0800")
    assert aside.read_bytes() == content  # kept, never deleted
    assert not mem.path.exists()

    mem.record("batch_extract", "fresh start", ids={"last_batch_id": 1})
    assert mem.get_id("last_batch_id") == 1
    assert mem.get_history() == []


def test_damaged_file_found_by_record_is_moved_aside_and_the_record_kept(tmp_path: Path) -> None:
    mem = SkillMemory(SKILL, root=tmp_path, clock=fixed_clock)
    mem.path.parent.mkdir(parents=True)
    for attempt in range(2):  # the second one gets a distinct name at the same second
        mem.path.write_bytes(b"\x00garbage")
        with pytest.warns(SkillMemoryWarning, match="unreadable"):
            mem.record("batch_extract", f"attempt {attempt}")
        last = mem.get_last_operation()
        assert last is not None
        assert last["summary"] == f"attempt {attempt}"
    corrupt = sorted(p.name for p in mem.path.parent.glob("*.corrupt-*"))
    stamp = f"{SKILL}.json.corrupt-20260225T112909+0800"
    assert corrupt == [stamp, f"{stamp}-2"]


# -- names, inputs, history ------------------------------------------------------------------

UNSAFE = [
    ("", "empty"),
    ("a/b", "path separator"),
    ("../etc/passwd", "path separator"),
    ("a\\b", "path separator"),
    ("..", r"'\.\.'"),
    ("a..b", r"'\.\.'"),
    (".hidden", "starts with a dot"),
    ("skill.", "ends with a dot"),
    ("a\x00b", "control"),
    ("a\nb", "control"),
    ("a\u202eb", "invisible"),
    ("x" * 101, "101 characters"),
    ("a b", "contains ' '"),
    ("a:b", "contains ':'"),
    ("a*b", r"contains '\*'"),
]


@pytest.mark.parametrize(("name", "rule"), UNSAFE)
def test_unsafe_skill_names_are_rejected(tmp_path: Path, name: str, rule: str) -> None:
    with pytest.raises(ValueError, match=rule):
        SkillMemory(name, root=tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", [SKILL, "简历提取", "résumé_v2.1", "हिन्दी", "a", "x" * 100])
def test_safe_skill_names_are_accepted(tmp_path: Path, name: str) -> None:
    mem = SkillMemory(name, root=tmp_path)
    mem.record("a", "b")
    assert mem.path == tmp_path / "memory" / f"{name}.json"
    assert json.loads(mem.path.read_text(encoding="utf-8"))["skill_name"] == name


def test_skill_name_is_normalised_to_nfc(tmp_path: Path) -> None:
    decomposed = SkillMemory("re\u0301sume\u0301", root=tmp_path)
    assert decomposed.skill_name == "résumé"
    decomposed.record("a", "b", ids={"k": 1})
    assert SkillMemory("résumé", root=tmp_path).get_id("k") == 1


def test_non_string_name_and_bad_max_history_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="must be a str"):
        SkillMemory(42, root=tmp_path)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_history"):
        SkillMemory(SKILL, root=tmp_path, max_history=-1)
    with pytest.raises(TypeError, match="max_history"):
        SkillMemory(SKILL, root=tmp_path, max_history=True)


INVALID_RECORDS: list[tuple[dict[str, object], type[Exception], str]] = [
    ({"ids": {"k": {1, 2}}}, TypeError, "set"),
    ({"ids": {"k": [1, object()]}}, TypeError, r"ids\['k'\]\[1\]"),
    ({"ids": {"k": datetime.now(UTC)}}, TypeError, "datetime"),
    ({"ids": {"k": {1: "x"}}}, TypeError, "keys must be str"),
    ({"ids": {1: "x"}}, TypeError, "non-empty str"),
    ({"ids": {"": "x"}}, TypeError, "non-empty str"),
    ({"ids": [("k", 1)]}, TypeError, "mapping"),
    ({"ids": {"k": float("nan")}}, ValueError, "NaN"),
    ({"ids": {"k": float("inf")}}, ValueError, "Infinity"),
    ({"ids": {"k": "\ud800"}}, ValueError, "surrogate"),
    ({"files": "a.pdf"}, TypeError, "list of file names"),
    ({"files": [b"a.pdf"]}, TypeError, r"files\[0\]"),
    ({"files": ["a.pdf", 3]}, TypeError, r"files\[1\]"),
    ({"action": ""}, ValueError, "action"),
    ({"action": None}, TypeError, "action"),
    ({"summary": 5}, TypeError, "summary"),
]


@pytest.mark.parametrize(("changes", "error", "match"), INVALID_RECORDS)
def test_invalid_records_are_rejected_and_change_nothing(
    tmp_path: Path, changes: dict[str, object], error: type[Exception], match: str
) -> None:
    mem = SkillMemory(SKILL, root=tmp_path, clock=fixed_clock)
    mem.record("first", "kept", ids={"k": 1})
    before = mem.path.read_bytes()
    arguments: dict[str, object] = {"action": "second", "summary": "lost", **changes}
    with pytest.raises(error, match=match):
        mem.record(**arguments)  # type: ignore[arg-type]
    assert mem.path.read_bytes() == before


def test_circular_ids_are_rejected(tmp_path: Path) -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="circular"):
        SkillMemory(SKILL, root=tmp_path).record("a", "b", ids={"k": loop})


def test_ids_merge_and_reads_return_copies(tmp_path: Path) -> None:
    mem = SkillMemory(SKILL, root=tmp_path)
    mem.record("one", "a", ids={"last_session_id": 245, "owner": {"name": "杨彩"}})
    mem.record("two", "b", ids={"last_session_id": 246, "last_batch_id": (3, 7)})
    assert mem.key_ids == {
        "last_session_id": 246,
        "owner": {"name": "杨彩"},
        "last_batch_id": [3, 7],
    }
    mem.key_ids["owner"]["name"] = "changed"
    owner = mem.get_id("owner")
    owner["name"] = "changed too"
    assert mem.get_id("owner") == {"name": "杨彩"}
    assert mem.get_id("missing") is None
    assert mem.get_id("missing", default=-1) == -1


@pytest.mark.parametrize(("max_history", "kept"), [(3, 3), (0, 0), (20, 9)])
def test_max_history_is_honoured(tmp_path: Path, max_history: int, kept: int) -> None:
    mem = SkillMemory(SKILL, root=tmp_path, max_history=max_history, clock=fixed_clock)
    for i in range(10):
        mem.record(f"op{i}", f"summary {i}")
    data = json.loads(mem.path.read_text(encoding="utf-8"))
    assert [op["action"] for op in data["history"]] == [f"op{i}" for i in range(9 - kept, 9)]
    assert [op["action"] for op in mem.get_history(100)] == [
        f"op{i}" for i in range(8, 8 - kept, -1)
    ]
    assert [op["action"] for op in mem.get_history(2)] == [f"op{i}" for i in range(8, 6, -1)][:kept]
    assert mem.get_history(0) == []
    last = mem.get_last_operation()
    assert last is not None
    assert last["action"] == "op9"
    with pytest.raises(ValueError, match="n must be"):
        mem.get_history(-1)


def test_timestamps_have_seconds_and_an_offset(tmp_path: Path) -> None:
    naive = SkillMemory(SKILL, root=tmp_path, clock=lambda: datetime(2026, 2, 25, 11, 29, 9, 99))
    stamp = naive.record("a", "b")["timestamp"]
    parsed = datetime.fromisoformat(stamp)
    assert parsed.utcoffset() is not None
    assert parsed.microsecond == 0
    assert "." not in stamp
    utc = SkillMemory(SKILL, root=tmp_path, clock=lambda: datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert utc.record("a", "c")["timestamp"] == "2026-01-02T03:04:05+00:00"  # "b" repeats


def test_reads_of_a_new_memory_create_nothing(tmp_path: Path) -> None:
    mem = SkillMemory(SKILL, root=tmp_path / "home")
    assert mem.get_last_operation() is None
    assert mem.get_history() == []
    assert mem.key_ids == {}
    assert "No operations recorded yet" in mem.to_prompt_summary()
    assert not (tmp_path / "home").exists()


def test_home_comes_from_root_then_env_then_user_home(tmp_path: Path) -> None:
    env = {"SKILLNB_HOME": str(tmp_path / "env-home")}
    assert SkillMemory(SKILL, env=env).path == tmp_path / "env-home" / "memory" / f"{SKILL}.json"
    assert SkillMemory(SKILL, root=tmp_path / "r", env=env).path.parent == tmp_path / "r" / "memory"
    assert default_home({"SKILLNB_HOME": ""}) == Path.home() / ".skillnb"
    assert default_home({}) == Path.home() / ".skillnb"


def test_operations_carry_their_run_and_a_run_sees_its_own_first(tmp_path: Path) -> None:
    memory = SkillMemory("doc-extract-engine", root=tmp_path)
    memory.record("extract", "by hand")  # no run: the file keeps its documented shape
    memory.record("extract", "run A, day 1", run_id="run-a")
    memory.record("extract", "run B, day 1", run_id="run-b")
    memory.record("archive", "run A, day 2", run_id="run-a")
    stored = json.loads(next((tmp_path / "memory").glob("*.json")).read_text(encoding="utf-8"))
    assert "run_id" not in stored["history"][0]
    assert stored["last_operation"]["run_id"] == "run-a"
    assert memory.get_history(3)[0]["run_id"] == "run-b"
    text = memory.to_prompt_summary(times=False, run_id="run-a")
    own = text.index("earlier operations of this run")
    others = text.index("operations of other runs of this skill")
    assert own < text.index('"run A, day 1"') < others
    assert others < text.index('[run "run-b"]') < text.index('"run B, day 1"')
    assert '[run "unknown"]' in text  # the one recorded outside any run
    assert "run-a" not in text[others:]
