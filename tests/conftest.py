"""Fixtures shared by every test layer."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pg"]


@pytest.fixture(autouse=True)
def skillnb_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Keep skill memory and user settings out of the real home directory."""
    home = tmp_path_factory.mktemp("skillnb-home")
    monkeypatch.setenv("SKILLNB_HOME", str(home))
    monkeypatch.setenv("SKILLNB_USER", "tester")
    monkeypatch.delenv("SKILLNB_NOTEBOOK", raising=False)
    monkeypatch.delenv("SKILLNB_STORE", raising=False)
    return home
