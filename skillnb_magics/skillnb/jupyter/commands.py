"""The ``%skillnb`` subcommands: one parser, one small function per command (edge layer).

Each function makes one call on the run (or the session) and returns the
:class:`~skillnb.jupyter.display.Output` to show; ``status`` shows the interactive
``RunView`` instead when widgets are on and a widget frontend is there.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser

from skillnb.core.views.viewtext import render_text
from skillnb.errors import SkillnbError
from skillnb.jupyter import switching
from skillnb.jupyter.display import Output, Status
from skillnb.jupyter.views.outcomes import resumed
from skillnb.jupyter.views.render import render_html
from skillnb.jupyter.views.status import scrub

if TYPE_CHECKING:
    from skillnb.jupyter.session import NotebookSession
    from skillnb.run import Run

__all__ = ["COMMANDS", "PARSER", "parse", "parse_with", "resume_output"]

Command = Callable[["NotebookSession", argparse.Namespace], "Output | None"]


def _status(session: NotebookSession, _args: argparse.Namespace) -> Output | None:
    run = session.run
    if session.show_view(run):
        return None
    view = run.describe()
    badge = f"SKILL.nb · {view.get('workflow') or 'run'}"
    status: Status = "waiting" if view["pending"] or view["uncertain"] else "ok"
    text = scrub(render_text(view), run.id).splitlines()
    return Output("status", status, badge, text, html=render_html(view))


def _history(session: NotebookSession, args: argparse.Namespace) -> Output:
    from skillnb.core.runstate.describe import describe_event

    run = session.run
    events = run.history(args.n)
    lines = [f"v{e.seq} {e.type}: {scrub(describe_event(e), run.id)}" for e in events]
    return Output("history", "ok", f"history (last {len(events)})", lines)


def _facts(session: NotebookSession, _args: argparse.Namespace) -> Output:
    facts = session.run.facts
    lines = [
        f"{f.key} v{f.version} ({f.kind}) = {f.preview}" + ("" if f.restorable else " [text only]")
        for f in facts.values()
    ]
    return Output("facts", "ok", f"facts ({len(facts)})", lines)


_SETTLED = {"approve": ("approved", "consumed"), "reject": ("rejected",)}


def _already_decided(run: Run, gate: str, command: str) -> Output | None:
    """An info line when the latest request of ``gate`` was already decided this way.

    Run All over a finished run passes the approve cell again; that is not an error.
    """
    requests = [a for a in run.snapshot.approvals.values() if a.gate == gate]
    if not requests:
        return None
    latest = max(requests, key=lambda a: a.requested_seq)
    if latest.status not in _SETTLED[command]:
        return None
    used = " and used" if latest.status == "consumed" else ""
    verb = "approved" if command == "approve" else "rejected"
    lines = [f"already {verb}{used} by {latest.decided_by or 'someone'}: nothing to do"]
    mark, status = _decision_look(verb)
    return Output("approval", status, f"{mark} {gate} already {verb}", lines, key=gate)


def _decision_look(status: str) -> tuple[str, Status]:
    """The mark and badge status of a decision: a rejection keeps its gate shut, no success."""
    return ("✓", "ok") if status == "approved" else ("✗", "blocked")


def _decide(session: NotebookSession, args: argparse.Namespace) -> Output:
    run = session.run
    settled = _already_decided(run, args.gate, args.command)
    if settled is not None:
        return settled
    decide = run.approve if args.command == "approve" else run.reject
    approval = decide(args.gate, by=args.by, note=args.note)
    note = f": {approval.note}" if approval.note else ""
    # The request id (random) is in the output's metadata, with the event; not in the text.
    lines = [f"request for {approval.trigger or approval.gate}{note}"]
    if approval.status == "approved":
        lines.append("run the gated cell again to go on")
    mark, status = _decision_look(approval.status)
    badge = f"{mark} {approval.gate} {approval.status} by {approval.decided_by}"
    return Output("approval", status, badge, lines, key=approval.gate, trigger=approval.trigger)


def _follow_ups(session: NotebookSession, _args: argparse.Namespace) -> Output:
    follow_ups = session.run.follow_ups()
    lines = [
        f"{f.text} (gate {f.gate}, state {f.state}: {f.reason}); "
        f"resolve with %skillnb resolve {f.gate}"
        for f in follow_ups
    ] or ["nothing to follow up"]
    status: Status = "warning" if follow_ups else "ok"
    return Output("follow-ups", status, f"follow-ups ({len(follow_ups)} open)", lines)


def _already_resolved(run: Run, ref: str) -> Output | None:
    """An info line when ``ref`` names only follow-ups that were resolved already.

    Run All over a finished run passes the resolve cell again; that is not an error.
    """
    known = [f for f in run.snapshot.follow_ups.values() if ref in (f.id, f.gate)]
    if not known or any(f.status == "open" for f in known):
        return None
    latest = max(known, key=lambda f: f.opened_seq)
    lines = [f"already resolved by {latest.resolved_by or 'someone'}: nothing to do"]
    return Output("follow-up", "ok", f"✓ follow-up of {latest.gate} already resolved", lines)


def _resolve(session: NotebookSession, args: argparse.Namespace) -> Output:
    settled = _already_resolved(session.run, args.id)
    if settled is not None:
        return settled
    follow_up = session.run.resolve_follow_up(args.id, by=args.by, note=args.note)
    lines = [follow_up.text] + ([f"note: {follow_up.note}"] if follow_up.note else [])
    badge = f"✓ follow-up of {follow_up.gate} resolved by {follow_up.resolved_by}"
    return Output("follow-up", "ok", badge, lines, key=follow_up.gate)


def _rollback(session: NotebookSession, args: argparse.Namespace) -> Output:
    fact = session.run.rollback(args.key, args.version)
    if fact.restorable:
        session.assign(fact.key, fact.value)
    lines = [f"v{fact.version} = {fact.preview}", f"same value as v{args.version}"]
    return Output("rollback", "ok", f"↶ {fact.key} v{fact.version}", lines, key=fact.key)


def _summary(session: NotebookSession, args: argparse.Namespace) -> Output:
    run = session.run
    text = run.summary(max_chars=args.max_chars, stable=True)
    return Output("summary", "ok", "summary", text.splitlines(), extra={"text/markdown": text})


def _compact(session: NotebookSession, _args: argparse.Namespace) -> Output:
    run = session.run
    run.compact()
    return Output("compact", "ok", f"compacted at version {run.version}")


def _use(session: NotebookSession, args: argparse.Namespace) -> Output:
    if args.name:
        where = session.use_name(args.name)
    elif args.path:
        where = session.use(args.path)
    else:
        raise SkillnbError("give a notebook, a state folder, or --name NAME")
    lines = [
        "a run recorded there is opened on first use"
        if not session.run_exists()
        else "a run is recorded there: %resume restores its facts"
    ]
    return Output("use", "ok", f"using {where}", lines)


def _new_run(session: NotebookSession, _args: argparse.Namespace) -> Output:
    try:
        had = session.run_exists()
    except SkillnbError:  # e.g. a copy of another notebook's run: it has none of its own
        had = False
    run = switching.new_run(session)
    before = "the previous run was set aside; this one" if had else "a run of its own, here,"
    lines = [f"{before} is at version {run.version}"]
    return Output("new-run", "ok", "new run started", lines)


def _fork_from(session: NotebookSession, args: argparse.Namespace) -> Output:
    run, original = switching.fork_from(session, args.notebook)
    lines = [
        f"this notebook goes on from {original.name}'s run at version {run.version}; "
        "from here on the two runs go their own ways",
        "%resume puts its facts into the namespace",
    ]
    return Output("fork", "ok", f"forked the run of {original.name}", lines)


def _restore(session: NotebookSession, _args: argparse.Namespace) -> Output:
    run, lost = switching.restore_held(session)
    lines = [f"run {run.id} is back at version {run.version}, as this kernel held it"]
    if lost:
        lines.append(f"values kept by reference went with the folder: {', '.join(lost)}")
        lines.append("run their cells again with --force to record them again")
    return Output("restore", "ok", "run written back", lines)


def _clear(session: NotebookSession, args: argparse.Namespace) -> Output:
    session.run.steps.clear(args.step)
    return Output("clear", "ok", f"cleared {args.step}", ["the step may run again"], key=args.step)


def _milestone(session: NotebookSession, args: argparse.Namespace) -> Output:
    event = session.run.milestone(args.name)
    return Output("milestone", "ok", f"🏁 {args.name}", [f"at version {event.seq}"], key=args.name)


def resume_output(
    run: Run,
    restored: list[str],
    *,
    rebuilt: bool = False,
    view: Mapping[str, Any] | None = None,
    summary: str | None = None,
) -> Output:
    """Build the ``%resume`` (and load banner) output for ``run`` (``view``: already described).

    ``summary``: the LLM-ready summary ``%resume`` shows after the person's part.
    """
    memory = run.memory
    last = memory.get_last_operation() if memory is not None else None
    return resumed(
        run.describe() if view is None else view,
        restored,
        last_operation=run.journal.state.last_operation,
        memory_last=f"{last['action']}: {last['summary']}" if last else None,
        rebuilt=rebuilt,
        summary=summary,
    )


def _build() -> tuple[MagicArgumentParser, dict[str, Command]]:
    # IPython leaves MagicArgumentParser unannotated; it is an argparse parser that raises
    # UsageError instead of exiting.
    parser = MagicArgumentParser(prog="%skillnb", description="The run of this notebook.")  # type: ignore[no-untyped-call]
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    table: dict[str, Command] = {}

    def add(name: str, fn: Command, help_: str) -> argparse.ArgumentParser:
        table[name] = fn
        return sub.add_parser(name, help=help_, description=help_)

    add("status", _status, "the run at a glance")
    add("history", _history, "recent events").add_argument("-n", type=int, default=20)
    add("facts", _facts, "every fact's latest version")
    for name in ("approve", "reject"):
        p = add(name, _decide, f"{name} the pending request of an approval gate")
        p.add_argument("gate")
        p.add_argument("--by", metavar="NAME", help="who decides (default: SkillNB.user)")
        p.add_argument("--note", metavar="TEXT")
    add("follow-ups", _follow_ups, "the open follow-ups that warning gates left")
    p = add("resolve", _resolve, "resolve a follow-up (its id, or its gate's name)")
    p.add_argument("id", metavar="ID_OR_GATE")
    p.add_argument("--by", metavar="NAME", help="who resolves it (default: SkillNB.user)")
    p.add_argument("--note", metavar="TEXT")
    p = add("rollback", _rollback, "write an older version of a fact again, as a new version")
    p.add_argument("key")
    p.add_argument("version", type=int)
    add("summary", _summary, "the summary for an LLM (Markdown)").add_argument(
        "--max-chars", type=int, default=4000
    )
    add("compact", _compact, "write a snapshot so that opening replays less")
    p = add("use", _use, "use this notebook (.ipynb) or state folder, or a run by name")
    p.add_argument("path", nargs="?")
    p.add_argument("--name", metavar="NAME", help="the run's name in the team store")
    add("new-run", _new_run, "set the current run aside and start a new one")
    add("restore", _restore, "write back the run this kernel holds after its sidecar went away")
    add(
        "fork-from", _fork_from, "give this notebook a copy of another notebook's run"
    ).add_argument("notebook", metavar="NOTEBOOK.ipynb")
    add("clear", _clear, "declare an uncertain step resolved").add_argument("step")
    add("milestone", _milestone, "record a named checkpoint").add_argument("name")
    return parser, table


PARSER, COMMANDS = _build()


def parse_with(parser: argparse.ArgumentParser, line: str) -> argparse.Namespace:
    """Parse ``line`` as shell words with ``parser`` (a ``MagicArgumentParser``).

    IPython's own ``parse_argstring`` keeps the quotes around a quoted value, so
    ``--check "x <= 10"`` would arrive as a string literal; :func:`shlex.split` removes them.

    Raises:
        UsageError: unbalanced quotes, an unknown option or a bad value.

    """
    key = (id(parser), line)
    parsed = _PARSED.get(key)
    if parsed is None or parsed[0] is not parser:
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"{exc} in: {line}") from None
        parsed = (parser, parser.parse_args(words))
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.pop(next(iter(_PARSED)))
        _PARSED[key] = parsed
    copy = argparse.Namespace()  # a copy: callers may change theirs
    copy.__dict__.update(vars(parsed[1]))  # its values, without a call per attribute
    return copy


_PARSED: dict[tuple[int, str], tuple[argparse.ArgumentParser, argparse.Namespace]] = {}
"""Lines already parsed, per parser: a cell run again parses nothing (its values are plain)."""
_PARSED_MAX = 256


def parse(line: str) -> argparse.Namespace:
    """Parse a ``%skillnb`` line (see :func:`parse_with`)."""
    return parse_with(PARSER, line)
