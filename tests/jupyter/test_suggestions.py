"""Suggestions under cells, ``%formalize NAME``/``--note``, ``--auto`` and ``%recall``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from shellkit import FakeChannel, RaisingShell, cell, last

import skillnb
from skillnb.jupyter.extension import current_run, current_session, current_suggestions

MARKET = Path(__file__).resolve().parents[1] / "fixtures" / "workflows" / "market_research.yaml"


def _plain_lines(shell: RaisingShell) -> list[str]:
    return [
        o["data"]["text/plain"]
        for o in shell.display_pub.outputs
        if "text/plain" in o["data"] and o["data"]["text/plain"].startswith("Keep?")
    ]


@pytest.fixture
def channel(ip: RaisingShell) -> FakeChannel:
    session = current_session(ip)
    assert session is not None
    fake = FakeChannel()
    session.channel = fake
    return fake


def test_a_cell_that_sets_parameters_gets_one_quiet_line(
    ip: RaisingShell, channel: FakeChannel
) -> None:
    cell(ip, "budget = 5000\nn = 0\nfor row in range(3):\n    n += 1", cell_id="c1")
    assert _plain_lines(ip) == ["Keep? budget (constraint) — %formalize NAME keeps one"]
    html = ip.display_pub.outputs[-1]["data"]["text/html"]
    assert "<code>budget</code>" in html
    (message,) = [m for m in channel.messages if "suggestions" in m]
    assert message["cell_id"] == "c1"
    assert message["suggestions"] == [
        {"name": "budget", "kind": "constraint", "score": 0.75, "reason": "a limit set in the cell"}
    ]
    session = current_session(ip)
    assert session is not None
    assert not session.run_exists()  # nothing kept, no run created just to suggest


def test_nothing_is_shown_for_noise(ip: RaisingShell) -> None:
    cell(ip, "print('loading...')\ntmp = 3\nstatus = 'processing 1/3...'")
    cell(ip, "x = 1")
    assert ip.display_pub.outputs == []


def test_a_failed_cell_suggests_nothing(ip: RaisingShell) -> None:
    with pytest.raises(ZeroDivisionError):
        cell(ip, "budget = 5000\n1 / 0")
    assert _plain_lines(ip) == []


def test_formalize_name_keeps_a_suggestion_with_its_kind(ip: RaisingShell) -> None:
    cell(ip, "chosen_option = 'B'  # we go with B", cell_id="c1")
    cell(ip, "%formalize chosen_option", cell_id="c2")
    fact = current_run(ip).fact("chosen_option")
    assert fact is not None
    assert (fact.value, fact.kind, fact.cell_id) == ("B", "decision", "c1")
    assert last(ip)["text/plain"] == "📌 chosen_option v1\ndecision = B"
    cell(ip, "chosen_option = 'B'")  # already kept: not offered again
    assert len(_plain_lines(ip)) == 1


def test_formalize_any_variable_with_a_kind_and_bad_names(ip: RaisingShell) -> None:
    ip.user_ns["region"] = "EU"
    cell(ip, "%formalize region --kind constraint")
    fact = current_run(ip).fact("region")
    assert fact is not None
    assert (fact.value, fact.kind) == ("EU", "constraint")
    with pytest.raises(UsageError, match="nothing named 'ghost'"):
        cell(ip, "%formalize ghost")
    with pytest.raises(UsageError, match="use %formalize NAME"):
        cell(ip, "%formalize")


def test_line_and_cell_formalize_live_side_by_side(ip: RaisingShell) -> None:
    assert "formalize" in ip.magics_manager.magics["line"]
    assert "formalize" in ip.magics_manager.magics["cell"]
    cell(ip, "%%formalize total\n2 + 3")
    assert current_run(ip).fact("total").value == 5  # type: ignore[union-attr]


def test_auto_mode_keeps_without_asking_and_off_mode_is_silent(ip: RaisingShell) -> None:
    cell(ip, '%config SkillNB.suggest = "auto"')
    cell(ip, "deadline = '2026-12-15'\ni = 0")
    assert current_run(ip).fact("deadline").value == "2026-12-15"  # type: ignore[union-attr]
    assert current_run(ip).fact("i") is None
    assert last(ip)["text/plain"].startswith("📌 kept deadline v1")
    cell(ip, '%config SkillNB.suggest = "off"')
    ip.display_pub.outputs.clear()
    cell(ip, "max_sources = 12")
    assert ip.display_pub.outputs == []
    assert current_run(ip).fact("max_sources") is None


def test_cell_magic_auto_keeps_what_the_cell_produced(ip: RaisingShell) -> None:
    cell(ip, "%%formalize --auto\nbudget = 5000\npriorities = ['price', 'reach']\nk = 3")
    run = current_run(ip)
    assert set(run.facts) == {"budget", "priorities"}
    assert run.facts["priorities"].kind == "decision"
    assert last(ip)["text/plain"].startswith("📌 kept priorities v1, budget v1")
    with pytest.raises(UsageError, match="required: key"):
        cell(ip, "%%formalize\n1")
    with pytest.raises(UsageError, match="takes no key"):
        cell(ip, "%%formalize x --auto\n1")


def extract_risks(text: str) -> dict[str, Any]:
    """An extractor as a user would supply (here: split on commas after the colon)."""
    risks = [r.strip() for r in text.split(":", 1)[1].split(",")]
    return {"risks": risks}


def test_note_pins_text_and_offers_extracted_values(ip: RaisingShell) -> None:
    sys.modules[__name__].extract_risks = extract_risks  # importable by name
    cell(ip, f'%config SkillNB.extractor = "{__name__}:extract_risks"')
    cell(ip, '%formalize --note "remember these three risks: supply, FX, churn"')
    run = current_run(ip)
    fact = run.fact("pin_remember_these_three_risks")
    assert fact is not None
    assert fact.kind == "note"
    assert run.fact("risks") is None  # offered, not kept
    assert _plain_lines(ip)[-1] == "Keep? risks (data) — %formalize NAME keeps one"
    cell(ip, "%formalize risks")
    assert run.fact("risks").value == ["supply", "FX", "churn"]  # type: ignore[union-attr]
    cell(ip, '%config SkillNB.extractor = "nowhere:thing"')
    with pytest.raises(UsageError, match="nowhere"):
        cell(ip, '%formalize --note "another"')


def test_reload_leaves_one_watcher(ip: RaisingShell) -> None:
    ip.run_line_magic("reload_ext", "skillnb")
    watcher = current_suggestions(ip)
    assert watcher is not None
    handlers = ip.events.callbacks["post_run_cell"]
    assert sum(1 for h in handlers if getattr(h, "__self__", None).__class__ is type(watcher)) == 1


def test_recall_lists_earlier_runs(ip: RaisingShell, tmp_path: Path) -> None:
    workflow = skillnb.Workflow.from_yaml(MARKET)
    old = skillnb.open_run(state_dir=tmp_path / "old", workflow=workflow, memory=False)
    old.formalize("topic", "EU retail", kind="decision")
    old.fire("user_request")
    old.formalize("sources", ["a", "b", "c", "d", "e"])
    old.fire("data_sufficient")
    old.formalize("analysis", "prices fall in the low end of the EU retail market")
    old.archive(force=True)
    cell(ip, f"%workflow {MARKET}")
    cell(ip, "%recall low end prices -k 2")
    text = last(ip)["text/plain"]
    assert text.startswith("🔎 recalled 2 for 'low end prices'")
    assert f"[run {old.id}, analyzing, " in text
    cell(ip, "%recall zebra")
    assert "nothing recalled" in last(ip)["text/plain"]
    cell(ip, "%recall low end prices -k 2  # what earlier runs found")  # the comment is dropped
    assert last(ip)["text/plain"] == text


@pytest.mark.parametrize(
    ("line", "kept"),
    [
        ("battery prices  # what earlier runs recorded", "battery prices"),
        ("# only a comment", ""),
        ("issue#4 prices", "issue#4 prices"),  # not a comment: it does not start a word
        ('--note "see # 3, then #4"  # and a comment', '--note "see # 3, then #4"'),
        ("--note 'it''s #1'", "--note 'it''s #1'"),
        ("plain words", "plain words"),
    ],
)
def test_a_trailing_comment_is_dropped_from_a_line_magic(line: str, kept: str) -> None:
    from skillnb.jupyter.suggest.magics import without_comment

    assert without_comment(line) == kept


def test_formalize_name_ignores_a_trailing_comment(ip: RaisingShell) -> None:
    cell(ip, "budget = 4000")
    cell(ip, "%formalize budget  # the client's cap")
    assert last(ip)["text/plain"].startswith("📌 budget v1")


def test_a_keep_button_keeps_the_name_once(ip: RaisingShell) -> None:
    from skillnb.jupyter.suggest.buttons import keep_buttons

    cell(ip, "segment = 'mid-size retailers'  # decided with the client", cell_id="c1")
    watcher = current_suggestions(ip)
    assert watcher is not None
    found = watcher.pending.live()
    offer = watcher.pending.get("segment")
    assert offer is not None
    form = keep_buttons(found, lambda name: watcher.keep_offer(offer))
    (button,) = form.widget.children
    assert form.text == "Keep segment — not kept"
    assert button.description == "Keep segment"
    button.click()
    assert (button.description, button.disabled) == ("✓ segment v1", True)
    assert form.text == "Keep segment — kept as v1"  # what a reopened notebook reads
    fact = current_run(ip).fact("segment")
    assert fact is not None
    assert (fact.kind, fact.cell_id) == ("decision", "c1")
    assert watcher.pending.live() == []  # kept: no longer on offer
    version = current_run(ip).version
    again = keep_buttons(found, lambda name: watcher.keep_offer(offer))
    again.widget.children[0].click()  # the same value once more: v1 stands, and it says so
    assert again.text == "Keep segment — already kept as v1"
    assert current_run(ip).version == version
    cell(ip, "segment = 'large retailers'", cell_id="c2")
    late = keep_buttons(found, lambda name: watcher.keep_offer(offer))
    late.widget.children[0].click()  # the button's value is gone: nothing is kept
    assert late.text.startswith("Keep segment — not kept (segment changed since this cell ran")
    assert current_run(ip).fact("segment").version == 1  # type: ignore[union-attr]


def test_formalize_name_again_with_the_same_value_writes_nothing(ip: RaisingShell) -> None:
    cell(ip, "topic = 'heat pumps'  # decided with the client", cell_id="c1")
    cell(ip, "%formalize topic", cell_id="c2")
    assert last(ip)["text/plain"] == "📌 topic v1\ndecision = heat pumps"
    run = current_run(ip)
    version = run.version
    cell(ip, "%formalize topic", cell_id="c2")  # run again: the same output, nothing written
    assert run.version == version
    assert last(ip)["text/plain"] == "📌 topic v1\ndecision = heat pumps"
    cell(ip, "%formalize topic --tell-kept", cell_id="c4")  # as the panel's Keep sends it
    assert run.version == version
    assert last(ip)["text/plain"] == "topic is already kept as v1 with this value"
    cell(ip, "topic = 'heat pumps in the EU'")
    cell(ip, "%formalize topic", cell_id="c2")
    assert run.fact("topic").version == 2  # type: ignore[union-attr]
    assert last(ip)["text/plain"] == "📌 topic v2\ndata = heat pumps in the EU"


def _offered(channel: FakeChannel) -> list[list[str]]:
    """The lists of names the panel was sent, in order."""
    return [[s["name"] for s in m["suggestions"]] for m in channel.messages if "suggestions" in m]


def test_a_kept_suggestion_is_withdrawn_from_the_panel(
    ip: RaisingShell, channel: FakeChannel
) -> None:
    cell(ip, "deadline = '2026-12-15'\nbudget = 4000", cell_id="c1")
    assert _offered(channel) == [["budget", "deadline"]]
    cell(ip, "%formalize budget", cell_id="c2")
    assert _offered(channel)[-1] == ["deadline"]
    watcher = current_suggestions(ip)
    assert watcher is not None
    watcher.keep("deadline")  # as the panel's Keep does, outside any cell
    assert _offered(channel)[-1] == []
    cell(ip, "x = 1", cell_id="c3")  # nothing changed: nothing more is sent
    assert len(_offered(channel)) == 3


def test_a_fact_written_another_way_withdraws_its_suggestion(
    ip: RaisingShell, channel: FakeChannel
) -> None:
    cell(ip, "deadline = '2026-12-15'", cell_id="c1")
    cell(ip, "import skillnb\nskillnb.current_run().formalize('deadline', deadline)", "c2")
    assert _offered(channel) == [["deadline"], []]


def test_a_cell_run_again_supersedes_its_suggestions(
    ip: RaisingShell, channel: FakeChannel
) -> None:
    cell(ip, "deadline = '2026-12-15'", cell_id="c1")
    cell(ip, "budget = 4000", cell_id="c2")
    assert _offered(channel)[-1] == ["budget", "deadline"]  # the newest cell's first
    cell(ip, "print('no deadline here any more')", cell_id="c1")
    assert _offered(channel)[-1] == ["budget"]
    cell(ip, "budget = 4000", cell_id="c2")  # offered again by its new run, not twice
    assert _offered(channel)[-1] == ["budget"]
    assert len(_offered(channel)) == 3


def test_a_name_reassigned_or_deleted_later_is_withdrawn(
    ip: RaisingShell, channel: FakeChannel
) -> None:
    cell(ip, "deadline = '2026-12-15'\nbudget = 4000", cell_id="c1")
    cell(ip, "deadline = None", cell_id="c2")  # not worth keeping: nothing offered instead
    assert _offered(channel)[-1] == ["budget"]
    cell(ip, "del budget", cell_id="c3")
    assert _offered(channel)[-1] == []
    with pytest.raises(UsageError, match="nothing named 'budget'"):
        cell(ip, "%formalize budget", cell_id="c4")


def test_a_value_changed_by_a_later_cell_is_offered_from_that_cell(
    ip: RaisingShell, channel: FakeChannel
) -> None:
    cell(ip, "deadline = '2026-12-15'", cell_id="c1")
    cell(ip, "deadline = '2027-01-31'  # moved by the client", cell_id="c2")
    watcher = current_suggestions(ip)
    assert watcher is not None
    offer = watcher.pending.get("deadline")
    assert offer is not None
    assert (offer.cell_id, offer.value) == ("c2", "2027-01-31")
    assert _offered(channel) == [["deadline"]]  # the same name: the list did not change
