"""A papermill engine that binds the run to papermill's *input* notebook (edge layer).

``papermill --engine skillnb in.ipynb out.ipynb`` (or ``engine_name="skillnb"`` in
``papermill.execute_notebook``) runs the notebook exactly as papermill's default nbclient
engine does, with ``SKILLNB_NOTEBOOK`` set to the input's absolute path in the kernel's
environment: the run is the one in ``.skillnb/<stem>/`` beside the input, whatever folder
papermill runs in and wherever the output goes. The engine is registered through papermill's
``papermill.engine`` entry point. Without it, a kernel started by the ``papermill`` command
still finds the input by reading its parent's command line (see
:mod:`skillnb.jupyter.discovery`); the engine also covers the Python API.

The kernel starts in the input notebook's folder, as in JupyterLab, ``skillnb run`` and
nbval, so a notebook that imports a module beside it or reads ``data/`` works from any
folder; ``--cwd DIR`` (``cwd=`` in the Python API) still chooses another one. papermill does
not hand ``cwd`` to its engines, so the engine reads it from papermill's
``execute_notebook`` call on the stack; papermill changes into that folder itself.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from papermill.clientwrap import PapermillNotebookClient
from papermill.engines import NBClientEngine
from papermill.utils import merge_kwargs, remove_args

__all__ = ["SkillnbEngine", "kernel_env"]


def _local_input(input_path: Any) -> Path | None:
    """The input notebook's absolute path, when it is a local ``.ipynb`` file."""
    text = str(input_path) if input_path is not None else ""
    if text.endswith(".ipynb") and "://" not in text:
        return Path(text).expanduser().resolve()
    return None


def kernel_env(input_path: Any, env: dict[str, str] | None = None) -> dict[str, str]:
    """The kernel's environment: the caller's, plus ``SKILLNB_NOTEBOOK`` for a local input."""
    base = dict(os.environ if env is None else env)
    local = _local_input(input_path)
    if local is not None:
        base["SKILLNB_NOTEBOOK"] = str(local)
    return base


def _cwd_given() -> bool:
    """Tell whether papermill's ``execute_notebook`` on the stack was given a ``cwd``."""
    from papermill.execute import execute_notebook

    code = getattr(execute_notebook, "__code__", None)
    frame: FrameType | None = sys._getframe(1)  # papermill keeps cwd to itself: read its frame
    while frame is not None:
        if frame.f_code is code:
            return frame.f_locals.get("cwd") is not None
        frame = frame.f_back
    return False


def kernel_folder(input_path: Any) -> str | None:
    """The folder the kernel starts in: the input's, unless papermill was given a ``cwd``."""
    local = _local_input(input_path)
    if local is None or _cwd_given():
        return None  # papermill's own choice: its cwd, or the caller's folder
    return str(local.parent)


class SkillnbEngine(NBClientEngine):  # type: ignore[misc]  # papermill is untyped
    """papermill's nbclient engine, with the kernel told which notebook it runs."""

    @classmethod
    def execute_managed_notebook(
        cls,
        nb_man: Any,
        kernel_name: str,
        log_output: bool = False,
        stdout_file: Any = None,
        stderr_file: Any = None,
        start_timeout: int = 60,
        execution_timeout: int | None = None,
        **kwargs: Any,
    ) -> Any:
        """Execute as :class:`papermill.engines.NBClientEngine` does, bound to the input."""
        env = kernel_env(kwargs.get("input_path"))
        folder = kernel_folder(kwargs.get("input_path"))
        if folder is not None and "resources" not in kwargs:
            kwargs["resources"] = {"metadata": {"path": folder}}  # nbclient's kernel cwd
        kwargs = remove_args(["input_path"], **kwargs)
        safe_kwargs = remove_args(["timeout", "startup_timeout"], **kwargs)
        final_kwargs = merge_kwargs(
            safe_kwargs,
            timeout=execution_timeout if execution_timeout else kwargs.get("timeout"),
            startup_timeout=start_timeout,
            kernel_name=kernel_name,
            log=_logger(),
            log_output=log_output,
            stdout_file=stdout_file,
            stderr_file=stderr_file,
        )
        return PapermillNotebookClient(nb_man, **final_kwargs).execute(env=env)


def _logger() -> Any:
    from papermill.log import logger

    return logger
