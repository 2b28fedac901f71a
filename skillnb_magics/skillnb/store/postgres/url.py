"""Store addresses: telling a database URL from a folder, and hiding its password (store layer).

A team store is named by a libpq URL, ``postgresql://user:secret@host:5432/db?sslmode=require``
(``postgres://`` is accepted too). Everything the library shows, logs or records names the
store through :func:`redact`, so the password never reaches a message, a summary, notebook
metadata or an exception text. :func:`scrub` removes a known password from any text (a
driver's error message, for instance) as a second line of defence.

The password is found the way libpq finds it, whatever the URL's shape: the user part ends at
the first ``@`` before any ``/`` (so an unencoded ``#`` or ``?`` in a password is still the
password), a ``password=`` query parameter runs to the next ``&``, and a ``key=value``
conninfo's ``password`` runs to the next blank (or is quoted). The driver's own parser
(psycopg's ``conninfo_to_dict``, which is libpq's) then checks the result: a password it finds
that is still visible makes :func:`redact` fall back to a form rebuilt without it. A URL libpq
refuses (``[::1:5432``) is masked by the same rules, and libpq's error, which quotes the URL,
is scrubbed before it becomes any message.
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote

__all__ = ["is_database_url", "password_of", "redact", "scrub", "validate_run_name"]

_SCHEMES = ("postgresql://", "postgres://")
_SCHEME = re.compile(r"(?i)^postgres(?:ql)?://")
_EMBEDDED_URI = re.compile(r"(?i)\bpostgres(?:ql)?://[^\s\"'`<>]*")
_USERINFO = re.compile(r"^(?P<user>[^:@/]*)(?::(?P<password>[^@/]*))?@")
_KEYWORD_PASSWORD = re.compile(r"(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)")
_MASK = "***"
_NAME_MAX = 200
_NAME_BAD = re.compile(r"[\x00-\x1f\x7f]")


def is_database_url(text: object) -> bool:
    """True when ``text`` is a ``postgresql://`` (or ``postgres://``) URL."""
    return isinstance(text, str) and text.lower().startswith(_SCHEMES)


def _driver_password(conninfo: str) -> str | None:
    """The password psycopg's (libpq's) own parser reads in ``conninfo``, if it parses."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:  # the team-store extra is not installed: the rules below stand alone
        return None
    try:
        found = conninfo_to_dict(conninfo).get("password")
    except Exception:  # noqa: BLE001  # any refusal: libpq's text quotes the URL, never shown
        return None
    return str(found) if found else None


def _split_uri(uri: str) -> tuple[str, str, str, str]:
    """``uri`` as (scheme, user part up to its ``:``, password as written, the rest).

    The user part is libpq's: everything before the first ``@`` that comes before any ``/``.
    When no such ``@`` exists but one appears later (a password holding an unencoded ``/``),
    everything from the first ``:`` to the last ``@`` is taken as the password, so a mistyped
    URL shows less, never more.
    """
    scheme = _SCHEME.match(uri)
    head = scheme[0] if scheme else ""
    rest = uri[len(head) :]
    found = _USERINFO.match(rest)
    if found:
        separator = ":" if found["password"] is not None else ""
        user = found["user"] + separator
        return head, user, found["password"] or "", rest[found.end() - 1 :]
    colon, at = rest.find(":"), rest.rfind("@")
    if 0 <= colon < at and "@" not in rest[:colon]:
        return head, rest[: colon + 1], rest[colon + 1 : at], rest[at:]
    return head, "", "", rest


def _query_passwords(rest: str) -> list[str]:
    """The values of ``password=`` parameters in the query part of ``rest`` (as written)."""
    _, mark, query = rest.partition("?")
    if not mark:
        return []
    values = []
    for item in query.split("&"):
        key, equals, value = item.partition("=")
        if equals and unquote(key).strip().lower() == "password" and value:
            values.append(value)
    return values


def _redact_uri(uri: str) -> str:
    head, user, password, rest = _split_uri(uri)
    rest = f"{user}{_MASK if password else ''}{rest}"
    before, mark, query = rest.partition("?")
    if mark:
        items = []
        for item in query.split("&"):
            key, equals, value = item.partition("=")
            masked = equals and unquote(key).strip().lower() == "password" and value
            items.append(f"{key}={_MASK}" if masked else item)
        rest = f"{before}?{'&'.join(items)}"
    return head + rest


def _redact_keywords(text: str) -> str:
    return _KEYWORD_PASSWORD.sub(lambda m: m[1] + _MASK, text)


def _redact_text(text: str) -> str:
    """``text`` with every URL in it redacted, and ``password=`` keywords outside URLs."""
    pieces, last = [], 0
    for found in _EMBEDDED_URI.finditer(text):
        pieces.append(_redact_keywords(text[last : found.start()]))
        pieces.append(_redact_uri(found[0]))
        last = found.end()
    pieces.append(_redact_keywords(text[last:]))
    return "".join(pieces)


def _forms(secret: str) -> set[str]:
    """``secret`` as written, decoded and percent-encoded (each a way a text may show it)."""
    return {form for form in (secret, unquote(secret), quote(secret, safe="")) if form}


def _secrets(url: str) -> set[str]:
    """Every form in which ``url``'s password may appear in a text."""
    found: set[str] = set()
    driver = _driver_password(url)
    if driver:
        found |= _forms(driver)
    if is_database_url(url):
        _, _, password, rest = _split_uri(url)
        for value in [password, *_query_passwords(rest)]:
            if value:
                found |= _forms(value)
    else:
        for match in _KEYWORD_PASSWORD.finditer(url):
            value = match[2]
            if value.startswith("'") and value.endswith("'") and len(value) > 1:
                found |= _forms(value[1:-1])
            found |= _forms(value)
    return found


def redact(url: str) -> str:
    """``url`` with its password (in the user part or the query string) replaced by ``***``.

    A password-less URL is returned unchanged; so is anything that is not a URL, except that a
    ``password=...`` keyword (libpq's ``key=value`` form) and any URL inside it are masked too.
    """
    if is_database_url(url):
        shown = _redact_uri(url)
        driver = _driver_password(url)
        if driver and any(form in shown for form in _forms(driver) if len(form) > 2):
            # the driver reads a password the rules above missed: show no more than the user
            head, user, _, _ = _split_uri(url)
            return f"{head}{user.rstrip(':')}:{_MASK}@…"
        return shown
    return _redact_text(url)


def password_of(url: str) -> str | None:
    """The password written in ``url`` (user part, ``?password=`` or keyword), or ``None``.

    The driver's parser decides when it accepts ``url``; a URL it refuses is read by libpq's
    rules (see :func:`_split_uri`).
    """
    driver = _driver_password(url)
    if driver:
        return driver
    if is_database_url(url):
        _, _, password, rest = _split_uri(url)
        for value in [password, *_query_passwords(rest)]:
            if value:
                return unquote(value)
        return None
    match = _KEYWORD_PASSWORD.search(url)
    return match[2].strip("'") if match else None


def scrub(text: str, url: str) -> str:
    """``text`` with ``url``'s password, raw or percent-encoded, and any URL password masked."""
    cleaned = _redact_text(text)
    for secret in sorted(_secrets(url), key=len, reverse=True):
        cleaned = cleaned.replace(secret, _MASK)
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
