"""A deterministic résumé extractor for the example notebooks (no network, no model).

It stands in for the LLM call an agent would make: it reads one of three layouts found in
``data/resumes/`` (``Key: value`` lines, Markdown sections, or free prose) and returns a
validated :class:`Resume`. Swap :func:`extract` for a real model call in your own work; the
durable workflow around it stays the same.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, Field

__all__ = ["Resume", "completeness", "extract"]

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE = re.compile(r"\+\d[\d ]{6,}\d")
_YEARS = re.compile(r"(\d+)\s+years")


class Resume(BaseModel):
    """The structured form of one résumé."""

    name: str
    email: str
    phone: str | None = None
    location: str | None = None
    years_experience: int = Field(ge=0)
    skills: list[str]
    education: str | None = None
    source: str


def _field(text: str, label: str) -> str | None:
    match = re.search(rf"^{label}:\s*(.+)$", text, flags=re.MULTILINE)
    return match.group(1).strip() if match else None


def _section(text: str, title: str) -> str | None:
    match = re.search(rf"^## {title}\n(.+?)(?:\n\n|\Z)", text, flags=re.MULTILINE | re.DOTALL)
    return match.group(1).strip() if match else None


def _split_skills(raw: str) -> list[str]:
    return [s.strip().rstrip(".") for s in re.split(r"[,;]", raw) if s.strip()]


def _name_and_location(text: str) -> tuple[str, str | None]:
    if text.startswith("# "):
        first = text.splitlines()[0][2:].strip()
        contact = text.splitlines()[1].split(" | ")
        return first, contact[-1].strip() if contact and "@" not in contact[-1] else None
    if text.startswith("CURRICULUM VITAE"):
        name, _, city = text.splitlines()[1].partition(" — ")
        return name.strip(), city.strip() or None
    return _field(text, "Name") or "", _field(text, "Location")


def _skills(text: str) -> list[str]:
    raw = _field(text, "Skills") or _section(text, "Skills")
    if raw is None:
        match = re.search(r"Key skills:\s*(.+)$", text, flags=re.MULTILINE)
        raw = match.group(1) if match else ""
    return _split_skills(raw)


def extract(path: Path) -> Resume:
    """Extract the structured résumé from the text file at ``path``."""
    text = path.read_text(encoding="utf-8")
    name, location = _name_and_location(text)
    email = _EMAIL.search(text)
    phone = _PHONE.search(text)
    years = _YEARS.search(text)
    education = _field(text, "Education") or _section(text, "Education")
    return Resume(
        name=name,
        email=email.group(0) if email else "",
        phone=phone.group(0) if phone else None,
        location=location,
        years_experience=int(years.group(1)) if years else 0,
        skills=_skills(text),
        education=education,
        source=path.name,
    )


def completeness(resume: dict[str, object]) -> list[str]:
    """Return the fields a recruiter needs that this extracted résumé lacks."""
    return [f for f in ("name", "email", "phone", "education") if not resume.get(f)]
