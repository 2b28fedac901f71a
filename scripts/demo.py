"""The headless demo: 27 résumés extracted over two working days with ``skillnb run``.

A script of the repository, not part of the package. Run it from a checkout after
``scripts/setup.sh`` (``scripts/demo.sh`` does both)::

    .venv/bin/python scripts/demo.py

It recreates ``demo-run/`` at the repository root, copies ``notebooks/resume_batch.ipynb`` with
its résumés and extractor into it, and runs the notebook headless twice, with a private
``SKILLNB_HOME`` inside that folder:

* day 1, ``SKILLNB_DAILY_QUOTA=7 skillnb run resume_batch.ipynb``: seven résumés are
  extracted, then the supervisor's coverage gate blocks the archive (exit code 3);
* day 2, ``skillnb run resume_batch.ipynb``: the seven are not extracted again, the other
  twenty are, the gate passes and the batch is archived (exit code 0).

Then it prints ``skillnb summary`` and ``skillnb memory doc-extract-engine``, and checks that
every résumé was extracted once and completed exactly once (with no crash, at-least-once
execution runs each body once). Exit status: 0 when everything happened as described.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
WORK = ROOT / "demo-run"
NOTEBOOK = "resume_batch.ipynb"
SKILL = "doc-extract-engine"
QUOTA = "7"
LOG = Path("out") / "extractions.log"
_KERNEL_NOISE = ("[IPKernelApp] WARNING | Kernel is running over TCP",)


def say(text: str = "") -> None:
    """Write a line of the demo's report."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def heading(title: str) -> None:
    """Write a section heading."""
    say()
    say(f"== {title} " + "=" * max(0, 76 - len(title)))


def prepare() -> dict[str, str]:
    """Recreate the work folder with the notebook, its data and extractor; return the env."""
    if WORK.exists():
        shutil.rmtree(WORK)
    WORK.mkdir()
    shutil.copy2(NOTEBOOKS / NOTEBOOK, WORK / NOTEBOOK)
    shutil.copy2(NOTEBOOKS / "resume_extractor.py", WORK / "resume_extractor.py")
    shutil.copytree(NOTEBOOKS / "data" / "resumes", WORK / "data" / "resumes")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLNB_", "JPY_"))}
    env["SKILLNB_HOME"] = str(WORK / "home")
    return env


def skillnb(args: list[str], env: dict[str, str]) -> int:
    """Run the ``skillnb`` command in the work folder, echo its output, return its exit code."""
    say("$ " + " ".join(["skillnb", *args]))
    result = subprocess.run(  # noqa: S603  # our own CLI, with fixed arguments
        [sys.executable, "-m", "skillnb", *args],
        cwd=WORK,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    for line in (result.stdout + result.stderr).splitlines():
        if not line.startswith(_KERNEL_NOISE):
            say("  " + line)
    return result.returncode


def extracted() -> list[tuple[str, str]]:
    """(session, résumé) for every extraction so far, in order, from the notebook's log."""
    path = WORK / LOG
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(session, name) for session, name in (line.split("\t", 1) for line in lines)]


def report_day(before: int) -> list[tuple[str, str]]:
    """Say what this day extracted; return those extractions."""
    today = extracted()[before:]
    sessions = sorted({session for session, _ in today})
    say(f"extracted today: {len(today)} ({', '.join(sessions) or 'none'})")
    for _, name in today:
        say(f"  - {Path(name).stem}")
    return today


def day(number: int, env: dict[str, str], quota: str | None) -> tuple[int, int]:
    """Run one working day; return (exit code, résumés extracted that day)."""
    before = len(extracted())
    if quota is None:
        heading(f"Day {number}: skillnb run {NOTEBOOK}")
        code = skillnb(["run", NOTEBOOK], env)
    else:
        heading(f"Day {number}: SKILLNB_DAILY_QUOTA={quota} skillnb run {NOTEBOOK}")
        code = skillnb(["run", NOTEBOOK], {**env, "SKILLNB_DAILY_QUOTA": quota})
    meaning = {0: "finished", 3: "waiting: stopped at a gate"}.get(code, "error")
    say(f"exit code {code} ({meaning})")
    return code, len(report_day(before))


def verify(day1: tuple[int, int], day2: tuple[int, int]) -> bool:
    """Check the story: 3 then 0, 7 then 20, each résumé extracted once, completed once."""
    heading("Check")
    names = Counter(name for _, name in extracted())
    total = len(list((WORK / "data" / "resumes").glob("*.txt")))
    once = len(names) == total and set(names.values()) == {1}
    twice = sorted(name for name, count in names.items() if count > 1)
    checks = [
        (
            day1 == (3, 7),
            "day 1 extracted 7 résumés and stopped at the coverage gate (exit 3)",
            f"exit {day1[0]} after {day1[1]} résumés",
        ),
        (
            day2 == (0, 20),
            "day 2 extracted the other 20 and archived the batch (exit 0)",
            f"exit {day2[0]} after {day2[1]} résumés",
        ),
        (
            once,
            f"each of the {total} résumés was extracted once and completed exactly once",
            f"{len(names)} extracted, more than once: {', '.join(twice) or 'none'}",
        ),
    ]
    for passed, text, got in checks:
        say(f"✓ {text}" if passed else f"✗ {text} (got: {got})")
    return all(passed for passed, _, _ in checks)


def main() -> int:
    """Run the two-day demo; return 0 when it went as described."""
    heading("SKILL.nb demo: 27 résumés, two working days, one durable run")
    env = prepare()
    say(f"work folder: {WORK.relative_to(ROOT)}/ (recreated), SKILLNB_HOME inside it")
    day1 = day(1, env, QUOTA)
    heading(f"Between the days: skillnb status {NOTEBOOK}")
    skillnb(["status", NOTEBOOK], env)
    day2 = day(2, env, None)
    heading(f"skillnb summary {NOTEBOOK}")
    skillnb(["summary", NOTEBOOK], env)
    heading(f"skillnb memory {SKILL}")
    skillnb(["memory", SKILL], env)
    return 0 if verify(day1, day2) else 1


if __name__ == "__main__":
    sys.exit(main())
