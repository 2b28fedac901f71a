"""Fixtures shared by the core tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from skillnb.run import Run, open_run


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[Run, Run]]:
    """Two handles on one sidecar run, as two kernels would hold them."""
    first = open_run(state_dir=tmp_path / "run", memory=False)
    first.formalize("seed", 0)
    second = open_run(state_dir=tmp_path / "run", memory=False)
    yield first, second
    first.close()
    second.close()
