"""Names, keys and free text: what may be written, and how large (core layer).

One validator for every place a name is written or read back: the run's write path
(:func:`check_event`, called for every event before it is committed), the workflow loader
(workflow, gate, trigger and state names), the notebook mirror's checker, and every journal
line, segment, snapshot and rebuilt notebook read back (:func:`event_problem`,
:func:`state_problem`). A name is 1 to :data:`MAX_NAME` characters (fact and step keys up
to :data:`MAX_KEY`) with no control, format or bidirectional-override characters and no
active markup (``<script``, ``on...=``, ``javascript:``), so it prints safely, survives the
notebook mirror, and cannot reorder the text around it. Notes and messages are free text up
to :data:`MAX_TEXT` characters. A run id is stricter, since it names files (``<run id>.json``
in a skill's archive, a sidecar set aside as ``<stem>~<run id>``): 1 to :data:`MAX_RUN_ID`
ASCII letters, digits, ``-``, ``_`` and ``.``, starting with a letter or digit
(:func:`check_run_id`).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from itertools import repeat
from operator import itemgetter
from typing import Any

from skillnb.errors import SkillnbError

__all__ = [
    "MAX_KEY",
    "MAX_NAME",
    "MAX_RUN_ID",
    "MAX_TEXT",
    "NAMED_EVENTS",
    "InvalidName",
    "check_event",
    "check_key",
    "check_name",
    "check_run_id",
    "check_text",
    "event_problem",
    "events_pass",
    "fact_names_pass",
    "json_too_deep",
    "name_problem",
    "records_pass",
    "run_id_problem",
    "skill_slug",
    "state_problem",
]

MAX_KEY = 256
"""Longest fact, step or batch-item key, in characters."""
MAX_NAME = 200
"""Longest workflow, state, gate, trigger, batch, milestone or person name."""
MAX_TEXT = 10_000
"""Longest note or message."""
MAX_SKILL = 100
"""Longest skill name (it is a file name)."""
MAX_RUN_ID = 64
"""Longest run id (ids made here are 12 hex digits; older ones such as ``run-golden-1`` fit)."""
MAX_JSON_DEPTH = 100
"""Deepest JSON value read back from a notebook's SKILL.nb outputs."""

ACTIVE_MARKUP = re.compile(
    r"<\s*/?\s*(script|iframe|frame|object|embed|applet|meta|link|style|base)\b"
    r"|javascript\s*:"
    r"|<[^>]*[\s/\"'`]on\w+\s*=",
    re.IGNORECASE,
)
"""Markup a browser would act on; never part of a name.

An event handler counts wherever an HTML tokenizer would start an attribute: after a space,
but also after ``/`` or a quote (``<svg/onload=…>``, ``<img/src=x/onerror=…>``)."""
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_INVISIBLE = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})


class InvalidName(SkillnbError, ValueError):
    """A name, key or text breaks a rule; nothing was written.

    Attributes:
        what: what was checked, e.g. ``fact key``.
        problem: which rule it breaks.

    """

    def __init__(self, what: str, value: object, problem: str) -> None:
        self.what = what
        self.problem = problem
        shown = repr(value) if not isinstance(value, str) else repr(_clip(value))
        super().__init__(f"{what} {shown} {problem}")


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def name_problem(value: object, limit: int = MAX_NAME) -> str | None:
    """Return why ``value`` is not an acceptable name, or ``None`` when it is."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if len(value) > limit:  # judged here: a long string is not worth remembering
        return (
            "must not be empty"
            if not value.strip()
            else f"is {len(value)} characters long (limit {limit})"
        )
    return _text_name_problem(value, limit)


@functools.lru_cache(maxsize=4096)
def _text_name_problem(value: str, limit: int) -> str | None:
    """:func:`name_problem` of a string of at most ``limit`` characters, remembered.

    A journal names the same facts, states and items again and again, and every event read
    back is checked: each distinct name is judged once.
    """
    if not value.strip():
        return "must not be empty"
    if not (value.isascii() and value.isprintable()):  # printable ASCII has none to find
        for char in value:
            if unicodedata.category(char) in _INVISIBLE:
                return f"contains a control or invisible character (U+{ord(char):04X})"
    if value != value.strip():
        return "must not start or end with spaces"
    if ("<" in value or ":" in value) and ACTIVE_MARKUP.search(value):  # it needs one of them
        return "contains active markup (script, event handler, javascript: URL)"
    return None


def check_name(value: object, what: str, limit: int = MAX_NAME) -> str:
    """Return ``value`` when it is an acceptable name.

    Raises:
        InvalidName: it is not (the message says which rule it breaks).

    """
    problem = name_problem(value, limit)
    if problem is not None:
        raise InvalidName(what, value, problem)
    assert isinstance(value, str)  # noqa: S101  # name_problem checked the type
    return value


def run_id_problem(value: object) -> str | None:
    """Return why ``value`` is not an acceptable run id, or ``None`` when it is."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if not value:
        return "is not a run id: it is empty"
    if len(value) > MAX_RUN_ID:
        return f"is not a run id: {len(value)} characters long (limit {MAX_RUN_ID})"
    if not (value.isascii() and _RUN_ID.fullmatch(value)):
        return (
            "is not a run id (ASCII letters, digits, '-', '_' and '.', starting with a letter "
            "or digit: it names files)"
        )
    return None


def check_run_id(value: object, what: str = "run id") -> str:
    """Return ``value`` when it is an acceptable run id (it is used as a file name).

    Raises:
        InvalidName: it is not.

    """
    problem = run_id_problem(value)
    if problem is not None:
        raise InvalidName(what, value, problem)
    assert isinstance(value, str)  # noqa: S101  # run_id_problem checked the type
    return value


def check_key(value: object, what: str = "fact key") -> str:
    """Return ``value`` when it is an acceptable key (a name of up to :data:`MAX_KEY`).

    Raises:
        InvalidName: it is not.

    """
    if type(value) is str and len(value) <= MAX_KEY and _text_name_problem(value, MAX_KEY) is None:
        return value  # what check_name finds of a good key, remembered, without its two calls
    return check_name(value, what, MAX_KEY)


def check_text(value: object, what: str, limit: int = MAX_TEXT) -> None:
    """Accept ``None`` or a string of at most ``limit`` characters.

    Raises:
        InvalidName: the text is not a string or is too long.

    """
    if value is None:
        return
    if not isinstance(value, str):
        raise InvalidName(what, value, f"must be a string, not {type(value).__name__}")
    if len(value) > limit:
        raise InvalidName(what, value, f"is {len(value)} characters long (limit {limit})")


def json_too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Tell whether ``value`` (parsed JSON) nests lists and objects deeper than ``limit``.

    Iterative, so a hostile value cannot exhaust the stack while it is measured.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def skill_slug(name: str) -> str:
    """Return a safe file name for a skill, derived from a workflow name.

    ``Market Research`` becomes ``Market_Research``: letters, digits, ``-``, ``_`` and inner
    dots, at most 100 characters. A name that is already safe is returned unchanged.
    """
    normal = unicodedata.normalize("NFC", name)
    chars = [c if c in "-_." or c.isalnum() else "_" for c in normal]
    slug = re.sub(r"\.{2,}", ".", "".join(chars)).strip(".")[:MAX_SKILL].strip(".")
    return slug or "workflow"


class _NameCheck:
    """The check of one name field (a class: :func:`events_pass` reads its rule)."""

    __slots__ = ("limit", "optional", "what")

    def __init__(self, what: str, limit: int, optional: bool) -> None:
        self.what, self.limit, self.optional = what, limit, optional

    def __call__(self, value: Any) -> object:
        if value is None and self.optional:
            return None
        return check_name(value, self.what, self.limit)


def _keys(what: str) -> Callable[[Any], object]:
    return _NameCheck(what, MAX_KEY, optional=False)


def _name(what: str) -> Callable[[Any], object]:
    return _NameCheck(what, MAX_NAME, optional=True)


def _text(what: str) -> Callable[[Any], object]:
    return lambda value: check_text(value, what)


def _each_key(what: str) -> Callable[[Any], object]:
    def check(values: Any) -> None:
        for value in values if isinstance(values, list) else [values]:
            check_key(value, what)

    return check


def _fact(fact: Any) -> None:
    if type(fact) is dict or isinstance(fact, Mapping):  # a dict: no ABC check needed
        key, note = fact.get("key"), fact.get("note")
        if type(key) is not str or len(key) > MAX_KEY or _text_name_problem(key, MAX_KEY):
            check_key(key, "fact key")  # says what is wrong (the common case, a good key, not)
        if note is not None:
            check_text(note, "note")


def _approval(approval: Any) -> None:
    if isinstance(approval, Mapping):
        check_text(approval.get("message"), "approval message")


def _follow_up(follow_up: Any) -> None:
    if isinstance(follow_up, Mapping):
        check_text(follow_up.get("text"), "follow-up text")
        check_text(follow_up.get("reason"), "follow-up reason")


def _key_ids(ids: Any) -> None:
    if isinstance(ids, Mapping):
        for name, value in ids.items():
            check_key(name, "key id name")
            check_text(value if isinstance(value, str) else None, "key id", MAX_KEY * 4)


def _run_id(value: Any) -> None:
    check_run_id(value)


_FIELDS: Mapping[str, Mapping[str, Callable[[Any], object]]] = {
    "run.created": {"run_id": _run_id},
    "workflow.bound": {"workflow": _name("workflow name"), "initial": _name("state name")},
    "transition.fired": {
        "trigger": _name("trigger name"),
        "from": _name("state name"),
        "to": _name("state name"),
    },
    "fact.formalized": {"fact": _fact},
    "gate.reported": {"key": _keys("step key")},
    "approval.requested": {"approval": _approval},
    "approval.decided": {"by": _name("approver"), "note": _text("note")},
    "followup.opened": {"follow_up": _follow_up},
    "followup.resolved": {"by": _name("name"), "note": _text("note")},
    "step.started": {"key": _keys("step key")},
    "step.cleared": {"key": _keys("step key"), "by": _name("name")},
    "batch.declared": {"batch": _name("batch name"), "items": _each_key("batch item key")},
    "batch.item_done": {"batch": _name("batch name"), "item": _keys("batch item key")},
    "keyids.set": {"ids": _key_ids},
    "milestone.recorded": {"name": _name("milestone name"), "state": _name("state name")},
}


NAMED_EVENTS: frozenset[str] = frozenset(_FIELDS)
"""The event types whose data hold names, keys or texts that are checked."""


def check_event(type_: str, data: Mapping[str, Any]) -> None:
    """Check the names, keys and texts of an event about to be written.

    Raises:
        InvalidName: a field breaks its rule; the event must not be committed.

    """
    for field, check in _FIELDS.get(type_, {}).items():
        if field in data:
            check(data[field])


def event_problem(type_: str, data: Mapping[str, Any]) -> str | None:
    """Tell why an event read back breaks the rules :func:`check_event` applies on write.

    Returns:
        The problem in one line (what, which value, which rule), or ``None``.

    """
    fields = _FIELDS.get(type_)
    if fields is None:
        return None
    try:
        for field, check in fields.items():
            if field in data:
                check(data[field])
    except InvalidName as exc:
        return f"{type_} event: {exc}"
    return None


def events_pass(
    type_: str, datas: Sequence[Mapping[str, Any]], passed: dict[object, set[Any]] | None = None
) -> bool:
    """Tell whether :func:`event_problem` finds nothing in any event of ``type_`` with ``datas``.

    The same verdicts, reached in bulk: each distinct value judged once (a long journal names
    the same keys, states and batches again and again), and plain names (printable ASCII)
    judged together. ``False``: some event breaks a rule; judge them one by one to find
    which, and why.

    ``passed`` remembers, across calls, the values each rule has found good already (a
    journal read a part at a time names the same facts in every part): they are not
    judged again.
    """
    fields = _FIELDS.get(type_)
    if not fields or not datas:
        return True
    dicts = set(map(type, datas)) == _DICT  # the parser's objects: picked at C speed
    try:
        for field, check in fields.items():
            values = _field(datas, field, dicts)
            if field == "fact":  # what _fact reads of each fact: its key and its note
                if dicts and set(map(type, values)) <= _DICT:
                    _check_all(list(map(dict.get, values, repeat("key"))), _FACT_KEY, passed)
                    _check_all(list(map(dict.get, values, repeat("note"))), _NOTE, passed)
                    continue
                facts = [f for f in values if type(f) is dict or isinstance(f, Mapping)]
                _check_all([fact.get("key") for fact in facts], _FACT_KEY, passed)
                _check_all([fact.get("note") for fact in facts], _NOTE, passed)
            else:
                _check_all(values, check, passed)
    except InvalidName:
        return False
    return True


def records_pass(
    types: Sequence[str],
    datas: Sequence[Mapping[str, Any]],
    passed: dict[object, set[Any]] | None = None,
) -> bool:
    """:func:`events_pass` of every event whose types and data are ``types`` and ``datas``.

    The events are grouped by type first (a journal has a few types), each group judged
    in bulk; ``passed`` as for :func:`events_pass`.
    """
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for type_, data in zip(types, datas, strict=True):
        if (group := groups.get(type_)) is None:
            group = groups[type_] = []
        group.append(data)
    return all(
        events_pass(type_, group, passed) for type_, group in groups.items() if type_ in _FIELDS
    )


def fact_names_pass(
    keys: Sequence[Any], notes: Sequence[Any], passed: dict[object, set[Any]] | None = None
) -> bool:
    """Tell whether :func:`events_pass` finds nothing in facts with ``keys`` and ``notes``.

    What it judges of a ``fact.formalized`` event whose fact is an object (its key, and its
    note, ``None`` when it has none), given as the two columns a reader took of the facts;
    ``passed`` as for :func:`events_pass`.
    """
    try:
        _check_all(list(keys), _FACT_KEY, passed)
        _check_all(list(notes), _NOTE, passed)
    except InvalidName:
        return False
    return True


_DICT = {dict}


def _field(datas: Sequence[Mapping[str, Any]], field: str, dicts: bool) -> list[Any]:
    """The values of ``field`` in each of ``datas`` that has it (``dicts``: all are dicts)."""
    if dicts:
        try:  # the usual case: every event of the type has the field
            return list(map(itemgetter(field), datas))
        except KeyError:
            pass
    return [data[field] for data in datas if field in data]


def _check_all(
    values: list[Any], check: Callable[[Any], object], passed: dict[object, set[Any]] | None = None
) -> None:
    """``check`` each of ``values``, each distinct one once, plain names all at once.

    Values equal as a set counts them share a verdict: a name or text passes only as a
    ``str`` (or ``None``), and a ``str`` equals nothing else. So do the values in
    ``passed[check]``, which passed ``check`` before (those that pass now are added).

    Raises:
        InvalidName: a value breaks the rule.

    """
    try:
        distinct = set(values)
    except TypeError:  # unhashable (a list of items, an approval): each on its own
        _judge(values, check)
        return
    known = None if passed is None else passed.setdefault(check, set())
    if known:
        distinct -= known
    _judge(distinct, check)
    if known is not None:
        known |= distinct


def _judge(values: Collection[Any], check: Callable[[Any], object]) -> None:
    """``check`` each of ``values``: plain names all at once, the rest one by one."""
    if not (isinstance(check, _NameCheck) and _plain_names(values, check)):
        for value in values:
            check(value)


def _plain_names(values: Iterable[Any], check: _NameCheck) -> bool:
    """True when every value passes ``check`` as a plain name; ``False``: judge each.

    Plain: strings of printable ASCII, within the limit, without spaces at either end, and no
    active markup in any (one search over them all: a match across two of them only sends
    them to be judged one by one).
    """
    names = [value for value in values if value is not None] if check.optional else list(values)
    if not names:
        return True
    if set(map(type, names)) != {str} or max(map(len, names)) > check.limit or not all(names):
        return False
    joined = " ".join(names)
    if not (joined.isascii() and joined.isprintable()):
        return False
    # In printable ASCII the only character strip removes is a space: a name with one at
    # either end puts two together in the joined text, or one at its ends.
    if ("  " in joined or joined[0] == " " or joined[-1] == " ") and list(
        map(str.strip, names)
    ) != names:
        return False
    # All markup the rules refuse has a "<" or a ":" in it.
    return ("<" not in joined and ":" not in joined) or ACTIVE_MARKUP.search(joined) is None


_STATE = _name("state name")
_FACT_KEY = _keys("fact key")
_NOTE = _text("note")


def _state_names(state: Any) -> Iterator[tuple[Any, Callable[[Any], object]]]:
    """The names of a run state with their checks (``state`` is a ``RunState``)."""
    yield state.run_id, _optional_run_id
    yield state.workflow, _name("workflow name")
    yield state.state, _STATE
    for name in state.visited:
        yield name, _STATE
    for key, fact in state.facts.items():
        yield key, _FACT_KEY
        yield fact.key, _FACT_KEY
        yield fact.note, _NOTE
    step = _keys("step key")
    for key in state.steps:
        yield key, step
    batch_name, item_keys = _name("batch name"), _each_key("batch item key")
    for name, batch in state.batches.items():
        yield name, batch_name
        yield batch.items, item_keys
    message = _text("approval message")
    for approval in state.approvals.values():
        yield approval.message, message
    milestone_name = _name("milestone name")
    for milestone in state.milestones:
        yield milestone.name, milestone_name
    yield state.key_ids, _key_ids


def _optional_run_id(value: Any) -> None:
    if value:  # a state folded from a journal without run.created has none
        check_run_id(value)


def state_problem(state: Any) -> str | None:
    """Tell why a run state read back (a snapshot) holds a name :func:`check_event` refuses.

    Args:
        state: a :class:`~skillnb.core.runstate.records.RunState`.

    Returns:
        The problem in one line, or ``None``.

    """
    for value, check in _state_names(state):
        try:
            check(value)
        except InvalidName as exc:
            return str(exc)
    return None
