"""Store addresses: telling a database URL from a folder, and hiding its password (store layer).

A team store is named by a libpq URL, ``postgresql://user:secret@host:5432/db?sslmode=require``
(``postgres://`` is accepted too). Everything the library shows, logs or records names the
store through :func:`redact`, so the password never reaches a message, a summary, notebook
metadata or an exception text. :func:`scrub` removes a known password from any text (a
driver's error message, for instance) as a second line of defence.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlsplit

__all__ = ["is_database_url", "password_of", "redact", "scrub", "validate_run_name"]

_SCHEMES = ("postgresql://", "postgres://")
_USERINFO = re.compile(r"^(?P<scheme>[a-z]+://)(?P<user>[^:@/?#]*):(?P<password>[^@/?#]*)@")
_QUERY_PASSWORD = re.compile(r"(?i)([?&]password=)[^&#]*")
_KEYWORD_PASSWORD = re.compile(r"(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)")
_MASK = "***"
_NAME_MAX = 200
_NAME_BAD = re.compile(r"[\x00-\x1f\x7f]")


def is_database_url(text: object) -> bool:
    """True when ``text`` is a ``postgresql://`` (or ``postgres://``) URL."""
    return isinstance(text, str) and text.lower().startswith(_SCHEMES)


def redact(url: str) -> str:
    """``url`` with its password (in the user part or the query string) replaced by ``***``.

    A password-less URL is returned unchanged; so is anything that is not a URL, except that a
    ``password=...`` keyword (libpq's ``key=value`` form) is masked there too.
    """
    text = _USERINFO.sub(
        lambda m: f"{m['scheme']}{m['user']}:{_MASK}@" if m["password"] else m[0], url
    )
    text = _QUERY_PASSWORD.sub(lambda m: m[1] + _MASK, text)
    return _KEYWORD_PASSWORD.sub(lambda m: m[1] + _MASK, text)


def password_of(url: str) -> str | None:
    """The password written in ``url`` (user part or ``?password=``), or ``None``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.password:
        return unquote(parts.password)
    for key, value in parse_qsl(parts.query):
        if key.lower() == "password" and value:
            return value
    return None


def scrub(text: str, url: str) -> str:
    """``text`` with ``url``'s password, raw or percent-encoded, and any URL password masked."""
    secret = password_of(url)
    cleaned = redact(text)
    if secret:
        cleaned = cleaned.replace(secret, _MASK)
        match = _USERINFO.match(url)
        if match and match["password"]:
            cleaned = cleaned.replace(match["password"], _MASK)
    return cleaned


def validate_run_name(name: object) -> str:
    """Return ``name`` if it can name a run in a database, else raise ``ValueError``.

    A run name is 1-200 printable characters (``market/weekly``, ``notebooks/report.ipynb``).
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a run name must be a non-empty string, not {name!r}")
    if len(name) > _NAME_MAX or _NAME_BAD.search(name):
        raise ValueError(f"run name {name[:60]!r} must be at most {_NAME_MAX} printable characters")
    return name
