"""What ``%load_ext skillnb`` shows: where the run stands, or how to start one (edge layer).

With a recorded run, a short resume banner (state, last operation, pending approvals,
uncertain steps, batch progress, the skill memory's last operation). Without one, a line
saying where the run will live (nothing when no notebook is known yet: the first magic that
needs the run says how to name it), a hint when the saved notebook shows a run whose sidecar is
gone, or a warning when its ``metadata["skillnb"]`` is malformed (never evaluated). A copy of
another notebook that still holds the run both name says so, with the ways on, and never
suggests ``%resume`` (which would take the other notebook's run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillnb.errors import SkillnbError
from skillnb.jupyter.display import Output
from skillnb.jupyter.session import NoRunLocation
from skillnb.notebookfile.identity import NEW_RUN_ENV, NotebookCopied

if TYPE_CHECKING:
    from pathlib import Path

    from skillnb.jupyter.session import NotebookSession

__all__ = ["copied_output", "startup_output"]


def startup_output(session: NotebookSession) -> Output | None:
    """Return the output to show when the extension loads (``None``: nothing to say)."""
    quiet = session.config.verbosity == "quiet"
    try:
        kind, path = session.target()
    except NoRunLocation:
        # Not yet: `%skillnb use` may follow; the first magic that needs the run says so.
        return None
    except NotebookCopied as exc:  # a duplicate: neither this run nor the original's
        return copied_output(exc)
    except SkillnbError as exc:  # e.g. a run two notebooks may own: refused, said here
        return Output("status", "error", "⛔ SKILL.nb: cannot open the run", [str(exc)])
    try:
        if session.run_exists():
            return _resume_banner(session, quiet)
        if kind == "notebook" and path.exists() and not session.env.get(NEW_RUN_ENV):
            hint = _saved_run_hint(session, path)
            if hint is not None:
                return hint
    except SkillnbError as exc:
        return Output("status", "error", "⛔ SKILL.nb: cannot open the run", [str(exc)])
    if quiet:
        return None
    where = {"notebook": path.name, "store": f"run {path.as_posix()} (team store)"}.get(
        kind, "the state folder"
    )
    lines = ["no run recorded yet: the first %%workflow, %%formalize or %%gate starts one"]
    return Output("status", "ok", f"SKILL.nb ready · {where}", lines)


def _resume_banner(session: NotebookSession, quiet: bool) -> Output | None:
    from skillnb.jupyter.commands import resume_output

    output = resume_output(session.run, [])
    if quiet and output.status == "ok":
        return None
    output.lines.append("%resume puts the facts back into the namespace")
    return output


def _saved_run_hint(session: NotebookSession, path: Path) -> Output | None:
    from skillnb.notebookfile.ipynb import load_notebook
    from skillnb.notebookfile.rebuild import recover

    try:
        with session.warnings_shown():
            found = recover(load_notebook(path), origin=path.name)
    except SkillnbError:  # not a readable notebook (yet): nothing to hint at
        return None
    if found.mirror is None and not found.events:
        return None
    facts = {e.data["fact"].get("key") for e in found.events if e.type == "fact.formalized"}
    version = max([e.seq for e in found.events] or [0])
    if found.mirror is not None:
        facts |= set(found.mirror["facts"])
        version = max(version, found.mirror["version"])
    badge = f"SKILL.nb · {path.name} recorded a run, but its sidecar is missing"
    lines = [
        f"version {version}, {len(facts)} facts recorded in the saved notebook",
        "%resume rebuilds the run from this notebook's outputs",
    ]
    return Output("status", "warning", badge, lines)


def copied_output(copied: NotebookCopied) -> Output:
    """What a kernel shows for a copied notebook (the greeting, once): what it is, the ways on."""
    ways = copied.ways_on()
    lines = [
        f"its saved outputs show {ways.original}'s run; this notebook has no run of its "
        "own, and nothing is recorded until you choose:",
        f"  {ways.fork_from}   go on with a copy of its run (or: {ways.fork})",
        f"  {ways.new_run}   start fresh: a new run of its own",
    ]
    # no run id: a display's text is deterministic (nbval compares it)
    return Output("identity", "warning", f"⚠ SKILL.nb · {copied.what(run=False)}", lines)
