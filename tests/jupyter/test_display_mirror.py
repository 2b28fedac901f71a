"""Display bundles (deterministic, escaped) and the metadata mirror sent over the comm."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from shellkit import FakeChannel, RaisingShell, cell, last, last_volatile

from skillnb.core.runstate.records import Event
from skillnb.jupyter.display import MIME, Output, build_bundle, event_dump
from skillnb.jupyter.extension import current_run, current_session
from skillnb.jupyter.mirror import MIRROR_TARGET, MirrorChannel

SCRIPT = "<script>alert('x')</script>"


def _event(seq: int, at: datetime) -> Event:
    return Event(seq=seq, type="milestone.recorded", at=at, data={"name": "m", "facts": {}})


def test_data_is_deterministic_and_the_volatile_part_is_in_metadata() -> None:
    output = Output("milestone", "ok", "🏁 m", ["at version 3"], key="m")
    early = datetime(2026, 1, 1, tzinfo=UTC)
    late = datetime(2026, 6, 1, tzinfo=UTC)
    notebook = {"v": 1, "run_id": "aaa", "version": 3}
    data1, meta1 = build_bundle(
        output,
        events=[_event(3, early)],
        notebook_mirror=notebook,
        run_id="aaa",
        clock=lambda: early,
    )
    data2, meta2 = build_bundle(output, events=[_event(3, late)], run_id="bbb", clock=lambda: late)
    assert data1 == data2  # every representation, the JSON bundle included
    assert data1["text/plain"] == "🏁 m\nat version 3"
    assert data1[MIME] == {
        "v": 1,
        "kind": "milestone",
        "badge": "🏁 m",
        "status": "ok",
        "key": "m",
        "trigger": None,
    }
    assert meta1[MIME] == {
        "v": 1,
        "run_id": "aaa",
        "at": early.isoformat(),
        "events": [_event(3, early).model_dump(mode="json")],
        "mirror": {"notebook": notebook, "cell": None},
    }
    assert meta2[MIME]["run_id"] == "bbb"
    assert meta2[MIME]["mirror"] is None


@pytest.mark.parametrize(
    "zone",
    [
        UTC,
        timezone(timedelta(0)),
        timezone(timedelta(hours=-3, minutes=-30)),
        timezone(timedelta(seconds=30)),
    ],
)
@pytest.mark.parametrize("micro", [0, 1, 120000])
def test_an_event_dump_is_the_models_own(zone: timezone, micro: int) -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, micro, tzinfo=zone)
    data: dict[str, Any] = {"key": "k", "fact": {"value": [1, {"a": None}], "note": "é"}}
    event = Event(seq=7, type="fact.formalized", at=at, data=data)
    assert event_dump(event) == event.model_dump(mode="json")


def test_every_piece_of_text_is_escaped_in_html() -> None:
    data, _ = build_bundle(Output("facts", "ok", SCRIPT, [SCRIPT, "a & b"]))
    assert "<script>" not in data["text/html"]
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in data["text/html"]
    assert "a &amp; b" in data["text/html"]
    assert data["text/plain"] == f"{SCRIPT}\n{SCRIPT}\na & b"


def test_an_output_shown_again_renders_the_same_html_and_a_changed_one_its_own() -> None:
    lines = [SCRIPT]
    first, _ = build_bundle(Output("facts", "ok", "b", lines))
    again, _ = build_bundle(Output("facts", "ok", "b", list(lines)))
    assert again["text/html"] == first["text/html"]
    lines.append("a & b")  # the list the first output held changed: not what is remembered
    changed, _ = build_bundle(Output("facts", "ok", "b", lines))
    assert "a &amp; b" in changed["text/html"]
    assert "a &amp; b" not in first["text/html"]
    other, _ = build_bundle(Output("facts", "warning", "b", lines))
    assert 'class="skillnb-output skillnb-warning"' in other["text/html"]
    badge, _ = build_bundle(Output("facts", "ok", "c", lines))
    assert "<strong>c</strong>" in badge["text/html"]


def test_a_fact_holding_markup_is_escaped_in_every_output(ip: RaisingShell) -> None:
    cell(ip, f"%%formalize reply\n{SCRIPT!r}")
    cell(ip, f"%%formalize reply\n{SCRIPT!r}")  # restored
    cell(ip, "%skillnb facts")
    cell(ip, "%skillnb history")
    cell(ip, "%resume")
    shown = [o["data"] for o in ip.display_pub.outputs if "text/html" in o["data"]]
    assert len(shown) >= 5
    for data in shown:
        assert "<script>" not in data["text/html"]


def _fake_channel(ip: RaisingShell) -> FakeChannel:
    session = current_session(ip)
    assert session is not None
    channel = FakeChannel()
    session.channel = channel  # type: ignore[assignment]
    return channel


def test_a_cell_that_changes_the_run_sends_one_mirror_message(ip: RaisingShell) -> None:
    channel = _fake_channel(ip)
    cell(ip, "%%formalize budget --kind decision\n5000", cell_id="cell-7")
    (message,) = channel.messages
    run = current_run(ip)
    assert message["v"] == 1
    assert message["cell_id"] == "cell-7"
    assert message["notebook"]["run_id"] == run.id
    assert message["notebook"]["facts"]["budget"] == {
        "version": 1,
        "kind": "decision",
        "cell_id": "cell-7",
        "preview": "5000",
    }
    assert message["cell"]["step"] == "budget"
    assert message["cell"]["status"] == "committed"
    assert MIME in last(ip)
    assert last_volatile(ip)["mirror"]["notebook"] == message["notebook"]
    cell(ip, "1 + 1")  # nothing changed: nothing sent
    assert len(channel.messages) == 1
    cell(ip, "from skillnb.jupyter.extension import current_run\ncurrent_run().formalize('x', 1)")
    assert len(channel.messages) == 2
    assert channel.messages[-1]["cell"] is None
    assert channel.messages[-1]["notebook"]["facts"]["x"]["version"] == 1


def test_the_gate_cell_mirror_names_its_status(ip: RaisingShell) -> None:
    channel = _fake_channel(ip)
    cell(ip, "%%gate --name ship --approval 'Go?' --on-block skip\n1\n", cell_id="g1")
    message = channel.messages[-1]
    assert message["cell_id"] == "g1"
    assert message["cell"]["status"] == "waiting"
    assert message["notebook"]["pending"][0]["gate"] == "ship.approval"


class _Comm:
    def __init__(self, **kwargs: Any) -> None:
        self.opened = kwargs
        self.sent: list[dict[str, Any]] = []
        self._closed = False

    def send(self, data: dict[str, Any]) -> None:
        self.sent.append(data)

    def close(self) -> None:
        self._closed = True


def test_channel_opens_lazily_and_reopens_when_the_frontend_closed_it() -> None:
    made: list[_Comm] = []

    def create(**kwargs: Any) -> _Comm:
        made.append(_Comm(**kwargs))
        return made[-1]

    channel = MirrorChannel(create)
    assert made == []
    channel.send({"n": 1})
    channel.send({"n": 2})
    assert made[0].opened == {"target_name": MIRROR_TARGET, "data": {"n": 1}}
    assert made[0].sent == [{"n": 2}]
    made[0]._closed = True  # no frontend registered the target
    channel.send({"n": 3})
    assert len(made) == 2
    assert made[1].opened["data"] == {"n": 3}
    channel.close()
    assert made[1]._closed
    assert channel.sent == 3


def test_without_a_frontend_no_comm_is_opened(ip: RaisingShell) -> None:
    # No Jupyter server session: a headless client, which would log "No handler found".
    session = current_session(ip)
    assert session is not None
    cell(ip, "%%formalize a\n1")
    assert session.channel.sent == 0  # type: ignore[union-attr]
    ip.user_ns["__session__"] = "work/analysis.ipynb"  # what ipykernel sets under a server
    cell(ip, "%%formalize b\n2")
    assert session.channel.sent == 1  # type: ignore[union-attr]


def test_a_frontend_that_opens_the_target_gets_the_mirror() -> None:
    made: list[_Comm] = []
    channel = MirrorChannel(create=lambda **kw: made.append(_Comm(**kw)), listening=lambda: False)
    channel.send({"n": 1})
    assert (made, channel.sent) == ([], 0)
    opened = _Comm()
    channel.accept(opened)  # the handshake: the frontend opened skillnb.mirror to the kernel
    channel.send({"n": 2})
    assert opened.sent == [{"n": 2}]
