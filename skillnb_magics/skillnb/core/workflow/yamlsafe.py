"""A bounded, safe YAML loader that remembers where every value came from (core layer).

Workflow files are untrusted input. This loader builds plain Python data (dicts, lists,
strings, numbers, booleans, ``None``) from the YAML *event* stream, so nothing is ever
constructed from a tag: ``!!python/object``, ``!!python/name`` and every other non-standard
tag are rejected with their position. It also

* refuses input larger than :data:`MAX_BYTES` before parsing anything,
* stops at :data:`MAX_DEPTH` levels of nesting as soon as the parser reaches them,
* counts nodes *as expanded through aliases* and stops at :data:`MAX_NODES`
  (so an alias bomb such as "billion laughs" fails in milliseconds),
* rejects duplicate mapping keys and non-scalar keys, and
* records the 1-based line and column of every key and value in a :class:`SourceMap`,
  so the workflow validator can point at the exact place of a problem.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from skillnb.errors import WorkflowError

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_NODES", "DocPath", "SourceMap", "load_yaml", "suggest"]

MAX_BYTES = 1024 * 1024
"""Largest accepted definition (1 MiB)."""
MAX_DEPTH = 64
"""Deepest accepted nesting of mappings and sequences."""
MAX_NODES = 100_000
"""Most values a document may hold, counting every alias expansion."""

DocPath = tuple[str | int, ...]
"""Where a value sits in the document: mapping keys and sequence indexes from the root."""

_CORE = "tag:yaml.org,2002:"
_SCALAR_TAGS = {f"{_CORE}{name}" for name in ("str", "int", "float", "bool", "null")}
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def _resolver() -> yaml.SafeLoader:
    """Return a loader used only for its implicit-tag resolver and scalar constructors."""
    return yaml.SafeLoader("")


@dataclass(frozen=True)
class Mark:
    """A position in the source text."""

    line: int
    """1-based line."""
    column: int
    """1-based column."""
    index: int
    """0-based character offset."""
    end: int
    """0-based character offset just past the node."""
    style: str | None = None
    """The scalar style: ``None`` for plain, ``'`` or ``"`` for quoted, ``|``/``>`` for block."""


@dataclass
class SourceMap:
    """Positions of the keys and values of a loaded document, by path.

    A map with no positions (a definition given as a Python dict) still names its source,
    so every error says where the definition came from.
    """

    source: str | None = None
    """The file name, ``"<string>"``, or ``None``."""
    text: str = ""
    """The source text (empty for dicts)."""
    values: dict[DocPath, Mark] = field(default_factory=dict)
    """Where each value starts."""
    keys: dict[DocPath, Mark] = field(default_factory=dict)
    """Where each mapping key starts (by the path of its value)."""

    def find(self, path: DocPath, *, key: bool = False) -> Mark | None:
        """Return the mark of ``path`` (its key when ``key``), else of its nearest ancestor."""
        if key and path in self.keys:
            return self.keys[path]
        for end in range(len(path), -1, -1):
            mark = self.values.get(path[:end])
            if mark is not None:
                return mark
        return None

    def error(
        self,
        path: DocPath,
        problem: str,
        *,
        key: bool = False,
        inner: tuple[int, int] | None = None,
        value: str = "",
    ) -> WorkflowError:
        """Build a :class:`WorkflowError` at ``path`` whose message starts with the path.

        Args:
            path: where the problem is.
            problem: what is wrong and how to fix it.
            key: point at the mapping key rather than its value.
            inner: a 1-based (line, column) inside the scalar at ``path`` (for expressions).
            value: the scalar's text, needed with ``inner``.

        """
        mark = self.find(path, key=key)
        line = mark.line if mark else None
        column = mark.column if mark else None
        if mark is not None and inner is not None:
            line, column = self._inside(mark, inner, value)
        where = render_path(path)
        return WorkflowError(
            f"{where}: {problem}" if where else problem,
            source=self.source,
            line=line,
            column=column,
        )

    def _inside(self, mark: Mark, inner: tuple[int, int], value: str) -> tuple[int, int]:
        """Map a position inside the scalar ``value`` to the file.

        A one-line plain or quoted scalar without escapes is verbatim, so the column is an
        offset. Otherwise (block scalars, escapes) the text from that position up to the end
        of its line is looked up in the scalar's source; when it occurs exactly once there,
        that occurrence is the place. Failing both, the scalar's start is used.
        """
        line, column = inner
        quoted = mark.style in ("'", '"')
        body = self.text[mark.index : mark.end]
        verbatim = not any(s in body for s in ("\n", "\\", "''"))
        if line == 1 and mark.style in (None, "'", '"') and verbatim:
            return mark.line, mark.column + (1 if quoted else 0) + column - 1
        lines = value.split("\n")
        if not 1 <= line <= len(lines):
            return mark.line, mark.column
        fragment = lines[line - 1][column - 1 :].rstrip()
        if len(fragment) < 2 or body.count(fragment) != 1:  # too short to be sure
            return mark.line, mark.column
        index = mark.index + body.index(fragment)
        return self.text.count("\n", 0, index) + 1, index - (
            self.text.rfind("\n", 0, index) + 1
        ) + 1


def render_path(path: DocPath) -> str:
    """``("workflow", "transitions", 1, "to")`` → ``workflow.transitions[1].to``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def suggest(word: str, choices: Sequence[str]) -> str:
    """Return a ``" (did you mean 'x'?)"`` hint, or an empty string."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


@dataclass
class _Frame:
    path: DocPath
    value: dict[Any, Any] | list[Any]
    anchor: str | None
    count: int = 1
    key: Any = None
    key_mark: Mark | None = None
    has_key: bool = False


def _tab_at(text: str, line: int, column: int) -> bool:
    """Whether 0-based ``line`` of ``text`` holds a tab at ``column`` or in its indentation."""
    lines = text.splitlines()
    if not 0 <= line < len(lines):
        return False
    row = lines[line]
    indent = row[: len(row) - len(row.lstrip(" \t"))]
    return row[column : column + 1] == "\t" or "\t" in indent


def load_yaml(text: str, source: str | None = None) -> tuple[Any, SourceMap]:
    """Load one YAML document safely.

    Args:
        text: the YAML text.
        source: a name for messages (a file name or ``"<string>"``).

    Returns:
        The plain data and the positions of its keys and values.

    Raises:
        WorkflowError: syntax errors, forbidden tags, too large or too deep input, alias
            bombs, duplicate keys, several documents. Each names line and column.

    """
    if len(text) > MAX_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise WorkflowError(
            f"definition is larger than {MAX_BYTES // 1024} KiB; a workflow definition is a "
            "short file (is this the right file?)",
            source=source,
        )
    smap = SourceMap(source=source, text=text)
    builder = _Builder(smap)
    loader = _LOADER(text)
    # The stubs leave these untyped; binding them to typed names keeps the calls checked.
    check_event: Callable[[], bool] = loader.check_event
    get_event: Callable[[], yaml.Event] = loader.get_event
    try:
        while check_event():
            builder.feed(get_event())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        if mark is not None and _tab_at(text, mark.line, mark.column):
            problem = "a tab character; YAML indents with spaces only: replace the tab by spaces"
        elif exc.problem and exc.context:
            started = exc.context_mark.line + 1 if exc.context_mark else "?"
            problem += f" ({exc.context}, which started on line {started})"
        raise WorkflowError(
            f"YAML syntax error: {problem}",
            source=source,
            line=mark.line + 1 if mark else None,
            column=mark.column + 1 if mark else None,
        ) from None
    except yaml.YAMLError as exc:
        raise WorkflowError(f"YAML error: {exc}", source=source) from None
    finally:
        loader.dispose()
    return builder.root, smap


class _Builder:
    """Turns parser events into plain data, enforcing the loader's limits."""

    def __init__(self, smap: SourceMap) -> None:
        self.smap = smap
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.root: Any = None
        self.nodes = 0
        self.documents = 0

    def fail(self, event: yaml.Event, problem: str) -> WorkflowError:
        line, column, _ = _where(event.start_mark)
        return WorkflowError(problem, source=self.smap.source, line=line, column=column)

    def feed(self, event: yaml.Event) -> None:
        if isinstance(event, yaml.DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                raise self.fail(event, "only one YAML document is allowed (remove the '---')")
        elif isinstance(event, yaml.ScalarEvent):
            self._check_tag(event, _SCALAR_TAGS)
            self._add(event, self._scalar(event), 1, event.anchor)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in self.anchors:
                raise self.fail(event, f"unknown alias *{event.anchor}")
            value, count = self.anchors[event.anchor]
            self._add(event, value, count, None)
        elif isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            self._open(event)
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            frame = self.stack.pop()
            self._add(event, frame.value, frame.count, frame.anchor, closing=True)

    def _check_tag(self, event: yaml.NodeEvent, allowed: set[str]) -> None:
        tag = getattr(event, "tag", None)
        if tag is None or tag == "!" or tag in allowed:
            return
        shown = "!!" + tag[len(_CORE) :] if tag.startswith(_CORE) else tag
        raise self.fail(
            event,
            f"YAML tag {shown!r} is not allowed: a workflow definition holds plain data only "
            "(strings, numbers, booleans, null, lists and mappings)",
        )

    def _open(self, event: yaml.MappingStartEvent | yaml.SequenceStartEvent) -> None:
        is_map = isinstance(event, yaml.MappingStartEvent)
        self._check_tag(event, {f"{_CORE}map" if is_map else f"{_CORE}seq"})
        if len(self.stack) >= MAX_DEPTH:
            raise self.fail(event, f"nesting is deeper than {MAX_DEPTH} levels")
        parent = self.stack[-1] if self.stack else None
        if parent is not None and isinstance(parent.value, dict) and not parent.has_key:
            raise self.fail(event, "mapping keys must be plain values, not lists or mappings")
        path = self._child_path(parent)
        self._mark(parent, path, event)
        self.stack.append(_Frame(path, {} if is_map else [], event.anchor))

    def _child_path(self, parent: _Frame | None) -> DocPath:
        if parent is None:
            return ()
        if isinstance(parent.value, dict):
            return (*parent.path, parent.key)
        return (*parent.path, len(parent.value))

    def _mark(self, parent: _Frame | None, path: DocPath, event: yaml.Event) -> None:
        line, column, index = _where(event.start_mark)
        style = getattr(event, "style", None) or None
        mark = Mark(line, column, index, _where(event.end_mark)[2], style)
        self.smap.values.setdefault(path, mark)
        if parent is not None and isinstance(parent.value, dict) and parent.key_mark:
            self.smap.keys.setdefault(path, parent.key_mark)

    def _scalar(self, event: yaml.ScalarEvent) -> Any:
        resolver = _resolver()
        tag = event.tag
        if tag is None or tag == "!":
            resolve: Callable[[type[yaml.Node], str, tuple[bool, bool]], str] = resolver.resolve
            tag = resolve(yaml.ScalarNode, event.value, event.implicit)
        node = yaml.ScalarNode(tag, event.value)
        if tag == f"{_CORE}int":
            try:
                return resolver.construct_yaml_int(node)
            except ValueError:  # over Python's 4,300-digit limit for int(str)
                raise self.fail(
                    event, f"integer has {len(event.value)} characters; too large"
                ) from None
        if tag == f"{_CORE}float":
            return resolver.construct_yaml_float(node)
        if tag == f"{_CORE}bool":
            return resolver.construct_yaml_bool(node)
        if tag == f"{_CORE}null":
            return None
        return event.value  # str, and timestamps/merge keys kept as their text

    def _add(
        self, event: yaml.Event, value: Any, count: int, anchor: str | None, closing: bool = False
    ) -> None:
        self.nodes += 1 if closing else count
        if self.nodes > MAX_NODES:
            raise self.fail(
                event, f"document expands to more than {MAX_NODES} values (an alias bomb?)"
            )
        if anchor is not None:
            self.anchors[anchor] = (value, count)
        parent = self.stack[-1] if self.stack else None
        if parent is None:
            if not closing:
                self._mark(None, (), event)
            self.root = value
            return
        parent.count += count
        if isinstance(parent.value, list):
            if not closing:
                self._mark(parent, (*parent.path, len(parent.value)), event)
            parent.value.append(value)
        elif not parent.has_key:
            self._key(parent, event, value)
        else:
            path = (*parent.path, parent.key)
            if not closing:
                self._mark(parent, path, event)
            parent.value[parent.key] = value
            parent.has_key, parent.key_mark = False, None

    def _key(self, parent: _Frame, event: yaml.Event, key: Any) -> None:
        if isinstance(key, dict | list):
            raise self.fail(event, "mapping keys must be plain values, not lists or mappings")
        assert isinstance(parent.value, dict)  # noqa: S101  # narrowed by the caller
        if key in parent.value:
            raise self.fail(event, f"duplicate key {key!r} (each key may appear once)")
        line, column, index = _where(event.start_mark)
        parent.key = key
        parent.has_key = True
        parent.key_mark = Mark(line, column, index, index)


def _where(mark: Any) -> tuple[int, int, int]:
    """Return 1-based line and column and the 0-based index of a parser mark."""
    if mark is None:
        return 1, 1, 0
    return int(mark.line) + 1, int(mark.column) + 1, int(mark.index)
