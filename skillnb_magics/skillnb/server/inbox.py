"""The panel's "Waiting for you": open requests across the server's root and team store.

Routes (added by :func:`skillnb.server.handlers.setup_handlers`)::

    GET  /skillnb/api/inbox          InboxView: the open approval requests and follow-ups of
                                     every run under the root (sidecars and state folders,
                                     hidden folders left out unless the server shows them)
                                     and, with SKILLNB_STORE set, of the team store
    POST /skillnb/api/inbox/decide   {source, run, gate, verdict, note?}: approve or reject
                                     ("verdict") the open request of ``gate`` in that run

Reads go through :class:`~skillnb.store.readonly.ReadOnlyStore` and never create anything.
A decision opens the run named by the item: for ``"folder"``, a notebook or state folder
path relative to the root (refused when it leads outside it), for ``"store"`` a run name of
the configured store. Decisions are recorded as :class:`~skillnb.server.handlers.DecisionHandler`
records them (the signed-in user).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from skillnb.server.handlers import BadRequest, DecisionHandler, _RunHandler, _text
from skillnb.server.paths import PathRefused, ensure_inside
from skillnb.server.runs import RunRegistry

__all__ = ["Inbox", "InboxDecideHandler", "InboxHandler", "inbox_routes"]

_MAX_NAME = 200
_MAX_NOTE = 10_000


@dataclass(frozen=True)
class Inbox:
    """Where the server's inbox looks: its root, and the team store when one is set."""

    root: Path
    store: str | None = None
    allow_hidden: bool = False

    def view(self) -> dict[str, Any]:
        """The :class:`~skillnb.core.contract.listing.InboxView` of the root and the store."""
        from skillnb.service.listing import inbox, read_folder, read_store
        from skillnb.store.readonly import ReadOnlyStore

        reads = list(read_folder(self.root, shown=Path(), guard=ReadOnlyStore))
        if not self.allow_hidden:
            reads = [r for r in reads if not _hidden(r.listed.name)]
        if self.store is not None:
            reads += list(read_store(self.store, waiting=True, shown_url="URL"))
        found = inbox(reads, user="NAME")
        return {
            "items": [item.model_dump(mode="json") for item in found.items],
            "problems": [row.model_dump(mode="json") for row in found.problems],
        }

    def decide(
        self, source: str, run: str, verdict: str, gate: str, by: str, note: str | None
    ) -> dict[str, Any]:
        """Approve or reject the open request of ``gate`` in the run an inbox item names."""
        opened = self._open(source, run)
        try:
            answer = opened.approve if verdict == "approve" else opened.reject
            approval = answer(gate, by=by, note=note)
            return {"version": opened.version, "approval": approval.model_dump(mode="json")}
        finally:
            opened.close()

    def _open(self, source: str, run: str) -> Any:
        from skillnb.run import open_run

        if source == "store":
            if self.store is None:
                raise BadRequest("this server has no team store (SKILLNB_STORE)")
            return open_run(store=self.store, name=run, memory=False)
        if source != "folder":
            raise BadRequest("'source' must be 'folder' or 'store'")
        folder = self._folder(run)
        if not (folder / "journal.jsonl").is_file() and not (folder / "snapshot.json").is_file():
            raise PathRefused(404, f"no run at {run!r}")
        return open_run(state_dir=folder, memory=False)

    def _folder(self, run: str) -> Path:
        posix = PurePosixPath(run)
        parts = [p for p in posix.parts if p not in ("", ".")]
        if posix.is_absolute() or not parts or any(p == ".." or "\\" in p for p in parts):
            raise PathRefused(400, "'run' must be a path relative to the server root")
        if _hidden(run) and not self.allow_hidden:
            raise PathRefused(404, f"no run at {run!r}")
        if parts[-1].endswith(".ipynb"):
            from skillnb.store.folders.discover import SIDECARS

            folder = self.root.joinpath(*parts[:-1], SIDECARS, parts[-1][: -len(".ipynb")])
        else:
            folder = self.root.joinpath(*parts)
        ensure_inside(self.root, folder)
        return folder


def _hidden(name: str) -> bool:
    return any(part.startswith(".") for part in PurePosixPath(name).parts)


class InboxHandler(_RunHandler):
    """``GET /skillnb/api/inbox``: what waits, oldest first."""

    def initialize(self, registry: RunRegistry, inbox: Inbox) -> None:  # type: ignore[override]
        """Receive the registry (its worker thread) and the inbox."""
        super().initialize(registry)
        self.inbox = inbox

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """Answer the inbox view."""
        await self.answer(lambda: self.registry.call(self.inbox.view))


class InboxDecideHandler(DecisionHandler):
    """``POST /skillnb/api/inbox/decide``: approve or reject an inbox item in place."""

    def initialize(  # type: ignore[override]
        self, registry: RunRegistry, inbox: Inbox
    ) -> None:
        """Receive the registry and the inbox."""
        super().initialize(registry)
        self.inbox = inbox

    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Record the decision under the server's user."""

        async def work() -> dict[str, Any]:
            data = self.body()
            source = _text(data, "source", required=True, limit=16) or ""
            run = _text(data, "run", required=True, limit=4096) or ""
            gate = _text(data, "gate", required=True, limit=_MAX_NAME) or ""
            verdict = _text(data, "verdict", required=True, limit=16) or ""
            if verdict not in ("approve", "reject"):
                raise BadRequest("'verdict' must be 'approve' or 'reject'")
            by = self._recorded_as(_text(data, "by", required=False, limit=_MAX_NAME))
            note = _text(data, "note", required=False, limit=_MAX_NOTE)
            return await self.registry.call(
                lambda: self.inbox.decide(source, run, verdict, gate, by, note)
            )

        await self.answer(work)


def inbox_routes(inbox: Inbox) -> list[tuple[str, type[_RunHandler], dict[str, Any]]]:
    """The inbox's routes, relative to the base URL, with their handler arguments."""
    return [
        ("skillnb/api/inbox", InboxHandler, {"inbox": inbox}),
        ("skillnb/api/inbox/decide", InboxDecideHandler, {"inbox": inbox}),
    ]
