"""One state-machine diagram: the workflow cell and the run widget draw the same one.

A notebook binds a workflow in a ``%%workflow`` cell and shows the run view
(``%skillnb status``). Both diagrams are drawn by JupyterLab's Mermaid renderer from the same
source, left to right (wider than tall), and their edge labels stay readable in JupyterLab
Light and Dark: the text of every label, measured inside the rendered SVG against what lies
behind it, meets WCAG AA (4.5:1). The diagram is an image, which axe cannot look into, so
the contrast is computed here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from labkit import set_theme

pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).parent / "fixtures"
KERNEL_START_MS = 60_000
VIEW = ".skillnb-run-view"
DIAGRAM = ".jp-RenderedMermaid figure img[src^='data:image/svg+xml']"
SCREENS = Path(__file__).resolve().parents[2] / "test-output" / "screens"

# Reads the SVG of a rendered diagram, puts it into the page (off screen, same size) so its
# own stylesheet applies, and returns, for every edge label: its text, its colour and the
# colour behind it (the label's background box, else the page behind the image).
LABEL_COLOURS = """
async (img) => {
    const source = decodeURIComponent(img.src.split(',')[1] ?? '');
    const svg = source.startsWith('<') ? source : atob(img.src.split(',')[1]);
    const host = document.createElement('div');
    host.style.cssText = 'position:fixed;left:-10000px;top:0;';
    host.innerHTML = svg;
    document.body.appendChild(host);
    try {
        const out = [];
        for (const label of host.querySelectorAll('g.edgeLabel')) {
            const text = label.textContent.trim();
            if (!text) continue;
            const node = label.querySelector('span, p, tspan, text') ?? label;
            const colour = getComputedStyle(node).color;
            const fill = getComputedStyle(label.querySelector('text') ?? node).fill;
            let back = null;
            for (const el of [node, ...label.querySelectorAll('*'), label]) {
                const bg = getComputedStyle(el).backgroundColor;
                if (bg && bg !== 'rgba(0, 0, 0, 0)' && bg !== 'transparent') { back = bg; break; }
            }
            const rect = label.querySelector('rect');
            if (back === null && rect) {
                const f = getComputedStyle(rect).fill;
                const o = parseFloat(getComputedStyle(rect).opacity || '1');
                if (f && f !== 'none' && o > 0) back = f;
            }
            out.push({text, colour: label.querySelector('text') ? fill : colour, back});
        }
        return out;
    } finally {
        host.remove();
    }
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


def test_workflow_cell_and_widget_draw_one_readable_left_to_right_diagram(
    lab_server: Any, page: Any, diagram_folder: Path
) -> None:
    nbformat = pytest.importorskip("nbformat")
    check = expect()
    yaml = (FIXTURES / "review_workflow.yaml").read_text()
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(source)
        for source in ("%load_ext skillnb", f"%%workflow\n{yaml}", "%skillnb status")
    ]
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nbformat.write(notebook, diagram_folder / "flow.ipynb")
    page.goto(f"{lab_server.url}lab/workspaces/diagram/tree/diagram/flow.ipynb?reset")
    cells = page.locator(".jp-Notebook .jp-Cell")
    check(cells).to_have_count(3, timeout=60_000)
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel",
        timeout=KERNEL_START_MS,
    )
    workflow_diagram = cells.nth(1).locator(DIAGRAM)
    widget_diagram = cells.nth(2).locator(VIEW).locator(DIAGRAM)
    SCREENS.mkdir(parents=True, exist_ok=True)
    low: list[str] = []
    for theme in ("light", "dark"):
        # Mermaid takes its theme when it draws: draw again in each theme.
        set_theme(page, theme, settle_ms=1500)  # Mermaid draws again
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
        check(workflow_diagram).to_have_count(0)
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        check(workflow_diagram).to_have_count(1, timeout=KERNEL_START_MS)
        check(widget_diagram).to_have_count(1, timeout=KERNEL_START_MS)
        if theme == "light":
            check_one_left_to_right_source(page, workflow_diagram, widget_diagram)
        for name, diagram in (("workflow", workflow_diagram), ("widget", widget_diagram)):
            behind = diagram.evaluate(
                "img => { for (let n = img; n; n = n.parentElement) {"
                " const bg = getComputedStyle(n).backgroundColor;"
                " if (bg && bg !== 'rgba(0, 0, 0, 0)') return bg; } return 'rgb(255,255,255)'; }"
            )
            labels = diagram.evaluate(LABEL_COLOURS)
            assert labels, f"{name} diagram in {theme}: no edge label found"
            for label in labels:
                ratio = contrast(label["colour"], label["back"] or behind, behind)
                if ratio < 4.5:
                    low.append(f"{theme} {name} {label} on {behind}: {ratio:.2f}")
        cells.nth(1).screenshot(path=str(SCREENS / f"workflow-diagram-{theme}.png"))
    set_theme(page, "light", settle_ms=1500)  # the next test's page starts in the default theme
    assert not low, "\n".join(low)


def check_one_left_to_right_source(page: Any, workflow_diagram: Any, widget_diagram: Any) -> None:
    """The workflow cell shows the Markdown the widget shows; both drawn wider than tall."""
    sources = page.evaluate(
        """() => {
            const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
            return cells.get(1).outputs.toJSON().map(o => o.data?.['text/markdown'])
                .filter(Boolean);
        }"""
    )
    assert len(sources) == 1, sources
    assert "\n    direction LR\n" in sources[0], sources
    for diagram in (workflow_diagram, widget_diagram):
        size = diagram.evaluate("img => [img.naturalWidth, img.naturalHeight]")
        assert size[0] > size[1], size
