"""The inline SVG state diagram: structure, layout, marks, text alternative, hostile names."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from skillnb.core.workflow.diagram import to_svg
from skillnb.core.workflow.diagram_layout import SMALL_PX
from skillnb.core.workflow.model import Workflow

MARKET = Path(__file__).parent.parent / "fixtures" / "workflows" / "market_research.yaml"
SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = '</svg><b>x</b><desc>"&'
"""Markup-like text a definition may hold (active markup, e.g. ``<script>``, is refused)."""

LOOPY = Workflow.from_dict(
    {
        "name": "loopy",
        "states": ["a", "b", "c", "d"],
        "transitions": [
            {"from": "a", "to": "b", "trigger": "go"},
            {"from": "b", "to": "c", "trigger": "next"},
            {"from": "c", "to": "d", "trigger": "finish"},
            {"from": "c", "to": "a", "trigger": "again"},
            {"from": "a", "to": "c", "trigger": "skip"},
            {"from": "b", "to": "b", "trigger": "retry"},
            {"from": "a", "to": "b", "trigger": "also_go"},
            {"from": "*", "to": "a", "trigger": "reset"},
        ],
    }
)


def parse(markup: str) -> ET.Element:
    """The ``<div>`` around the diagram, parsed as XML (the markup must be well formed)."""
    return ET.fromstring(markup)  # noqa: S314  # our own output, not untrusted input


def svg_of(markup: str) -> ET.Element:
    svg = parse(markup).find(f"{SVG}svg")
    assert svg is not None
    return svg


def texts(svg: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in svg.iter(f"{SVG}text")]


@pytest.fixture
def market() -> Workflow:
    return Workflow.from_yaml(MARKET)


def test_an_accessible_image_of_natural_size_in_a_scrolling_box(market: Workflow) -> None:
    markup = to_svg(market, current="analyzing", visited=["init", "collecting", "analyzing"])
    div = parse(markup)
    assert div.get("class") == "skillnb-diagram"
    assert "overflow-x:auto" in (div.get("style") or "")
    assert div.get("tabindex") == "0"  # a scrolling region is reachable by keyboard
    svg = svg_of(markup)
    assert svg.get("role") == "img"
    width, height = int(svg.get("width") or 0), int(svg.get("height") or 0)
    assert width > 4 * height > 0  # a row of five states, left to right
    style = svg.get("style") or ""
    assert f"width:{width}px" in style
    assert "max-width:none" in style
    assert svg.get("viewBox") == f"0 0 {width} {height}"
    sizes = [int(s) for s in re.findall(r"font-size:(\d+)px", markup)]
    assert sizes
    assert min(sizes) >= 11
    assert [t.tag for t in svg][:2] == [f"{SVG}title", f"{SVG}desc"]
    assert "id=" not in markup
    assert "marker" not in markup


def test_every_state_and_transition_is_drawn_and_labelled(market: Workflow) -> None:
    drawn = texts(svg_of(to_svg(market)))
    for state in market.states:
        assert state in drawn
    for transition in market.transitions:
        assert transition.trigger in drawn
    edges = sum(len(t.source) for t in market.transitions)  # one arrow per source state
    assert edges > len(market.transitions)  # restart leaves two states
    assert len(list(svg_of(to_svg(market)).iter(f"{SVG}polygon"))) == 1 + edges


def test_current_state_has_a_thick_border_and_says_current(market: Workflow) -> None:
    svg = svg_of(to_svg(market, current="analyzing", visited=["init", "analyzing"]))
    (current,) = [g for g in svg.iter(f"{SVG}g") if g.get("class") == "skillnb-diagram-current"]
    assert texts(current) == ["analyzing", "● current"]
    rect = current.find(f"{SVG}rect")
    assert rect is not None
    assert "stroke-width:3" in (rect.get("style") or "")
    (visited,) = [g for g in svg.iter(f"{SVG}g") if g.get("class") == "skillnb-diagram-visited"]
    assert texts(visited) == ["init", "✓ visited"]
    others = [g for g in svg.iter(f"{SVG}g") if g.get("class") == "skillnb-diagram-state"]
    assert [texts(g) for g in others] == [["collecting"], ["reporting"], ["done"]]


def test_text_alternative_lists_states_transitions_and_the_current_state(
    market: Workflow,
) -> None:
    svg = svg_of(
        to_svg(
            market,
            current="reporting",
            visited=["init", "collecting", "analyzing", "reporting"],
            statuses={"publish": "waiting"},
        )
    )
    title = svg.findtext(f"{SVG}title") or ""
    desc = svg.findtext(f"{SVG}desc") or ""
    assert "Market_Research" in title
    assert "current state reporting" in title
    for state in market.states:
        assert state in desc
    assert "reporting (current)" in desc
    assert "init (visited)" in desc
    assert "reporting to done on publish (waiting for approval)" in desc
    assert "init to collecting on user_request" in desc
    assert desc.endswith("Current state: reporting.")
    assert "publish ⏳" in texts(svg)  # the status is a mark on the label, not colour alone


def test_themed_by_jupyterlab_variables_with_fallbacks(market: Workflow) -> None:
    markup = to_svg(market, current="init")
    colours = re.findall(r"(?:fill|stroke):([^;\"]+)", markup)
    assert colours
    for colour in colours:
        assert colour == "none" or colour.startswith("var(--jp-"), colour
        if colour != "none":
            assert "," in colour, f"{colour}: no fallback"


def test_hostile_names_are_escaped_everywhere() -> None:
    workflow = Workflow.from_dict(
        {
            "name": f"wf {HOSTILE}",
            "states": [f"s {HOSTILE}", "</text></svg><i>i</i>", "a&b"],
            "transitions": [
                {"from": f"s {HOSTILE}", "to": "</text></svg><i>i</i>", "trigger": HOSTILE},
                {"from": "*", "to": "a&b", "trigger": '"quoted" & <b>'},
            ],
        }
    )
    markup = to_svg(workflow, current="a&b", visited=[f"s {HOSTILE}"])
    svg = svg_of(markup)  # well formed: nothing broke out of its element
    assert "<b>" not in markup
    assert "<i>" not in markup
    assert '<desc>"' not in markup
    assert markup.count("</svg>") == 1
    assert markup.count("<desc>") == 1
    assert "</text></svg><i>i</i>" in texts(svg)
    assert HOSTILE in texts(svg)
    assert '"quoted" & <b>' in texts(svg)
    assert HOSTILE in (svg.findtext(f"{SVG}desc") or "")
    assert "a&b" in (svg.findtext(f"{SVG}title") or "")
    assert HOSTILE in (parse(markup).get("aria-label") or "")


def test_no_label_overlaps_another_or_a_box() -> None:
    svg = svg_of(to_svg(LOOPY, current="b", visited=["a"]))
    rects = [
        tuple(float(r.get(k) or 0) for k in ("x", "y", "width", "height"))
        for r in svg.iter(f"{SVG}rect")
    ]
    assert len(rects) == 5 + 8  # four states and "any state", eight labels
    for i, a in enumerate(rects):
        for b in rects[i + 1 :]:
            apart = a[0] + a[2] <= b[0] or b[0] + b[2] <= a[0]
            apart = apart or a[1] + a[3] <= b[1] or b[1] + b[3] <= a[1]
            assert apart, (a, b)
    labels = [t for t in texts(svg) if t in {"go", "also_go", "again", "retry", "reset"}]
    assert sorted(labels) == ["again", "also_go", "go", "reset", "retry"]


def test_output_is_deterministic_and_follows_the_run() -> None:
    first = to_svg(LOOPY, current="c", visited=["a", "b"], statuses={"finish": "blocked"})
    assert first == to_svg(LOOPY, current="c", visited=["a", "b"], statuses={"finish": "blocked"})
    assert "finish ✗" in texts(svg_of(first))
    assert first != to_svg(LOOPY, current="d", visited=["a", "b", "c"])


def test_long_names_are_clipped_in_the_box_and_whole_in_the_description() -> None:
    long = "x" * 120
    workflow = Workflow.from_dict(
        {
            "name": "long",
            "states": [long, "b"],
            "transitions": [{"from": long, "to": "b", "trigger": "t"}],
        }
    )
    svg = svg_of(to_svg(workflow))
    assert long not in texts(svg)
    assert "x" * 39 + "…" in texts(svg)
    assert long in (svg.findtext(f"{SVG}desc") or "")
    assert SMALL_PX >= 11


def test_without_its_markup_the_diagram_still_reads_as_text(market: Workflow) -> None:
    """What stays where a sanitizer removes the SVG elements and keeps their text."""
    markup = to_svg(market, current="collecting", visited=["init"])
    left = " ".join(re.sub(r"<[^>]+>", "", markup).split())
    assert left.startswith("State diagram of workflow Market_Research, current state collecting ")
    assert " Current state: collecting. " in left
    assert " collecting ● current " in left
