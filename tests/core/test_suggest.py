"""Suggestions: the pure ranking of what a cell produced (skillnb.suggest)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import skillnb
from skillnb.core.suggest.namespace import NamespaceWatch
from skillnb.core.suggest.novelty import most_similar, sample_text, similarity, sketch
from skillnb.core.suggest.rank import THRESHOLD, Suggestion, rank, suggest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
import suggest_cells


def test_fixture_precision_and_recall_reach_the_goal() -> None:
    result = suggest_cells.replay()
    assert result["cells"] >= 30
    assert result["tp"] + result["fn"] >= 15  # enough names to keep for the figures to mean much
    assert result["precision"] >= 0.8, result["mistakes"]
    assert result["recall"] >= 0.8, result["mistakes"]


def test_public_name_is_lazy_and_returns_suggestions() -> None:
    found = skillnb.suggest("budget = 5000", {"budget": 5000})
    assert found == [Suggestion("budget", "constraint", 0.75, "a limit set in the cell")]
    assert skillnb.Suggestion is Suggestion
    assert found[0].to_dict() == {
        "name": "budget",
        "kind": "constraint",
        "score": 0.75,
        "reason": "a limit set in the cell",
    }


@pytest.mark.parametrize(
    ("source", "name", "value", "kind"),
    [
        ("choice = 'A'", "choice", "A", "decision"),
        ("go_ahead_confirmed = 'yes'", "go_ahead_confirmed", "yes", "decision"),
        ("vendor = 'Acme'  # decided: we go with Acme", "vendor", "Acme", "decision"),
        ("brief = input()", "brief", "EU retail", "data"),
        ("rows = db.query('q')", "rows", [{"a": 1}, {"a": 2}], "data"),
        ("text = llm('p')", "text", "x" * 300, "summary"),
        ("%%time\nbudget_cap = 10", "budget_cap", 10, "constraint"),
    ],
)
def test_rules_by_intent_and_content_suggest(
    source: str, name: str, value: object, kind: str
) -> None:
    (found,) = suggest(source, {name: value})
    assert (found.name, found.kind) == (name, kind)
    assert THRESHOLD <= found.score <= 1


@pytest.mark.parametrize(
    ("source", "name", "value", "reason"),
    [
        ("for item_no in range(3): pass", "item_no", 2, "a loop variable or counter"),
        ("seen += 1", "seen", 4, "a loop variable or counter"),
        ("tmp_rows = [1, 2, 3]", "tmp_rows", [1, 2, 3], "a scratch name"),
        ("r = api.get(u)", "reply", {"status": 500, "body": ""}, "a failed call"),
        ("r = api.get(u)", "reply", {"ok": False}, "a failed call"),
        ("caught = e", "caught", ValueError("boom"), "a failed call"),
        ("s = 'Processing 4/10'", "state_text", "Processing 4/10", "progress text"),
        ("import json", "json", sys, "not a value"),
        ("def f(): pass", "f_func", len, "not a value"),
        ("nothing = None", "nothing", None, "not a value"),
    ],
)
def test_noise_is_never_suggested(source: str, name: str, value: object, reason: str) -> None:
    assert suggest(source, {name: value}) == []
    assert rank(source, {name: value})[0].reason == reason


def test_source_that_does_not_parse_still_ranks_by_content() -> None:
    found = suggest("rows = (", {"rows": [{"a": i} for i in range(5)]})
    assert [s.name for s in found] == ["rows"]


def test_novelty_against_kept_facts() -> None:
    records = [{"company": f"C{i}", "share": i / 10} for i in range(20)]
    source = "rows = db.query('q')"
    assert suggest(source, {"rows": records}, {"rows": list(records)}) == []
    (changed,) = suggest(source, {"rows": records[:10]}, {"rows": records})
    assert "changed since kept" in changed.reason
    (fresh,) = suggest(source, {"rows": records})
    assert rank(source, {"rows": records}, {"market": records})[0].score == fresh.score / 2


def test_facts_may_be_fact_records() -> None:
    run = skillnb.open_run(store=skillnb_store(), memory=False)
    run.formalize("budget", 5000, kind="constraint")
    assert suggest("budget = 5000", {"budget": 5000}, run.facts) == []


def skillnb_store() -> object:
    from skillnb.store import MemoryStore

    return MemoryStore()


def test_large_values_are_sampled_not_walked() -> None:
    big = [{"id": i, "name": f"n{i}"} for i in range(200_000)]
    text = sample_text(big)
    assert len(text) <= 480
    assert "199999" in text  # the last items are in the sample
    (found,) = suggest("rows = db.query('all')", {"rows": big})
    assert found.score == 1.0 or found.score >= 0.8


def test_similarity_is_deterministic_and_bounded() -> None:
    a = sketch("the market grows twelve percent a year")
    assert sketch("the market grows twelve percent a year") == a
    assert similarity(a, a) == 1.0
    assert similarity(a, sketch("completely unrelated words here")) < 0.3
    name, score = most_similar("abc market", [("x", "zzz"), ("y", "abc market")])
    assert (name, score) == ("y", 1.0)


def test_namespace_watch_sees_new_changed_and_in_place_names() -> None:
    ns: dict[str, object] = {"kept": 1, "rows": [1], "same": "s", "_hidden": 0}
    watch = NamespaceWatch(hidden=("In",))
    watch.before(ns)
    ns.update(new=2, kept=3, In=[], _private=1)
    rows = ns["rows"]
    assert isinstance(rows, list)
    rows.append(2)
    assert watch.changed(ns) == {"new": 2, "kept": 3, "rows": [1, 2]}
    assert watch.changed(ns) == {}  # nothing without a new before()
