"""The Binder files install SKILL.nb into a fresh environment and point JupyterLab at notebooks/.

The test follows ``binder/`` the way repo2docker does, minus conda: a fresh virtual
environment (no system site-packages) gets the ``pip:`` entries of ``binder/environment.yml``,
then ``binder/postBuild`` runs unchanged with that environment first on ``PATH`` and a
private ``HOME``. The package must then import from the environment (not from the checkout),
and ``jupyter labextension list`` must show the prebuilt extension.
"""

from __future__ import annotations

import os
import subprocess
import venv
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BINDER = ROOT / "binder"

pytestmark = pytest.mark.slow


def _environment() -> dict[str, object]:
    data = yaml.safe_load((BINDER / "environment.yml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _pip_requirements(env: dict[str, object]) -> list[str]:
    deps = env["dependencies"]
    assert isinstance(deps, list)
    for dep in deps:
        if isinstance(dep, dict) and "pip" in dep:
            return [str(r) for r in dep["pip"]]
    return []


def test_environment_has_python_node_and_pip() -> None:
    deps = _environment()["dependencies"]
    assert isinstance(deps, list)
    names = {str(d).split("=")[0].split(">")[0] for d in deps if isinstance(d, str)}
    # Node.js builds the JupyterLab extension of a fresh clone during `pip install .`.
    assert {"python", "nodejs", "pip"} <= names
    assert any(r.startswith("jupyterlab") for r in _pip_requirements(_environment()))


def test_post_build_is_an_executable_script_that_installs_the_checkout() -> None:
    script = BINDER / "postBuild"
    assert os.access(script, os.X_OK)
    text = script.read_text(encoding="utf-8")
    assert text.startswith("#!/usr/bin/env bash")
    assert "pip install --no-cache-dir ." in text
    assert "notebooks/" in text


@pytest.mark.timeout(1800)  # a fresh venv: pip, then postBuild, on a loaded machine
def test_binder_installs_the_package_into_a_fresh_environment(tmp_path: Path) -> None:
    env_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    bin_dir = env_dir / "bin"
    python = bin_dir / "python"
    home = tmp_path / "home"
    home.mkdir()
    environ = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "VIRTUAL_ENV": str(env_dir),
        # The pip cache of the caller keeps the test to a minute or two; the installs are real.
        "PIP_CACHE_DIR": str(Path.home() / ".cache" / "pip"),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    requirements = _pip_requirements(_environment())
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *requirements],
        env=environ,
        cwd=tmp_path,
        check=True,
        timeout=900,
    )
    subprocess.run(
        ["bash", str(BINDER / "postBuild")],
        env=environ,
        cwd=tmp_path,
        check=True,
        timeout=800,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )

    probe = subprocess.run(
        [str(python), "-c", "import skillnb, sys; print(skillnb.__file__); print(sys.prefix)"],
        env=environ,
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
    )
    module_file, prefix = probe.stdout.split()
    assert Path(module_file).is_relative_to(env_dir), module_file  # installed, not the checkout
    assert Path(prefix) == env_dir

    listed = subprocess.run(
        [str(bin_dir / "jupyter"), "labextension", "list"],
        env=environ,
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
    )
    lines = (listed.stdout + listed.stderr).splitlines()
    ours = [line for line in lines if line.strip().startswith("skillnb ")]
    assert ours, "\n".join(lines)
    assert "enabled" in ours[0]
    assert "OK" in ours[0]

    config = home / ".jupyter" / "jupyter_server_config.d" / "skillnb-binder.json"
    assert "/lab/tree/notebooks/" in config.read_text(encoding="utf-8")
