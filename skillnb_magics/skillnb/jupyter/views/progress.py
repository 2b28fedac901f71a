"""Progress bars for durable batches (Jupyter edge).

``run.items("resumes", files)`` asks ``run.progress_factory(batch, total, done_before)`` for a
bar before its loop; :func:`install_progress` sets that factory to tqdm's notebook bar (a
widget) in a kernel with a widget frontend, and to tqdm's plain text bar elsewhere. The bar
starts at the count already done in earlier sessions, so a resumed batch reads "12/27" from
its first item, not "0/15". A notebook bar carries a saved form ("resumes: 7/27 done") for
notebooks reopened without its widget model.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import IO, TYPE_CHECKING, Any

from skillnb.jupyter.views.asof import run_moment
from skillnb.jupyter.views.savedform import FormChannel, SavedForm

if TYPE_CHECKING:
    from skillnb.run import Run

__all__ = [
    "ProgressFactory",
    "bar_text",
    "has_widget_frontend",
    "install_progress",
    "progress_factory",
]

ProgressFactory = Callable[[str, int, int], Any]
"""``factory(batch, total, done_before)`` returns a bar with ``update(n)`` and ``close()``."""

_KERNEL_SHELLS = ("ZMQInteractiveShell",)


def has_widget_frontend(shell: object) -> bool:
    """Tell whether ``shell`` is a kernel's shell, whose frontend can show widgets.

    A terminal IPython, a plain script (``shell`` is ``None``) or a Qt console gets text bars.
    """
    if shell is None:
        return False
    names = {cls.__name__ for cls in type(shell).__mro__}
    return (
        any(name in names for name in _KERNEL_SHELLS) and "qt" not in type(shell).__name__.lower()
    )


def _notebook_bar_class() -> Any:
    """The notebook bar of tqdm: neutral when stopped as planned, readable when saved.

    tqdm paints a bar closed before its total red ("danger"), as for an error. A batch loop
    that ends at its ``limit`` (a day's share) calls ``planned_stop()`` first: the bar then
    ends in the neutral ``info`` style; it stays red only when the loop failed.

    The bar is displayed with a saved form ("resumes: 7/27 done"): a notebook reopened
    without the widget's model shows that line, not "model not found". The form follows the
    count through the ``skillnb.view`` comm (at most every half second, and when the bar closes).
    """
    from IPython.display import display
    from tqdm.notebook import tqdm as notebook_tqdm
    from tqdm.std import tqdm as std_tqdm

    class BatchBar(notebook_tqdm):  # type: ignore[misc]
        planned = False
        form: SavedForm | None = None
        _said_at = 0.0

        def __init__(
            self,
            *args: Any,
            channel: FormChannel | None = None,
            as_of: Callable[[], Mapping[str, Any]] | None = None,
            **kwargs: Any,
        ) -> None:
            kwargs["display"] = False
            super().__init__(*args, **kwargs)
            if getattr(self, "disable", False) or not hasattr(self, "container"):
                return
            self.form = SavedForm(self.container, self._saved_text(), channel=channel, as_of=as_of)
            display(self.form)  # type: ignore[no-untyped-call]
            self.displayed = True

        def _saved_text(self, closed: bool = False) -> str:
            return bar_text(self.desc, self.n, self.total, closed=closed, planned=self.planned)

        def display(self, *args: Any, **kwargs: Any) -> Any:
            shown = super().display(*args, **kwargs)
            form = self.form
            now = time.monotonic()
            if form is not None and now - self._said_at >= _SAY_EVERY_S:
                self._said_at = now
                form.update(self._saved_text())
            return shown

        def planned_stop(self) -> None:
            """The loop ended normally (e.g. at its limit): not an error."""
            self.planned = True

        def close(self) -> None:
            if self.planned and not self.disable and self.total and self.n < self.total:
                std_tqdm.close(self)
                self.disp(bar_style="info", check_delay=False)
            else:
                super().close()
            if self.form is not None:
                failed = not self.planned and bool(self.total) and self.n < self.total
                self.form.update(self._saved_text(closed=True), tone="error" if failed else "ok")

    return BatchBar


def bar_text(batch: str, done: int, total: int | None, *, closed: bool, planned: bool) -> str:
    """A bar's saved form: ``resumes: 7/27 done``, ``(stopped)`` when closed short of its end."""
    where = f"{batch}: {done}/{total} done"
    if closed and total and done < total:
        return where + (" (stopped as planned)" if planned else " (stopped)")
    return where


_SAY_EVERY_S = 0.5
"""How often a running bar's saved form is brought up to date."""


def progress_factory(
    *,
    notebook: bool,
    file: IO[str] | None = None,
    channel: FormChannel | None = None,
    as_of: Callable[[], Mapping[str, Any]] | None = None,
) -> ProgressFactory:
    """Make tqdm bars: the notebook widget bar when ``notebook``, else the text bar.

    Args:
        notebook: use ``tqdm.notebook.tqdm`` (needs a widget frontend to be seen).
        file: where the text bar writes (default: tqdm's, standard error).
        channel: where a notebook bar sends its fresh saved form.
        as_of: the run's id, version and time now, to mark a notebook bar's saved form with.

    """

    def make(batch: str, total: int, done_before: int) -> Any:
        options: dict[str, Any] = {
            "total": total,
            "initial": done_before,
            "desc": batch,
            "unit": "item",
            "leave": True,
        }
        if notebook:
            return _notebook_bar_class()(channel=channel, as_of=as_of, **options)
        from tqdm.std import tqdm as text_tqdm

        return text_tqdm(file=file, **options)

    return make


def install_progress(
    run: Run,
    *,
    shell: object = None,
    notebook: bool | None = None,
    file: IO[str] | None = None,
    channel: FormChannel | None = None,
) -> ProgressFactory:
    """Show a progress bar for every batch loop of ``run`` (sets ``run.progress_factory``).

    Args:
        run: the run whose ``items`` loops get bars.
        shell: the IPython shell (default: the current one) used to tell a kernel with a
            widget frontend from a terminal.
        notebook: force the widget bar (``True``) or the text bar (``False``).
        file: where the text bar writes.
        channel: where notebook bars send their fresh saved forms (the ``skillnb.view`` comm).

    Returns:
        The installed factory.

    """
    if notebook is None:
        notebook = has_widget_frontend(shell if shell is not None else _current_shell())
    factory = progress_factory(
        notebook=notebook, file=file, channel=channel, as_of=lambda: run_moment(run)
    )
    run.progress_factory = factory
    return factory


def _current_shell() -> object:
    try:
        from IPython import get_ipython
    except ImportError:  # IPython is a dependency; without it there is no notebook bar
        return None
    return get_ipython()
