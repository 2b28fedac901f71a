"""The state diagram reads at any width, in JupyterLab Light and Dark, for axe and for people.

A notebook binds the five-state ``market_research`` workflow in a ``%%workflow`` cell and
shows the run view (``%skillnb status``). Both draw the state machine as inline SVG (no
``<img>``): measured in the page, its text is at least 11 px as rendered and is never
scaled (the SVG keeps its natural width; its box scrolls at 1024 px), the label text and
the edges stand out from the output's background by at least 3:1 (computed from the
rendered colours), axe finds no serious or critical violation in it, and the run view's
diagram/list toggle says which is pressed (``aria-pressed``). The saved ``text/html`` of the
view holds the same SVG, so a reopened notebook shows it too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from labkit import set_theme, write_code_notebook

pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).parent.parent / "fixtures" / "workflows"
KERNEL_START_MS = 60_000
VIEW = ".skillnb-run-view"
DIAGRAM = ".skillnb-diagram > svg[role='img']"
SCREENS = Path(__file__).resolve().parents[2] / "test-output" / "screens"
SERIOUS = {"serious", "critical"}

# For one rendered diagram: its size as drawn and as declared, every text's rendered font
# size, height and colour (with the colour of the label box behind it, if any), every edge's
# stroke, and the background of the output the diagram sits on.
MEASURE = """
(svg) => {
    const style = (el) => getComputedStyle(el);
    let back = 'rgb(255, 255, 255)';
    for (let n = svg.parentElement; n; n = n.parentElement) {
        const bg = style(n).backgroundColor;
        if (bg && bg !== 'rgba(0, 0, 0, 0)' && bg !== 'transparent') { back = bg; break; }
    }
    const box = svg.getBoundingClientRect();
    const texts = [...svg.querySelectorAll('text')].map((t) => {
        const prev = t.previousElementSibling;
        const label = prev && prev.tagName === 'rect' && !t.closest('g') ? style(prev).fill : null;
        return {text: t.textContent, size: parseFloat(style(t).fontSize),
                height: t.getBoundingClientRect().height, fill: style(t).fill, label};
    });
    const edges = [...svg.querySelectorAll('polyline, polygon')].map((e) => ({
        stroke: e.tagName === 'polyline' ? style(e).stroke : style(e).fill}));
    const host = svg.parentElement;
    return {width: box.width, declared: parseFloat(svg.getAttribute('width')), back, texts,
            edges, images: host.querySelectorAll('img').length,
            scrolls: host.scrollWidth > host.clientWidth, overflow: style(host).overflowX};
}
"""


def expect() -> Any:
    return pytest.importorskip("playwright.sync_api").expect


def rgb(colour: str) -> tuple[float, float, float, float]:
    """``rgb(...)``/``rgba(...)``/``#rrggbb`` as (r, g, b, alpha)."""
    colour = colour.strip()
    if colour.startswith("#"):
        hexa = colour[1:]
        if len(hexa) == 3:
            hexa = "".join(c * 2 for c in hexa)
        return (int(hexa[0:2], 16), int(hexa[2:4], 16), int(hexa[4:6], 16), 1.0)
    inner = colour[colour.index("(") + 1 : colour.index(")")].replace("/", ",")
    parts = [p for p in inner.replace(",", " ").split() if p]
    alpha = float(parts[3]) if len(parts) > 3 else 1.0
    return (float(parts[0]), float(parts[1]), float(parts[2]), alpha)


def over(top: tuple[float, ...], under: tuple[float, ...]) -> tuple[float, float, float]:
    a = top[3]
    return (
        top[0] * a + under[0] * (1 - a),
        top[1] * a + under[1] * (1 - a),
        top[2] * a + under[2] * (1 - a),
    )


def luminance(colour: tuple[float, float, float]) -> float:
    def channel(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in colour)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(text: str, back: str, page_back: str) -> float:
    """WCAG contrast of ``text`` on ``back`` (itself over ``page_back``)."""
    base = over(rgb(page_back), (255, 255, 255, 1))
    behind = over(rgb(back), (*base, 1.0))
    front = over(rgb(text), (*behind, 1.0))
    light, dark = sorted((luminance(front), luminance(behind)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


@pytest.fixture
def diagram_folder(lab_server: Any) -> Any:
    folder = lab_server.folder("diagram")
    yield folder
    status, sessions = lab_server.api("GET", "api/sessions")
    assert status == 200, sessions
    for session in sessions:
        if str(session.get("path", "")).startswith("diagram/"):
            lab_server.api("DELETE", f"api/sessions/{session['id']}")


def axe_violations(page: Any, selector: str) -> list[str]:
    """Axe's serious and critical violations inside ``selector``, one line each."""
    axe_module = pytest.importorskip("axe_playwright_python.sync_playwright")
    page.evaluate(
        "() => { for (const el of [document.documentElement, document.body]) "
        "el.style.height = '100%'; }"
    )
    results = axe_module.Axe().run(page, context={"include": [[selector]]}, options=None)
    response: dict[str, Any] = results.response
    return [
        f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes'][:4]]}"
        for v in response["violations"]
        if v.get("impact") in SERIOUS
    ]


def problems(name: str, theme: str, measured: dict[str, Any]) -> list[str]:
    """What makes one measured diagram hard to read (empty when it reads well)."""
    where = f"{theme} {name}"
    found = []
    if measured["images"]:
        found.append(f"{where}: an <img> in the diagram")
    if abs(measured["width"] - measured["declared"]) > 0.5:
        found.append(f"{where}: drawn {measured['width']} px wide, not {measured['declared']}")
    back = measured["back"]
    for text in measured["texts"]:
        if text["size"] < 11 or text["height"] < 11:
            found.append(f"{where}: {text['text']!r} at {text['size']} px ({text['height']})")
        behind = text["label"] or back
        for under in {behind, back}:
            ratio = contrast(text["fill"], under, back)
            if ratio < 3:
                found.append(f"{where}: {text['text']!r} {text['fill']} on {under}: {ratio:.2f}")
    for edge in measured["edges"]:
        ratio = contrast(edge["stroke"], back, back)
        if ratio < 3:
            found.append(f"{where}: edge {edge['stroke']} on {back}: {ratio:.2f}")
    return found


def test_the_diagram_is_inline_svg_readable_in_both_themes_and_at_any_width(
    lab_server: Any, page: Any, diagram_folder: Path
) -> None:
    check = expect()
    yaml = (FIXTURES / "market_research.yaml").read_text()
    cells = ("%load_ext skillnb", f"%%workflow\n{yaml}", "%skillnb status")
    write_code_notebook(diagram_folder / "market.ipynb", cells)
    page.goto(f"{lab_server.url}lab/workspaces/diagram/tree/diagram/market.ipynb?reset")
    cells = page.locator(".jp-Notebook .jp-Cell")
    check(cells).to_have_count(3, timeout=60_000)
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel",
        timeout=KERNEL_START_MS,
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    workflow_diagram = cells.nth(1).locator(DIAGRAM)
    widget_diagram = cells.nth(2).locator(VIEW).locator(DIAGRAM)
    check(workflow_diagram).to_have_count(1, timeout=KERNEL_START_MS)
    check(widget_diagram).to_have_count(1, timeout=KERNEL_START_MS)
    check(cells.nth(2).locator(".jp-RenderedMermaid, img")).to_have_count(0)
    for state in ("init", "collecting", "analyzing", "reporting", "done"):
        check(widget_diagram.locator("text", has_text=state)).not_to_have_count(0)
    check(widget_diagram.locator("g.skillnb-diagram-current")).to_contain_text("current")
    assert "States: init (current)" in widget_diagram.locator("desc").text_content()

    SCREENS.mkdir(parents=True, exist_ok=True)
    found: list[str] = []
    for theme in ("light", "dark"):
        set_theme(page, theme)
        for name, diagram in (("workflow", workflow_diagram), ("widget", widget_diagram)):
            measured = diagram.evaluate(MEASURE)
            assert len(measured["texts"]) >= 10, measured
            found += problems(name, theme, measured)
        found += [f"{theme}: {v}" for v in axe_violations(page, ".skillnb-diagram")]
        cells.nth(2).locator(VIEW).screenshot(path=str(SCREENS / f"run-diagram-{theme}.png"))
    set_theme(page, "light")
    assert not found, "\n".join(found)

    # A narrower window: the diagram keeps its size and its box scrolls.
    page.set_viewport_size({"width": 1024, "height": 900})
    page.wait_for_timeout(500)
    narrow = widget_diagram.evaluate(MEASURE)
    assert abs(narrow["width"] - narrow["declared"]) <= 0.5, narrow
    assert narrow["overflow"] == "auto"
    assert min(t["size"] for t in narrow["texts"]) >= 11

    check_toggle_and_saved_form(page, cells.nth(2))


def check_toggle_and_saved_form(page: Any, cell: Any) -> None:
    """The toggle is one click away and says which is pressed; the saved HTML has the SVG."""
    check = expect()
    diagram = cell.locator(".skillnb-toggle", has_text="Diagram")
    listed = cell.locator(".skillnb-toggle", has_text="List")
    check(diagram).to_have_attribute("aria-pressed", "true", timeout=10_000)
    check(listed).to_have_attribute("aria-pressed", "false")
    listed.click()
    check(listed).to_have_attribute("aria-pressed", "true", timeout=10_000)
    check(diagram).to_have_attribute("aria-pressed", "false")
    check(cell.locator(VIEW).locator(DIAGRAM)).to_have_count(0)
    check(cell.locator(".skillnb-state-current")).to_have_count(1)
    diagram.click()
    check(cell.locator(VIEW).locator(DIAGRAM)).to_have_count(1, timeout=10_000)
    saved = page.evaluate(
        """() => {
            const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
            return cells.get(2).outputs.toJSON().map(o => o.data?.['text/html'])
                .filter(Boolean);
        }"""
    )
    assert len(saved) == 1, saved
    assert '<div class="skillnb-diagram"' in saved[0]
    assert "<svg" in saved[0]
    assert "skillnb-state-current" not in saved[0]
