"""The README's images exist, say what they show, and none in ``docs/screens/`` is left over."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SCREENS = ROOT / "docs" / "screens"

_HTML_IMAGE = re.compile(r"<img\b[^>]*>", re.IGNORECASE)
_ATTRIBUTE = re.compile(r'\b(src|srcset|alt)="([^"]*)"', re.IGNORECASE)
_SOURCE = re.compile(r"<source\b[^>]*\bsrcset=\"([^\"]+)\"", re.IGNORECASE)
_MARKDOWN_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)")


def _local(target: str) -> bool:
    return not re.match(r"^[a-z]+:", target)


def images() -> list[tuple[str, str]]:
    """``(path, alt text)`` of every local image the README shows (``<source>``: no alt)."""
    text = README.read_text(encoding="utf-8")
    found = []
    for tag in _HTML_IMAGE.findall(text):
        attributes = {k.lower(): v for k, v in _ATTRIBUTE.findall(tag)}
        found.append((attributes.get("src", ""), attributes.get("alt", "")))
    found += [(src, "the dark theme variant") for src in _SOURCE.findall(text)]
    found += [(src, alt) for alt, src in _MARKDOWN_IMAGE.findall(text)]
    return [(src, alt) for src, alt in found if _local(src)]


def test_every_readme_image_exists_and_has_alt_text() -> None:
    shown = images()
    assert shown, "the README shows no image"
    missing = [src for src, _ in shown if not (ROOT / src).is_file()]
    assert not missing, f"README.md links to missing images: {missing}"
    unlabelled = [src for src, alt in shown if len(alt.split()) < 3]
    assert not unlabelled, f"images without an alt text that says what they show: {unlabelled}"


def test_every_screenshot_is_shown_in_both_themes() -> None:
    shown = {Path(src).name for src, _ in images()}
    committed = {p.name for p in SCREENS.glob("*.png")}
    assert committed - shown == set(), "screenshots the README no longer shows"
    for name in committed:
        if name.endswith("-light.png"):
            assert name.replace("-light.png", "-dark.png") in committed, name
