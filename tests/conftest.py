"""Fixtures shared by every test layer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


@pytest.fixture(autouse=True)
def views_fit_the_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    """Check every ``run.describe()`` a test makes in this process against the contract.

    ``describe()`` itself does not build the pydantic models (it is on every view's hot
    path); here each view it returns is validated, so a field added to it and not to
    :mod:`skillnb.core.contract.view` fails the tests that touch it.
    """
    import skillnb.run
    from skillnb.core.contract.view import RunDescription

    describe = skillnb.run.describe

    def checked(*args: Any, **kwargs: Any) -> dict[str, Any]:
        view = describe(*args, **kwargs)
        RunDescription.model_validate(view)
        return view

    monkeypatch.setattr(skillnb.run, "describe", checked)
