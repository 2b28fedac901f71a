"""Per-run limits: a run past its cap keeps working, archives old versions, and warns."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from skillnb.core.capacity import CapacityWarning, Limits, Usage, assess, due, well_within
from skillnb.core.suggest.rank import Suggestion
from skillnb.errors import SkillnbError
from skillnb.run import open_run


def test_a_run_past_its_byte_cap_keeps_working_and_history_lists_every_version(
    tmp_path: Path,
) -> None:
    run = open_run(state_dir=tmp_path, memory=False, limits=Limits(max_bytes=6000))
    for n in range(80):
        run.formalize("draft", {"n": n, "text": "paragraph " * 20})
    assert run.fact("draft").version == 80  # type: ignore[union-attr]
    segments = list((tmp_path / "segments").iterdir())
    assert len(segments) >= 5  # old versions were archived, several times
    assert (tmp_path / "journal.jsonl").stat().st_size <= 6000 + 600
    assert [f.version for f in run.fact_history("draft")] == list(range(1, 81))
    assert len(run.history(500)) == run.version
    reopened = open_run(state_dir=tmp_path, memory=False)
    assert reopened.fact("draft").value["n"] == 79  # type: ignore[union-attr]


def test_warns_once_as_the_run_nears_its_fact_limit(tmp_path: Path) -> None:
    run = open_run(state_dir=tmp_path, memory=False, limits=Limits(max_facts=5))
    for key in "abc":
        run.formalize(key, 1)
    with pytest.warns(CapacityWarning, match="keeps 4 facts"):
        run.formalize("d", 1)
    for key in "efgh":  # past the limit: still works, no new warning
        run.formalize(key, 1)
    assert len(run.facts) == 8


def test_warns_when_the_current_state_alone_nears_the_byte_cap(tmp_path: Path) -> None:
    run = open_run(state_dir=tmp_path, memory=False, limits=Limits(max_bytes=3000))
    for n in range(3):
        run.formalize(f"big{n}", "x" * 900)
    with pytest.warns(CapacityWarning, match="current state takes"):
        run.formalize("big3", "x" * 900)
    assert run.fact("big3") is not None


def test_limits_from_the_environment() -> None:
    env = {"SKILLNB_MAX_FACTS": "12", "SKILLNB_MAX_BYTES": " 4096 "}
    assert Limits.from_env(env) == Limits(max_facts=12, max_bytes=4096)
    assert Limits.from_env({}) == Limits()
    with pytest.raises(ValueError, match="SKILLNB_MAX_BYTES='-3'"):
        Limits.from_env({"SKILLNB_MAX_BYTES": "-3"})
    with pytest.raises(ValueError, match="positive"):
        Limits(max_facts=0)


def test_assess_is_pure() -> None:
    limits = Limits(max_facts=10, max_bytes=100)
    assert assess(Usage(facts=1, live_bytes=50), limits) == (False, {})
    compact, warnings = assess(Usage(facts=9, live_bytes=101, snapshot_bytes=90), limits)
    assert compact
    assert set(warnings) == {"facts", "bytes"}
    assert assess(Usage(facts=1, live_bytes=None), limits) == (False, {})


def test_assess_leaves_out_the_warnings_already_given() -> None:
    limits = Limits(max_facts=10, max_bytes=100)
    usage = Usage(facts=9, live_bytes=101, snapshot_bytes=90)
    assert assess(usage, limits, {"facts"}) == (True, {"bytes": assess(usage, limits)[1]["bytes"]})
    assert assess(usage, limits, {"facts", "bytes"}) == (True, {})


def test_a_run_past_a_limit_warns_once_and_keeps_compacting(tmp_path: Path) -> None:
    run = open_run(state_dir=tmp_path, memory=False, limits=Limits(max_facts=2, max_bytes=4000))
    run.formalize("k0", 0)
    with pytest.warns(CapacityWarning, match="keeps 2 facts"):
        run.formalize("k1", 1)
    run.formalize("k2", 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CapacityWarning)  # told once: never again
        for i in range(60):
            run.formalize(f"k{i % 3}", "x" * 50)
    assert run.store.live_bytes() <= 4000 + 400  # compacted past the byte cap
    run.close()


def test_pin_keeps_a_note_and_offers_extracted_values_as_suggestions(tmp_path: Path) -> None:
    run = open_run(state_dir=tmp_path, memory=False)
    run.formalize("risk_fx", "currency swings")

    def extractor(text: str) -> list[dict[str, object]]:
        assert text.startswith("remember")
        return [
            {"name": "risk_supply", "value": "one supplier", "kind": "constraint"},
            {"name": "risk_fx", "value": "currency swings"},
            {"name": "risk_churn", "value": "churn after price rise", "reason": "from the pin"},
        ]

    text = "remember these three risks: one supplier, currency swings, churn after price rise"
    fact, offered, values = run.pin(text, extractor=extractor)

    assert (fact.key, fact.kind, fact.value) == ("pin_remember_these_three_risks", "note", text)
    assert offered == [
        Suggestion("risk_churn", "data", 0.9, "from the pin"),
        Suggestion("risk_supply", "constraint", 0.9, "extracted from a pin"),
    ]
    assert values == {"risk_churn": "churn after price rise", "risk_supply": "one supplier"}
    assert set(run.facts) == {"risk_fx", "pin_remember_these_three_risks"}  # nothing kept


def test_pin_refuses_empty_text_and_bad_extractors(tmp_path: Path) -> None:
    run = open_run(state_dir=tmp_path, memory=False)
    with pytest.raises(SkillnbError, match="some text"):
        run.pin("  ")
    with pytest.raises(ValueError, match="needs a 'name'"):
        run.pin("remember x", extractor=lambda _t: [("x", 1)])
    fact, offered, _ = run.pin("budget is 5000", kind="constraint", key="budget_note")
    assert (fact.key, fact.kind, offered) == ("budget_note", "constraint", [])


def test_well_within_agrees_with_assess_at_every_edge() -> None:
    limits = Limits(max_facts=10, max_bytes=100, warn_at=0.8)
    for facts in (0, 7, 8, 9, 10, 11):
        for live in (None, 0, 99, 100, 101, 500):
            for snapshot in (0, 79, 80, 81, 200):
                quiet = assess(Usage(facts, live, snapshot), limits) == (False, {})
                assert well_within(limits, facts, live, snapshot) == quiet, (facts, live, snapshot)


def test_due_is_assess_without_the_warnings_given_at_every_edge() -> None:
    limits = Limits(max_facts=10, max_bytes=100, warn_at=0.8)
    for given in ((), ("facts",), ("bytes",), ("facts", "bytes")):
        for facts in (0, 7, 8, 9, 10, 11):
            for live in (None, 0, 99, 100, 101, 500):
                for snapshot in (0, 79, 80, 81, 200):
                    compact, warnings = assess(Usage(facts, live, snapshot), limits)
                    expected = (compact, {k: v for k, v in warnings.items() if k not in given})
                    found = due(limits, facts, live, snapshot, given)
                    assert found == expected, (given, facts, live, snapshot)
