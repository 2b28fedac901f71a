"""The stable public names exist and ``__all__`` says exactly what the package exports."""

from __future__ import annotations

import pytest

import skillnb
from skillnb import errors


def test_all_names_resolve() -> None:
    for name in skillnb.__all__:
        assert getattr(skillnb, name) is not None, name


def test_dir_matches_all() -> None:
    assert dir(skillnb) == sorted(skillnb.__all__)


def test_exception_tree() -> None:
    for name in (
        "WorkflowError",
        "GateBlocked",
        "TransitionNotAllowed",
        "ConflictError",
        "StoreCorrupted",
        "UncertainStep",
        "ApprovalError",
    ):
        assert issubclass(getattr(errors, name), errors.SkillnbError)
    err = errors.ConflictError(3, 5)
    assert (err.expected, err.actual) == (3, 5)
    assert "expected version 3" in str(err)


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        skillnb.no_such_name  # noqa: B018
