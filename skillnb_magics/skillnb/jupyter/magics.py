"""The SKILL.nb magics: ``%%workflow``, ``%%formalize``, ``%%gate``, ``%resume``, ``%skillnb``.

Edge layer. Each magic parses its arguments, makes one call on the run (through the
:class:`~skillnb.jupyter.session.NotebookSession` it was given), and shows the result. Errors
from SKILL.nb become short messages (see :mod:`skillnb.jupyter.failure`); an error raised by
the user's own cell is shown by IPython as usual, once.
"""

from __future__ import annotations

import argparse
import functools
import os
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, magics_class
from IPython.utils.text import DollarFormatter

from skillnb.core.views.summary import facts_needed
from skillnb.errors import GateBlocked, RunReplaced, SkillnbError, WaitingForApproval
from skillnb.jupyter import commands, switching
from skillnb.jupyter.cells import execute as cellexec
from skillnb.jupyter.failure import explain, not_parsed, shorten, travelling
from skillnb.jupyter.magicargs import (
    FACT_KINDS,
    argument,
    cell_magic,
    line_cell_magic,
    line_magic,
    magic_arguments,
    no_var_expand,
    parse_argstring,
)
from skillnb.jupyter.mirror import cell_text
from skillnb.jupyter.session import NotebookSession
from skillnb.jupyter.views import outcomes
from skillnb.service.wait import wait_from_env, wait_seconds

__all__ = ["FACT_KINDS", "SkillnbMagics", "formalize_source_hash"]

_WAIT_HELP = (
    "while another process runs this step, wait up to SECONDS for it "
    "(default: $SKILLNB_WAIT, else 0: fail with StepInProgress at once)"
)
_NO_EXPRESSION = (
    "%%formalize records the cell's last expression, and this cell ends with a statement: "
    "end it with an expression, or use --var NAME or --stdout"
)


_DOLLARS = DollarFormatter()
"""Expands ``$name`` and ``{expression}`` in a magic's line, as IPython does."""


@functools.lru_cache(maxsize=256)  # pure: a cell run again is not hashed again
def formalize_source_hash(line: str, body: str) -> str:
    """Hash a ``%%formalize`` cell (magic line and body, normalised) to tell it unchanged.

    ``--force`` does not count, so adding it and taking it away again does not look like an
    edit of the cell.
    """
    from skillnb.core.source import source_hash

    words = [w for w in line.split() if w != "--force"]
    return source_hash(cell_text("formalize", " ".join(words), body))


@magics_class
class SkillnbMagics(Magics):
    """The magics, bound to one :class:`NotebookSession` (injected, never global)."""

    def __init__(self, shell: Any, session: NotebookSession) -> None:
        super().__init__(shell)
        self.session = session
        self._shown: BaseException | None = None
        self._inline: dict[str, Any] = {}
        """The inline gates of the ``%%gate`` cell running now (named in its block)."""

    # -- plumbing ------------------------------------------------------------------------
    @staticmethod
    def _wait(given: float | None) -> float:
        """``--wait`` when given, else the kernel's ``$SKILLNB_WAIT`` (``skillnb run --wait``)."""
        return given if given is not None else wait_from_env(os.environ)

    def _expanded(self, line: str) -> str:
        """``line`` with ``$name`` and ``{expression}`` expanded from the user namespace.

        What IPython does to a magic's line, without copying the whole namespace for every
        cell (twice) when the line has nothing to expand; a line that cannot be expanded is
        kept as it is.
        """
        if "$" not in line and "{" not in line:
            return line
        try:
            return str(_DOLLARS.vformat(line, args=[], kwargs=self.session.shell.user_ns))
        except Exception:  # noqa: BLE001  # as IPython: what cannot be expanded stays as written
            return line

    def _body(self, cell: str) -> cellexec.Body:
        """The magic's body, transformed once, numbered as the lines of the user's cell."""
        return cellexec.prepare(self.session.shell, cell, self.session.cell_source)

    def _execute(
        self, body: cellexec.Body | str, capture: str | None = None, var: str | None = None
    ) -> Any:
        """Run ``body`` in this cell; remember its error, which IPython has shown."""
        session = self.session
        session.depth += 1  # a cell run inside this one: its events are not cells
        try:
            return cellexec.execute(session.shell, body, capture=capture, var=var)
        except SkillnbError:
            raise
        except BaseException as exc:
            self._shown = exc
            raise
        finally:
            session.depth -= 1

    def _run_all_note(self) -> str | None:
        """A blocked cell's last line when Run All does not stop there (tagged raises-exception)."""
        if "raises-exception" in self.session.cell_tags():
            return "Run All goes on: the cell is tagged raises-exception (see above)."
        return None

    def _gate_specs(self) -> dict[str, Any]:
        """The gates a blocked cell may name: the workflow's and this cell's inline ones."""
        workflow = self.session.run.workflow  # a gate ran: the run is open
        specs: dict[str, Any] = dict(workflow.gates) if workflow is not None else {}
        specs.update(self._inline)
        return specs

    @contextmanager
    def _reporting(self, what: str, name: str | None = None) -> Iterator[None]:
        """Turn SKILL.nb errors into short messages; keep the cell's own error short too."""
        self._shown = None
        try:
            yield
        except GateBlocked as exc:
            self.session.show(outcomes.blocked(exc, name, self._gate_specs()))
            if isinstance(exc, WaitingForApproval) or _asks_a_person(exc):
                self.session.show_view(self.session.run)  # its Approve and Reject buttons
            where = self.session.location.path if self.session.location is not None else None
            raise travelling(exc, where, note=self._run_all_note()) from None
        except SkillnbError as exc:
            if isinstance(exc, RunReplaced):  # the kernel holds the run: said once, above
                self.session.run_replaced(exc)
                raise shorten(exc, [f"⛔ {what}: nothing recorded (see above)"]) from None
            raise shorten(exc, explain(exc)) from None
        except BaseException as exc:
            if exc is not self._shown:
                raise
            if isinstance(exc, SyntaxError):
                raise not_parsed(what, exc) from None
            raise shorten(
                exc, [f"⛔ {what}: nothing recorded (the cell raised, see above)"]
            ) from None

    # -- magics --------------------------------------------------------------------------
    @magic_arguments()
    @argument("file", nargs="?", help="a YAML file (or give the YAML as the cell's body)")
    @line_cell_magic
    def workflow(self, line: str, cell: str | None = None) -> None:
        """Bind a workflow (YAML) to this notebook's run and show its state machine."""
        args = parse_argstring(self.workflow, line)
        if (cell is None) == (args.file is None):
            raise UsageError("use %workflow FILE, or %%workflow with the YAML as the cell body")
        with self._reporting("workflow"):
            from skillnb.core.workflow.model import Workflow

            definition = Workflow.from_yaml(Path(args.file)) if cell is None else _cell_yaml(cell)
            view = self.session.bind(definition).describe()
        if view.get("mermaid"):
            from skillnb.jupyter.views.render import diagram_html

            # The run widget draws the same SVG; text/plain keeps the Mermaid source.
            self.session.shell.display_pub.publish(
                data={
                    "text/html": diagram_html(definition, view),
                    "text/plain": view["mermaid"],
                }
            )
        self.session.show(outcomes.workflow_bound(view))

    @magic_arguments()
    @argument(
        "key", nargs="?", help="the fact's name (restored as a variable when it is a valid name)"
    )
    @argument("--kind", choices=FACT_KINDS, default="data", help="what the fact means")
    @argument("--auto", action="store_true", help="keep every suggested name the cell produces")
    @argument("--var", metavar="NAME", help="record this variable instead of the last expression")
    @argument("--stdout", action="store_true", help="record what the cell printed")
    @argument("--force", action="store_true", help="run and record again even if unchanged")
    @argument("--idempotent", action="store_true", help="may re-run after a crash mid-cell")
    @argument("--note", metavar="TEXT", help="free text stored with this version")
    @argument("--wait", metavar="SECONDS", type=wait_seconds, help=_WAIT_HELP)
    @no_var_expand  # expanded by _expanded, only when the line asks for it
    @cell_magic
    def formalize(self, line: str, cell: str) -> None:
        """Run the cell once and record its value as the next version of fact KEY.

        The value is the cell's last expression (or ``--var NAME``, or ``--stdout``). When the
        fact exists and the cell is unchanged, the cell does not run: the value is restored
        into the namespace. A cell that raises records nothing.
        """
        line = self._expanded(line)
        args = parse_argstring(self.formalize, line)
        if args.auto or args.key is None:
            self._formalize_auto(args, cell)
            return
        capture = "stdout" if args.stdout else "last"
        body = self._body(cell)
        if capture == "last" and not args.var and body.ends_with_expression() is False:
            raise UsageError(_NO_EXPRESSION)  # a body that does not parse fails when it runs
        with self._reporting(f"formalize {args.key}"), self.session.capture_warnings() as notes:
            run = self.session.run
            inputs = self._inputs(body, args.key, run)
            from skillnb.service.steps import formalize_step  # the records: not at %load_ext

            outcome = formalize_step(
                run.steps,
                args.key,
                lambda: self._execute(body, capture, args.var),
                source_hash=inputs.identity(formalize_source_hash(line, cell)),
                cell_id=self.session.cell_id,
                kind=args.kind,
                note=args.note,
                force=args.force,
                idempotent=args.idempotent,
                inputs=inputs.previews,
                wait=self._wait(args.wait),
            )
        name = args.var or args.key
        fresh = outcome.status != "restored"
        if outcome.fact.restorable and not (fresh and outcome.status == "unchanged"):
            assigned = self.session.assign(name, outcome.fact.value)
        else:  # no encoding (or --force found it equal): the computed value stays here
            assigned = fresh and self.session.assign(name, outcome.value)
        untracked = [n for n in inputs.untracked if n not in self.session.untracked_shown]
        self.session.untracked_shown.update(untracked)
        output = outcomes.formalized(
            outcome, restored_as=name if assigned else None, notes=notes, untracked=untracked
        )
        self.session.show(output, source=cell_text("formalize", line, cell))

    def _inputs(self, body: cellexec.Body, key: str, run: Any) -> Any:
        """The inputs of a formalized cell: parameters and other facts it reads."""
        from skillnb.jupyter.cells.inputs import CellInputs, cell_inputs, free_names

        if not free_names(body.code):  # reads no name: no fact or parameter to look up
            return CellInputs()
        facts = run.journal.refresh().facts  # the keys only: no value is decoded
        others = _Others(facts.keys(), key)
        parameters = self.session.parameter_names()
        return cell_inputs(body.code, self.session.shell.user_ns, parameters, others)

    def _formalize_auto(self, args: argparse.Namespace, cell: str) -> None:
        """``%%formalize --auto``: run the cell, keep what :func:`skillnb.suggest` offers."""
        if args.key is not None:
            raise UsageError("%%formalize --auto takes no key: it keeps what the cell produced")
        if not args.auto:
            raise UsageError("the following arguments are required: key (or use --auto)")
        from skillnb.jupyter.suggest.cells import current_suggestions, formalize_auto

        watcher = current_suggestions(self.session.shell)
        if watcher is None:
            raise UsageError("%%formalize --auto needs %load_ext skillnb")
        with self._reporting("formalize --auto"):
            kept = formalize_auto(
                self.session, watcher, cell, lambda: self._execute(self._body(cell))
            )
        self.session.show(outcomes.kept(kept), source=cell_text("formalize", "--auto", cell))

    @magic_arguments()
    @argument("trigger", nargs="?", help="the workflow trigger this cell fires when it succeeds")
    @argument("--name", help="the step's name when there is no trigger (default: from the source)")
    @argument("--requires", metavar="K1,K2", help="facts that must exist")
    @argument("--state", metavar="S1,S2", help="the state(s) the run must be in")
    @argument("--check", metavar="EXPR", help='a check on facts, e.g. "budget <= 5000"')
    @argument("--approval", metavar="MESSAGE", help="ask a person to approve first")
    @argument(
        "--on-block",
        choices=("raise", "skip"),
        default="raise",
        help="raise: stop Run All here (default); skip: skip the body and go on",
    )
    @argument("--wait", metavar="SECONDS", type=wait_seconds, help=_WAIT_HELP)
    @no_var_expand  # expanded by _expanded, only when the line asks for it
    @cell_magic
    def gate(self, line: str, cell: str) -> None:
        """Run the cell only when its gates pass, then fire TRIGGER; once per run.

        Blocked: the body is skipped, the report recorded, and the cell fails with a short
        message naming each failed gate (``--on-block skip`` goes on instead). An approval
        gate records a request: approve it with ``%skillnb approve GATE``, then run again.
        """
        line = self._expanded(line)
        args = parse_argstring(self.gate, line)
        source = cell_text("gate", line, cell)
        from skillnb.core.gates.evaluate import inline_gates

        digest = _source_hash(source)
        name = args.trigger or args.name
        with self._reporting(f"gate {name or ''}".strip(), name):
            specs = inline_gates(
                requires=_words(args.requires),
                state=_words(args.state),
                check=args.check,
                approval=args.approval,
                name_prefix=name or f"cell-{digest[7:15]}",
            )
            self._inline = {spec.name: spec for spec in specs}
            run = self.session.run
            outcome = run.gates.run_gated(
                args.trigger,
                lambda: self._execute(self._body(cell)),
                subject=run,
                gates=specs,
                key=None if args.trigger else f"gate:{args.name or digest}",
                source_hash=digest,
                cell_id=self.session.cell_id,
                on_block=args.on_block,
                skip_done=True,
                wait=self._wait(args.wait),
            )
        verbose = self.session.config.verbosity == "verbose"
        named = self._gate_specs() if outcome.status == "blocked" else None  # names its gates
        shown = outcomes.gated(outcome, args.trigger, name=name, verbose=verbose, specs=named)
        self.session.show(shown, source=source)

    @magic_arguments()
    @argument("--run", metavar="ID", help="resume this run (the current one or one set aside)")
    @argument("--no-restore", action="store_true", help="do not put facts into the namespace")
    @line_magic
    def resume(self, line: str) -> None:
        """Resume the run: restore facts into the namespace, list what waits, show the summary.

        One output: where the run stands (one state, one version) and what waits, then the
        LLM-ready summary of the same view, labelled. When the sidecar is gone, the run is
        rebuilt from the notebook's outputs first.
        """
        args = parse_argstring(self.resume, line)
        with self._reporting("resume"):
            run, rebuilt = switching.resume(self.session, args.run)
            restored = [] if args.no_restore else self.session.restore_facts(run)
            view = run.describe(facts_limit=facts_needed(4000))  # once, for both parts
            summary = run.summary(stable=True, view=view)
            # One output, one state: the person's part first, the LLM-ready summary after it.
            output = commands.resume_output(
                run, restored, rebuilt=rebuilt, view=view, summary=summary
            )
            self.session.show(output)

    @line_magic
    def skillnb(self, line: str) -> None:
        """Work with the run: status, history, approvals, rollbacks, milestones, ..."""
        args = commands.parse(line)
        with self._reporting(f"skillnb {args.command}"):
            output = commands.COMMANDS[args.command](self.session, args)
        if output is not None:
            self.session.show(output)

    skillnb.__doc__ = (skillnb.__doc__ or "") + "\n\n" + commands.PARSER.format_help()


class _Others(Collection[str]):
    """The keys of ``keys`` but ``left_out`` (no copy: looked up one name at a time)."""

    def __init__(self, keys: Collection[str], left_out: str) -> None:
        self._keys = keys
        self._left_out = left_out

    def __contains__(self, name: object) -> bool:
        return name != self._left_out and name in self._keys

    def __iter__(self) -> Iterator[str]:
        return (k for k in self._keys if k != self._left_out)

    def __len__(self) -> int:
        return len(self._keys) - (self._left_out in self._keys)


@functools.lru_cache(maxsize=256)
def _source_hash(source: str) -> str:
    """:func:`skillnb.core.source.source_hash`, remembered per text (a cell run again)."""
    from skillnb.core.source import source_hash

    return source_hash(source)


def _cell_yaml(cell: str) -> Any:
    """The workflow in a ``%%workflow`` cell's body, its errors numbered as the cell's lines.

    The body starts on the cell's second line (the first is ``%%workflow``): one empty line in
    front makes every line and column of a message the one the user sees in the cell.
    """
    from skillnb.core.workflow.model import Workflow
    from skillnb.errors import WorkflowError

    try:
        return Workflow.from_yaml("\n" + cell)
    except WorkflowError as exc:
        where = "%%workflow cell" if exc.source == "<string>" else exc.source
        raise WorkflowError(exc.problem, source=where, line=exc.line, column=exc.column) from None


def _asks_a_person(exc: GateBlocked) -> bool:
    """Whether the block waits on a person (an approval, or a gate escalated to one)."""
    blocking = exc.report.blocking
    return bool(blocking) and all(r.kind == "approval" or r.escalated for r in blocking)


def _words(value: str | None) -> tuple[str, ...]:
    """Split ``"a, b"`` into ``("a", "b")``."""
    if not value:
        return ()
    return tuple(w.strip() for w in value.split(",") if w.strip())
