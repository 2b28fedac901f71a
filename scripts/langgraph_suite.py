"""Run LangGraph's own graph tests with SkillnbSaver as the checkpointer.

A script of the repository, not part of the package. From the repository root::

    .venv/bin/python scripts/langgraph_suite.py                  # SkillnbSaver, 2 workers
    .venv/bin/python scripts/langgraph_suite.py -n 1 --savers skillnb,sqlite  # compare
    .venv/bin/python scripts/langgraph_suite.py -- -k time_travel  # extra pytest arguments

LangGraph's PyPI sdist ships its ``tests/`` at exactly the released version. The script
downloads the sdist of the *installed* ``langgraph`` (``pip download``), keeps its
``tests/`` and ``pyproject.toml`` under ``.langgraph-suite/`` (gitignored), installs the test
dependencies there when the environment lacks them, and runs every test that requests the
``sync_checkpointer`` or ``async_checkpointer`` fixture, with those fixtures replaced by
``scripts/langgraph_suite_plugin.py`` (a fresh run in a temporary folder per test).

``NO_DOCKER=true`` leaves out what needs services: LangGraph's Postgres savers and stores
and its Redis cache. Tests that failed are run again (up to three more times, one at a
time), and reported as flaky when they then pass: a few of LangGraph's tests assert stream
timings to 0.1 s, which a loaded machine misses with any saver that writes to disk. Exit
status 0 when everything passed (at the first try or a later one).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".langgraph-suite"
TEST_DEPS = {  # module -> distribution (LangGraph's test dependencies beyond pytest)
    "pytest_mock": "pytest-mock",
    "syrupy": "syrupy",
    "pytest_repeat": "pytest-repeat",
    "pytest_dotenv": "pytest-dotenv",
    "dotenv": "python-dotenv",
    "Crypto": "pycryptodome",
    "redis": "redis",
    "requests": "requests",
    "pytest_timeout": "pytest-timeout",
    "pytest_asyncio": "pytest-asyncio",
    "xdist": "pytest-xdist",
}
NOT_RUN = (
    "postgres, postgres_pipe, postgres_pool, postgres_aio* savers and stores, the Redis cache "
    "(they need Docker services); memory_migrate_sends (a LangGraph-internal saver variant "
    "only parametrised with Docker)"
)


def _run(cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> int:
    # Our own commands (pip, pytest on this interpreter), never built from data read.
    return subprocess.run(cmd, check=False, cwd=cwd, env=env).returncode  # noqa: S603


def fetch_tests(version: str) -> Path:
    """The folder holding LangGraph ``version``'s ``tests/`` (downloaded once)."""
    folder = CACHE / f"langgraph-{version}"
    if (folder / "tests" / "conftest.py").exists():
        return folder
    downloads = CACHE / "sdist"
    pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
    if _run([*pip, f"langgraph=={version}", "-d", str(downloads)]) != 0:
        raise SystemExit(f"could not download the langgraph {version} sdist")
    sdist = downloads / f"langgraph-{version}.tar.gz"
    prefix = f"langgraph-{version}/"
    with tarfile.open(sdist) as tar:
        members = [
            m
            for m in tar.getmembers()
            if (m.name.startswith(prefix + "tests/") or m.name == prefix + "pyproject.toml")
            and (m.isfile() or m.isdir())
        ]
        tar.extractall(CACHE, members=members, filter="data")
    return folder


def test_deps() -> Path | None:
    """A folder of the test dependencies the environment lacks (installed there), or None."""
    missing = sorted({d for m, d in TEST_DEPS.items() if importlib.util.find_spec(m) is None})
    if not missing:
        return None
    target = CACHE / "deps"
    if any(not (target / m).exists() for m, d in TEST_DEPS.items() if d in missing):
        pip = [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target)]
        if _run([*pip, *missing]) != 0:
            raise SystemExit(f"could not install the test dependencies {missing}")
    return target


def _counts(report: Path) -> dict[str, list[str]]:
    """Test ids by outcome in a JUnit XML report pytest wrote."""
    out: dict[str, list[str]] = {"passed": [], "failed": [], "skipped": []}
    for case in ElementTree.parse(report).getroot().iter("testcase"):  # noqa: S314 (our own file)
        name = f"{case.get('classname')}::{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            out["failed"].append(name)
        elif case.find("skipped") is not None:
            out["skipped"].append(name)
        else:
            out["passed"].append(name)
    return out


def _pytest(folder: Path, env: dict[str, str], report: Path, args: list[str]) -> int:
    cmd = [sys.executable, "-m", "pytest", "tests", "-p", "langgraph_suite_plugin", "-q"]
    cmd += ["-c", str(folder / "pyproject.toml"), "--rootdir", str(folder)]
    cmd += ["-o", "addopts=--strict-markers --snapshot-warn-unused", "--timeout", "300"]
    cmd += ["-o", f"cache_dir={CACHE / 'pytest-cache'}", f"--junitxml={report}", "-rf"]
    cmd += ["-o", "asyncio_default_fixture_loop_scope=function"]  # pytest-asyncio's warning
    return _run([*cmd, *args], cwd=folder, env=env)


RETRIES = 3
"""How many more times the tests that failed are run, one at a time."""


def main(argv: list[str] | None = None) -> int:
    """Fetch, install, run, rerun the failures (up to ``RETRIES`` times); print the counts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", "--workers", type=int, default=2, help="pytest-xdist workers")
    parser.add_argument("--savers", default="skillnb", help="skillnb and/or LangGraph's names")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    options = parser.parse_args(argv)
    version = importlib.metadata.version("langgraph")
    CACHE.mkdir(exist_ok=True)
    folder = fetch_tests(version)
    paths = [ROOT / "skillnb_magics", ROOT / "scripts", test_deps()]
    env = {**os.environ, "NO_DOCKER": "true", "SKILLNB_LG_SAVERS": options.savers}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(p) for p in paths if p is not None] + [env.get("PYTHONPATH", "")]
    ).rstrip(os.pathsep)
    workers = ["-n", str(options.workers)] if options.workers > 1 else ["-p", "no:xdist"]
    first = CACHE / "report.xml"
    status = _pytest(folder, env, first, [*workers, *options.pytest_args])
    counts = _counts(first) if first.exists() else {"passed": [], "failed": [], "skipped": []}
    selected = sum(len(v) for v in counts.values())
    flaky: list[str] = []
    for _ in range(RETRIES):  # timing asserts that a loaded machine missed, one at a time
        if status != 1 or not counts["failed"]:
            break
        again = CACHE / "report-rerun.xml"
        status = _pytest(folder, env, again, ["--lf", "-p", "no:xdist", *options.pytest_args])
        rerun = _counts(again)
        flaky += rerun["passed"]
        counts["failed"] = rerun["failed"]
    print(  # noqa: T201 (a script's report)
        f"LangGraph {version} graph tests, savers {options.savers}: {selected} selected, "
        f"{len(counts['passed']) + len(flaky)} passed ({len(flaky)} at a later try: "
        f"{', '.join(flaky) or 'none'}), {len(counts['failed'])} failed, "
        f"{len(counts['skipped'])} skipped by LangGraph; not run without Docker: {NOT_RUN}"
    )
    return status


if __name__ == "__main__":
    sys.exit(main())
