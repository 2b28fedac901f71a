"""What a kernel really sends fits the contract's models: every display bundle of a session
(data and metadata) and every message on the mirror comm, the mirrors inside included."""

from __future__ import annotations

from typing import Any

from shellkit import FakeChannel, RaisingShell, cell, saved_outputs

from skillnb.core.contract.mirror import CellMirror, NotebookMirror
from skillnb.core.contract.shapes import MirrorMessage, OutputBundle, OutputVolatile, SkillnbBundle
from skillnb.jupyter.display import MIME
from skillnb.jupyter.extension import current_session

WORKFLOW = """%%workflow
workflow:
  name: contract
  states: [draft, review]
  transitions:
    - {from: draft, to: review, trigger: submit, gates: [budget_ok, sign_off]}
  gates:
    budget_ok: {check: "budget > 100", severity: warn}
    sign_off: {approval: "Send it?"}
"""


def _session(ip: RaisingShell) -> FakeChannel:
    session = current_session(ip)
    assert session is not None
    channel = FakeChannel()
    session.channel = channel  # type: ignore[assignment]
    return channel


def test_every_output_and_mirror_message_of_a_session_fits_the_models(ip: RaisingShell) -> None:
    channel = _session(ip)
    cell(ip, WORKFLOW, cell_id="c0")
    cell(ip, "%%formalize budget --kind decision\n50", cell_id="c1")
    cell(ip, "%%gate submit --on-block skip\n1", cell_id="c2")
    cell(ip, "%skillnb approve sign_off --by ana", cell_id="c3")
    cell(ip, "%%gate submit\n2", cell_id="c2")
    cell(ip, "%skillnb status", cell_id="c4")
    outputs = saved_outputs(ip)
    kinds = set()
    for output in outputs:
        OutputBundle.model_validate({"data": output["data"], "metadata": output["metadata"]})
        kinds.add(SkillnbBundle.model_validate(output["data"][MIME]).kind)
        volatile = OutputVolatile.model_validate(output["metadata"][MIME])
        assert isinstance(output["data"]["text/plain"], str)
        if volatile.mirror is not None and volatile.mirror.notebook is not None:
            assert volatile.mirror.notebook.run_id == volatile.run_id
    assert {"formalize", "approval", "gate", "status"} <= kinds
    statuses: set[Any] = set()
    assert channel.messages
    for message in channel.messages:
        checked = MirrorMessage.model_validate(message)
        assert checked.notebook is None or isinstance(checked.notebook, NotebookMirror)
        if checked.cell is not None:
            statuses.add(CellMirror.model_validate(message["cell"]).status)
    assert {"committed", "waiting"} <= statuses
