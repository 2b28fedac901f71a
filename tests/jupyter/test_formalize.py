"""``%%formalize``: record once, restore after, recompute on edit or ``--force``."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from shellkit import RaisingShell, bundles, cell, last, last_volatile

from skillnb.errors import UncertainStep
from skillnb.jupyter.extension import current_run
from skillnb.jupyter.failure import BodySyntaxError
from skillnb.jupyter.magics import FACT_KINDS, SkillnbMagics, formalize_source_hash

MIME = "application/vnd.skillnb.v1+json"
COUNTED = "%%formalize budget --kind decision\ncalls.append(1)\n4000 + 1000\n"


@pytest.fixture
def counted(ip: RaisingShell) -> RaisingShell:
    ip.user_ns["calls"] = []
    return ip


def test_fact_kinds_match_the_records() -> None:
    from skillnb.core.runstate.records import FACT_KINDS as RECORD_KINDS

    assert RECORD_KINDS == FACT_KINDS


def test_records_the_last_expression(counted: RaisingShell) -> None:
    cell(counted, COUNTED, cell_id="c1")
    fact = current_run(counted).fact("budget")
    assert fact is not None
    assert (fact.value, fact.version, fact.kind, fact.cell_id) == (5000, 1, "decision", "c1")
    assert counted.user_ns["budget"] == 5000
    data = last(counted)
    assert data["text/plain"] == "📌 budget v1\ndecision = 5000"
    assert data[MIME] == {
        "v": 1,
        "kind": "formalize",
        "badge": "📌 budget v1",
        "status": "ok",
        "key": "budget",
        "trigger": None,
    }
    volatile = last_volatile(counted)
    assert volatile["run_id"] == current_run(counted).id
    assert [e["type"] for e in volatile["events"]] == [
        "step.started",
        "fact.formalized",
        "step.committed",
    ]
    assert volatile["mirror"]["notebook"]["facts"]["budget"]["version"] == 1
    assert volatile["mirror"]["cell"] == {
        "step": "budget",
        "version": 1,
        "source_hash": fact.source_hash,
        "status": "committed",
    }


def test_unchanged_cell_is_restored_not_run(counted: RaisingShell) -> None:
    cell(counted, COUNTED)
    del counted.user_ns["budget"]
    cell(counted, COUNTED)
    assert counted.user_ns["calls"] == [1]
    assert counted.user_ns["budget"] == 5000
    data = last(counted)
    assert data[MIME]["status"] == "restored"
    assert data["text/plain"].splitlines()[:2] == [
        "↺ budget v1",
        "restored v1 into `budget` (source unchanged; the cell did not run)",
    ]
    assert current_run(counted).fact("budget").version == 1  # type: ignore[union-attr]


def test_whitespace_and_force_do_not_count_as_edits(counted: RaisingShell) -> None:
    cell(counted, COUNTED)
    cell(counted, COUNTED.replace("\n", "  \r\n") + "\n\n")
    assert counted.user_ns["calls"] == [1]
    assert formalize_source_hash("budget --force", "x") == formalize_source_hash("budget", "x")


def test_force_recomputes_and_an_equal_value_records_nothing(counted: RaisingShell) -> None:
    cell(counted, COUNTED)
    run = current_run(counted)
    before = run.version
    cell(counted, COUNTED.replace("decision", "decision --force"))
    assert counted.user_ns["calls"] == [1, 1]
    assert run.fact("budget").version == 1  # type: ignore[union-attr]
    assert [e.type for e in run.history(10) if e.seq > before] == [
        "step.started",
        "step.committed",
    ]
    assert last(counted)["text/plain"].splitlines()[1].startswith("unchanged: the value equals v1")
    cell(counted, COUNTED)  # --force removed again: the same cell, restored
    assert counted.user_ns["calls"] == [1, 1]
    counted.user_ns["calls"] = [1, 2]  # the value differs now: --force records v2
    cell(counted, COUNTED.replace("decision", "decision --force").replace("1000", "1001"))
    assert run.fact("budget").version == 2  # type: ignore[union-attr]


def test_each_cell_sharing_a_key_restores_its_own_version(ip: RaisingShell) -> None:
    first = "%%formalize sources\nlog.append('a')\n['a']\n"
    second = "%%formalize sources\nlog.append('b')\n['a', 'b']\n"
    ip.user_ns["log"] = []
    for _ in range(2):  # Run All twice
        cell(ip, first)
        assert ip.user_ns["sources"] == ["a"]
        cell(ip, second)
        assert ip.user_ns["sources"] == ["a", "b"]
    assert ip.user_ns["log"] == ["a", "b"]
    assert current_run(ip).fact("sources").version == 2  # type: ignore[union-attr]


def test_a_changed_input_recomputes_and_says_why(counted: RaisingShell) -> None:
    cell(counted, "# Parameters\nlimit = 5500\n")  # what papermill injects
    body = "%%formalize budget\ncalls.append(1)\nlimit * 2\n"
    cell(counted, body)
    cell(counted, "%%formalize other\n'no inputs'\n")
    cell(counted, "# Parameters\nlimit = 20000\n")
    cell(counted, body)
    assert counted.user_ns["calls"] == [1, 1]
    assert "recomputed: limit changed 5500 → 20000" in last(counted)["text/plain"]
    cell(counted, "%%formalize other\n'no inputs'\n")  # reads no input: restored
    assert last(counted)[MIME]["status"] == "restored"
    cell(counted, "%%formalize doubled\nbudget * 2\n")  # another fact is an input
    cell(counted, "%%formalize doubled\nbudget * 2\n")
    assert last(counted)[MIME]["status"] == "restored"
    counted.user_ns["budget"] = 1
    cell(counted, "%%formalize doubled\nbudget * 2\n")
    assert "recomputed: budget changed 40000 → 1" in last(counted)["text/plain"]


def test_a_cell_reading_no_name_looks_up_no_input(
    counted: RaisingShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    cell(counted, "# Parameters\nlimit = 5500\n")
    cell(counted, "%%formalize other\n'no inputs'\n")
    session = counted.magics_manager.registry["SkillnbMagics"].session
    asked = []
    names = session.parameter_names
    monkeypatch.setattr(session, "parameter_names", lambda: asked.append(1) or names())
    cell(counted, "%%formalize other --force\n'no inputs'\n")
    assert asked == []  # nothing to look up: neither parameters nor other facts
    assert "unchanged: the value equals v1" in last(counted)["text/plain"]
    cell(counted, "%%formalize twice --force\nlimit * 2\n")
    assert asked == [1]  # a cell that reads names looks them up
    assert current_run(counted).fact("twice").value == 11000  # type: ignore[union-attr]
    cell(counted, "# Parameters\nlimit = 20000\n")
    cell(counted, "%%formalize twice\nlimit * 2\n")
    assert "recomputed: limit changed 5500 → 20000" in last(counted)["text/plain"]


def test_an_input_without_a_stable_value_is_listed_once(counted: RaisingShell) -> None:
    cell(counted, "# Parameters\nthing = object()\n")
    cell(counted, "%%formalize a\nstr(type(thing))\n")
    assert "not tracked (no stable value to compare): thing" in last(counted)["text/plain"]
    cell(counted, "%%formalize b\nstr(type(thing))\n")
    assert "not tracked" not in last(counted)["text/plain"]


def test_edited_cell_runs_and_makes_a_new_version(counted: RaisingShell) -> None:
    cell(counted, COUNTED)
    cell(counted, COUNTED.replace("4000", "4500"))
    assert counted.user_ns["calls"] == [1, 1]
    fact = current_run(counted).fact("budget")
    assert (fact.value, fact.version) == (5500, 2)  # type: ignore[union-attr]


def test_a_cell_that_raises_records_nothing(counted: RaisingShell) -> None:
    with pytest.raises(ZeroDivisionError) as caught:
        cell(counted, "%%formalize ratio\ncalls.append(1)\n1 / 0\n")
    assert caught.value._render_traceback_() == [  # type: ignore[attr-defined]
        "⛔ formalize ratio: nothing recorded (the cell raised, see above)"
    ]
    run = current_run(counted)
    assert run.fact("ratio") is None
    assert run.snapshot.steps["formalize:ratio"].status == "failed"
    assert "ZeroDivisionError" in str(run.snapshot.steps["formalize:ratio"].error)
    assert "ratio" not in counted.user_ns
    cell(counted, "%%formalize ratio\ncalls.append(1)\n1 / 2\n")  # fixed: runs, records
    assert run.fact("ratio").value == 0.5  # type: ignore[union-attr]


def test_var_and_stdout(ip: RaisingShell) -> None:
    cell(ip, "%%formalize plan --var plan_text --kind summary\nplan_text = 'ship on friday'\n")
    assert current_run(ip).fact("plan").value == "ship on friday"  # type: ignore[union-attr]
    cell(ip, "%%formalize log --stdout\nprint('step 1 ok')\n")
    assert current_run(ip).fact("log").value == "step 1 ok\n"  # type: ignore[union-attr]
    del ip.user_ns["plan_text"]
    cell(ip, "%%formalize plan --var plan_text --kind summary\nplan_text = 'ship on friday'\n")
    assert ip.user_ns["plan_text"] == "ship on friday"  # restored under --var


def test_a_var_the_cell_did_not_set_is_a_short_error(ip: RaisingShell) -> None:
    with pytest.raises(Exception, match="did not set 'nope'") as caught:
        cell(ip, "%%formalize x --var nope\ny = 1\n")
    assert caught.value._render_traceback_()[0].startswith("⛔ NoValue")  # type: ignore[attr-defined]
    assert current_run(ip).fact("x") is None


def test_a_key_that_is_not_a_name_is_recorded_but_not_assigned(ip: RaisingShell) -> None:
    cell(ip, "%%formalize report-2024\n'done'\n")
    assert current_run(ip).fact("report-2024").value == "done"  # type: ignore[union-attr]
    assert "report-2024" not in ip.user_ns


def test_a_value_without_encoder_is_a_visible_warning(ip: RaisingShell) -> None:
    cell(ip, "%%formalize thing\nobject()\n")
    data = last(ip)
    assert data[MIME]["status"] == "warning"
    assert "cannot be restored" in data["text/plain"]
    assert current_run(ip).fact("thing").restorable is False  # type: ignore[union-attr]


@pytest.mark.parametrize("value", ["lambda x: x", "type('T', (), {})()"])
def test_a_value_without_encoder_stays_in_this_session(ip: RaisingShell, value: str) -> None:
    cell(ip, f"%%formalize thing\n{value}\n")
    assert "kept in this session only" in last(ip)["text/plain"]
    assert "recomputed after a restart" in last(ip)["text/plain"]
    assert ip.user_ns["thing"] is not None
    assert not isinstance(ip.user_ns["thing"], str)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("%%formalize", "the following arguments are required: key"),
        ("%%formalize x --bogus", "unrecognized arguments: --bogus"),
        ("%%formalize x --kind opinion", "invalid choice: 'opinion'"),
        ("%%formalize x --note 'unbalanced", "No closing quotation"),
    ],
)
def test_bad_arguments_are_usage_errors(ip: RaisingShell, line: str, message: str) -> None:
    ip.user_ns["calls"] = []
    with pytest.raises(UsageError, match=message):
        cell(ip, f"{line}\ncalls.append(1)\n1\n")
    assert ip.user_ns["calls"] == []


def test_a_cell_ending_with_a_statement_is_refused_before_running(counted: RaisingShell) -> None:
    with pytest.raises(UsageError, match="last expression"):
        cell(counted, "%%formalize x\ncalls.append(1)\ny = 2\n")
    assert counted.user_ns["calls"] == []
    assert not Path(".skillnb").exists()


def test_help_lists_the_options(ip: RaisingShell) -> None:
    doc = ip.find_cell_magic("formalize").__doc__
    for option in ("--kind", "--var", "--stdout", "--force", "--idempotent", "--note"):
        assert option in doc
    assert SkillnbMagics.formalize.__doc__ == doc


def test_a_crash_mid_cell_is_uncertain_until_cleared(ip: RaisingShell) -> None:
    from skillnb.core.runstate.records import EventDraft

    run = current_run(ip)
    at = run.journal.clock()
    run.journal.append_drafts([EventDraft(type="step.started", at=at, data={"key": "formalize:x"})])
    with pytest.raises(UncertainStep) as caught:
        cell(ip, "%%formalize x\n1\n")
    assert "%skillnb clear formalize:x" in caught.value._render_traceback_()[0]  # type: ignore[attr-defined]
    cell(ip, "%skillnb clear formalize:x")
    cell(ip, "%%formalize x\n1\n")
    assert run.fact("x").value == 1  # type: ignore[union-attr]
    cell(ip, "%%formalize y --idempotent\n2\n")
    assert len(bundles(ip)) >= 2


def test_the_cells_own_warnings_are_shown_as_usual(ip: RaisingShell) -> None:
    with pytest.warns(DeprecationWarning, match="old api"):
        cell(ip, "%%formalize x\nimport warnings\nwarnings.warn('old api', DeprecationWarning)\n1")
    assert last(ip)[MIME]["status"] == "ok"
    assert "old api" not in last(ip)["text/plain"]


def test_warnings_the_user_filtered_out_stay_filtered_out(
    ip: RaisingShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown: list[str] = []
    monkeypatch.setattr(
        warnings, "showwarning", lambda message, *_a, **_k: shown.append(str(message))
    )
    body = "import warnings\nwarnings.warn('noisy library', UserWarning)\nwarnings.warn('kept')\n1"
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="noisy library")
        cell(ip, f"%%formalize x\n{body}")
        assert shown == ["kept"]  # the user's own filter holds inside the magic's body
        warnings.filterwarnings("error", message="strict")
        with pytest.raises(UserWarning, match="strict"):
            cell(ip, "%%formalize y\nimport warnings\nwarnings.warn('strict')\n2")
    assert current_run(ip).fact("y") is None  # raised where it was raised: nothing recorded


def test_skillnb_warnings_in_a_cell_become_its_note_whatever_the_filters(ip: RaisingShell) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # even so, SKILL.nb's own warnings are shown as notes
        cell(ip, "%%formalize x\nobject()")  # no encoder: an UnrestorableValueWarning
    assert last(ip)[MIME]["status"] == "warning"
    assert "no JSON encoding" in last(ip)["text/plain"]


@pytest.mark.parametrize(
    ("magic", "body"),
    [("%%formalize x", "1 +"), ("%%gate --name g", "1 +"), ("%%formalize x", "  x = 1\n x")],
)
def test_a_body_that_does_not_parse_is_shown_once_and_records_nothing(
    ip: RaisingShell, capsys: pytest.CaptureFixture[str], magic: str, body: str
) -> None:
    with pytest.raises(BodySyntaxError) as raised:
        cell(ip, f"{magic}\n{body}\n")
    assert isinstance(raised.value.syntax_error, SyntaxError)
    lines = raised.value._render_traceback_()  # type: ignore[attr-defined]
    assert len(lines) == 1
    assert "does not parse" in lines[0]
    assert "line 2" in lines[0]
    shown = capsys.readouterr()
    assert (shown.out + shown.err).count("Error:") == 1  # IPython's display, not a second one
    assert "cellexec.py" not in shown.out + shown.err  # no SKILL.nb frames
    run = current_run(ip)
    assert run.fact("x") is None
    cell(ip, f"{magic}\n1\n")  # mended: runs, nothing uncertain left behind


def test_the_magic_line_expands_names_from_the_namespace(ip: RaisingShell) -> None:
    ip.user_ns.update(which="budget", result="mine", words="cost 5")
    cell(ip, '%%formalize $which --note "{words}, {result}"\n5')
    fact = current_run(ip).fact("budget")
    assert fact is not None
    assert fact.note == "cost 5, mine"  # the user's names, never IPython's own locals
    cell(ip, "%%formalize plain --note '{missing}'\n1")  # cannot expand: kept as written
    kept = current_run(ip).fact("plain")
    assert kept is not None
    assert kept.note == "{missing}"
    cell(ip, "%%gate --name step_$which\npass")
    assert "gate:step_budget" in current_run(ip).journal.refresh().steps
