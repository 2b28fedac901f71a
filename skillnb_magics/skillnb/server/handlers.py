"""HTTP handlers of the SKILL.nb server extension (server edge).

Routes, under the server's base URL::

    GET  /skillnb/api/run?path=NB         run.describe() of the notebook's run (404: no sidecar)
    GET  /skillnb/api/view?path=NB        {"v": 1, "run_id", "version", "updated_at", "data":
                                          {"text/html", "text/plain"}}: a run view's saved
                                          forms as the kernel renders them, marked "as of vN,
                                          HH:MM" (see skillnb.jupyter.views.asof); for a copy of a
                                          notebook holding the run: {"v": 1, "run_id": null,
                                          "copy_of": {...}} (what it is, the ways on)
    GET  /skillnb/api/identity            {"name", "display_name", "source"}: who a decision
                                          from this user is recorded as (see identity.py)
    GET  /skillnb/api/version?path=NB     {"exists": bool, "version": int | null, "live": bool,
                                          "copy_of"?: {...} (a copy: see the view route)}
         ...&after=V&wait=S               held until the run passes V (long poll; a sidecar's
                                          journal file or a team store's NOTIFY wakes it), at
                                          most 25 s; a wait that is no finite number: none
    POST /skillnb/api/approve             {path, gate, by?, note?}; ``by`` only on a server
    POST /skillnb/api/reject              {path, gate, by?, note?}  that identifies nobody
    POST /skillnb/api/milestone           {path, name}
    GET  /skillnb/api/inbox               what waits across the root and the team store,
    POST /skillnb/api/inbox/decide        and deciding it in place (see inbox.py)

Every handler uses the server's own authentication and authorization (resource
``contents``: reading a run is a read, deciding or recording is a write). Errors answer
``{"error": "..."}`` with a status that says what went wrong. The handlers only validate
and translate; the run does the work.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from skillnb.errors import ApprovalError, ConflictError, SkillnbError, StoreCorrupted, UnsafePath
from skillnb.server.identity import Approver, approver
from skillnb.server.paths import PathRefused
from skillnb.server.runs import NoRun, RunRegistry

__all__ = ["ROUTES", "setup_handlers"]

_MAX_NAME = 200
_MAX_NOTE = 10_000


class BadRequest(Exception):
    """The request body or query is malformed (answered with 400)."""


def _status_for(error: Exception) -> int:
    if isinstance(error, PathRefused):
        return error.status
    if isinstance(error, BadRequest):
        return 400
    if isinstance(error, NoRun):
        return 404
    if isinstance(error, UnsafePath):
        return 403
    if isinstance(error, ApprovalError | ConflictError):
        return 409
    if isinstance(error, StoreCorrupted):
        return 500
    return 400


class _RunHandler(APIHandler):
    """Shared plumbing: the registry, JSON answers and error translation."""

    auth_resource = "contents"

    def initialize(self, registry: RunRegistry) -> None:
        """Receive the registry (tornado calls this with the route's keyword arguments)."""
        self.registry = registry

    async def answer(self, work: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        """Run ``work`` and answer its result, or the error it raised, as JSON."""
        try:
            body = await work()
        except (PathRefused, BadRequest, SkillnbError) as error:
            message = error.message if isinstance(error, PathRefused) else str(error)
            self.reply_error(_status_for(error), message, type(error).__name__)
            return
        except (RecursionError, ValueError) as error:  # hostile input no reader guarded against
            self.reply_error(400, f"the request could not be read: {error}", "BadRequest")
            return
        self.finish(json.dumps(body))

    def reply_error(self, status: int, message: str, kind: str) -> None:
        """Answer ``{"error": message, "type": kind}`` with ``status``."""
        self.set_status(status)
        self.finish(json.dumps({"error": message[:2000], "type": kind}))

    def query_path(self) -> str:
        """Return the ``path`` query argument."""
        return str(self.get_query_argument("path", default=""))

    def body(self) -> dict[str, Any]:
        """Return the JSON object in the request body."""
        try:
            data = json.loads(self.request.body or b"{}")
        except (ValueError, UnicodeDecodeError) as error:
            raise BadRequest(f"the body is not JSON: {error}") from error
        except RecursionError:
            raise BadRequest("the body is nested too deeply") from None
        if not isinstance(data, dict):
            raise BadRequest("the body must be a JSON object")
        return data

    def approver(self) -> Approver:
        """Return who this request's decisions are recorded as (see :mod:`.identity`)."""
        return approver(self.current_user, os.environ)


def _text(data: dict[str, Any], key: str, *, required: bool, limit: int) -> str | None:
    value = data.get(key)
    if value is None or (isinstance(value, str) and not value.strip() and not required):
        if required:
            raise BadRequest(f"{key!r} is required")
        return None
    if not isinstance(value, str):
        raise BadRequest(f"{key!r} must be a string")
    value = value.strip()
    if required and not value:
        raise BadRequest(f"{key!r} must not be empty")
    if len(value) > limit:
        raise BadRequest(f"{key!r} is longer than {limit} characters")
    return value


def _bad(message: str) -> Callable[[], Awaitable[dict[str, Any]]]:
    async def fail() -> dict[str, Any]:
        raise BadRequest(message)

    return fail


class DescribeHandler(_RunHandler):
    """``GET /skillnb/api/run?path=``: the run at a glance."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """Answer ``run.describe()``."""
        await self.answer(lambda: self.registry.describe(self.query_path()))


class ViewHandler(_RunHandler):
    """``GET /skillnb/api/view?path=``: a run view's saved forms, from the run as it is now."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """Answer the marked HTML and the plain text of a run view (what a kernel would save)."""

        async def work() -> dict[str, Any]:
            found = await self.registry.saved_view(self.query_path())
            if "copy_of" in found:  # a copy: the run its views show is the original's
                return {"v": 1, "run_id": None, "copy_of": found["copy_of"]}
            view = found["view"]
            return {
                "v": 1,
                "run_id": view.get("run_id"),
                "version": view.get("version"),
                "updated_at": view.get("updated_at"),
                "data": found["data"],
            }

        await self.answer(work)


class IdentityHandler(_RunHandler):
    """``GET /skillnb/api/identity``: the name a decision of this user is recorded as."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """Answer ``{"name", "display_name", "source"}``."""

        async def work() -> dict[str, Any]:
            return self.approver().to_json()

        await self.answer(work)


class VersionHandler(_RunHandler):
    """``GET /skillnb/api/version?path=``: whether a run exists, and its version."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """Answer ``{"exists", "version"}`` (with ``after``/``wait``: a long poll)."""
        after = self.get_query_argument("after", default=None)
        if after is None:
            await self.answer(lambda: self.registry.version(self.query_path()))
            return
        try:
            since = int(after)
            wait = float(self.get_query_argument("wait", default="20"))
        except ValueError:
            await self.answer(_bad("'after' and 'wait' must be numbers"))
            return
        await self.answer(lambda: self.registry.wait_version(self.query_path(), since, wait))


class DecisionHandler(_RunHandler):
    """``POST /skillnb/api/approve`` and ``/reject``: decide a pending approval."""

    def initialize(self, registry: RunRegistry, verdict: str = "approve") -> None:
        """Receive the registry and whether this route approves or rejects."""
        super().initialize(registry)
        self.verdict = verdict

    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Record the decision under the server's user (see :mod:`.identity`)."""

        async def work() -> dict[str, Any]:
            data = self.body()
            path = _text(data, "path", required=True, limit=4096) or ""
            gate = _text(data, "gate", required=True, limit=_MAX_NAME) or ""
            by = self._recorded_as(_text(data, "by", required=False, limit=_MAX_NAME))
            note = _text(data, "note", required=False, limit=_MAX_NOTE)
            return await self.registry.decide(path, self.verdict, gate, by, note)

        await self.answer(work)

    def _recorded_as(self, asked: str | None) -> str:
        """The signed-in user; ``asked`` (the body's ``by``) only where nobody is signed in."""
        who = self.approver()
        if who.source == "run":
            return asked or who.name
        if asked is not None and asked != who.name:
            raise BadRequest(f"'by' must be the signed-in user ({who.name!r}) or left out")
        return who.name


class MilestoneHandler(_RunHandler):
    """``POST /skillnb/api/milestone``: record a named checkpoint."""

    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Record ``run.milestone(name)``."""

        async def work() -> dict[str, Any]:
            data = self.body()
            path = _text(data, "path", required=True, limit=4096) or ""
            name = _text(data, "name", required=True, limit=_MAX_NAME) or ""
            return await self.registry.milestone(path, name)

        await self.answer(work)


ROUTES: list[tuple[str, type[_RunHandler], dict[str, Any]]] = [
    ("skillnb/api/run", DescribeHandler, {}),
    ("skillnb/api/view", ViewHandler, {}),
    ("skillnb/api/version", VersionHandler, {}),
    ("skillnb/api/identity", IdentityHandler, {}),
    ("skillnb/api/approve", DecisionHandler, {"verdict": "approve"}),
    ("skillnb/api/reject", DecisionHandler, {"verdict": "reject"}),
    ("skillnb/api/milestone", MilestoneHandler, {}),
]
"""Route (relative to the base URL), handler class and extra handler arguments."""


def setup_handlers(
    web_app: Any,
    registry: RunRegistry,
    more: list[tuple[str, type[_RunHandler], dict[str, Any]]] | None = None,
) -> None:
    """Add the SKILL.nb routes to the server's tornado application (and ``more`` routes)."""
    base_url = web_app.settings["base_url"]
    routes: list[tuple[str, type[_RunHandler], dict[str, Any]]] = [*ROUTES, *(more or [])]
    handlers = [
        (url_path_join(base_url, route), handler, {"registry": registry, **extra})
        for route, handler, extra in routes
    ]
    web_app.add_handlers(".*$", handlers)
