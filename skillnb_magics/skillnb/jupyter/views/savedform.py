"""Widgets that stay readable when saved: a live ipywidget with an HTML form beside it (edge).

A plain ipywidget saved in a notebook is only a model id: reopened with a new kernel, with no
kernel, or copied, JupyterLab says "Error displaying widget: model not found" (and other
frontends show the widget's ``repr``). :class:`SavedForm` displays a widget with the same
three extra entries a run view carries: the marker :data:`VIEW_MIME`, ``text/html`` and a
deterministic ``text/plain`` saying what the widget was ("Keep deadline — kept as v1",
"resumes: 7/27 done"). SKILL.nb's JupyterLab extension renders the live widget while its model
is there and the saved HTML otherwise. :meth:`SavedForm.update` keeps the saved form current:
it sends the new form on the ``skillnb.view`` comm, and the extension writes it into the
output, so a notebook saved later shows what the widget shows now. Given the run it belongs
to (``as_of``), the saved HTML also says which version of the run it was taken at ("as of
v12, 14:02", see :mod:`skillnb.jupyter.views.asof`).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from skillnb.jupyter.mirror import VIEW_MIME
from skillnb.jupyter.views.asof import stamped

__all__ = ["FormChannel", "SavedForm", "form_html"]


class FormChannel(Protocol):
    """Where fresh saved forms go: the ``skillnb.view`` comm (a ``MirrorChannel``)."""

    def send(self, message: dict[str, Any]) -> None:
        """Send one ``{"v": 1, "models": [...], "data": {...}}`` message."""


def form_html(text: str, *, tone: str = "info") -> str:
    """The saved HTML of a widget: one escaped line, styled by JupyterLab's variables."""
    return (
        f'<div class="skillnb-saved-form skillnb-saved-{html.escape(tone, quote=True)}" '
        f'role="status">{html.escape(text)}</div>'
    )


class SavedForm:
    """``widget`` displayed with a readable saved form.

    Args:
        widget: the live ipywidget (its model id names the output to update).
        text: the saved plain text (deterministic: no ids, no times).
        tone: ``info``, ``ok`` or ``error`` (a class on the saved HTML).
        channel: where :meth:`update` sends fresh forms (``None``: kept only for display).
        as_of: the run's id, version and time now (:func:`~skillnb.jupyter.views.asof.run_moment`),
            to mark the saved HTML with ("as of v12, 14:02"); ``None``: unmarked.

    """

    def __init__(
        self,
        widget: Any,
        text: str,
        *,
        tone: str = "info",
        channel: FormChannel | None = None,
        as_of: Callable[[], Mapping[str, Any]] | None = None,
    ) -> None:
        self.widget = widget
        self.text = text
        self.tone = tone
        self.channel = channel
        self.as_of = as_of

    @property
    def html(self) -> str:
        """The saved HTML form (marked with the run's version and time, given ``as_of``)."""
        form = form_html(self.text, tone=self.tone)
        return form if self.as_of is None else stamped(form, self.as_of(), kind="form")

    def update(self, text: str, *, tone: str | None = None) -> None:
        """Say what the widget shows now, in the output that will be saved."""
        if tone is not None:
            self.tone = tone
        if text == self.text and tone is None:
            return
        self.text = text
        if self.channel is None:
            return
        model_id = getattr(self.widget, "model_id", None)
        if not isinstance(model_id, str) or not model_id:
            return
        data = {"text/html": self.html, "text/plain": self.text}
        self.channel.send({"v": 1, "models": [model_id], "data": data})

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, Any]:
        bundle: dict[str, Any] = dict(self.widget._repr_mimebundle_() or {})
        bundle[VIEW_MIME] = {"v": 1}
        bundle["text/plain"] = self.text
        bundle["text/html"] = self.html
        return bundle

    def __repr__(self) -> str:
        return f"<SavedForm {self.text!r}>"
