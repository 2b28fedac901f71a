"""Gates that bend, headless in real kernels (``skillnb run`` over nbclient).

One notebook walks the whole path: a permission gate blocks under the default profile and
is bypassed (and audited) under ``--profile demo``; a feed that times out falls back to the
manual transition, whose warning gate leaves a follow-up; a quota service that times out
escalates to an approval that ``skillnb approve`` settles; ``skillnb follow-ups`` lists the
follow-up until ``skillnb resolve`` closes it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clikit import cli, write_notebook

from skillnb.run import open_run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

WORKFLOW = (Path(__file__).parents[1] / "fixtures" / "workflows" / "bending_flow.yaml").read_text(
    encoding="utf-8"
)

CALLABLES = """\
import threading
import skillnb

_never = threading.Event()


@skillnb.gate("has_publisher_role")
def has_publisher_role(facts):
    return False, "needs the publisher role"


@skillnb.gate("feed_answers")
def feed_answers(facts):
    _never.wait(2)  # the feed does not answer in time
    return True


@skillnb.gate("quota_ok")
def quota_ok(facts):
    _never.wait(2)  # nor does the quota service
    return True
"""

CELLS = [
    "%load_ext skillnb",
    CALLABLES,
    "%%workflow\n" + WORKFLOW,
    "%%formalize sources\n['press release']",
    "%%gate unlock\nprint('unlocked')",
    "%%gate fetch\nprint('fetched')",
    "%%gate analyze\nprint('analyzed')",
    "%%gate finish\nprint('finished')",
]


def _outputs(nb: Path, index: int) -> str:
    cell = json.loads(nb.read_text())["cells"][index]
    return json.dumps(cell["outputs"])


def test_profiles_fallback_escalation_and_follow_ups_headless(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = write_notebook(tmp_path / "bend.ipynb", CELLS)

    # 1. under the default profile the permission gate blocks: exit 3, nothing bypassed
    code, _, err = cli(capsys, "run", nb)
    assert code == 3, err
    assert "needs the publisher role" in err
    run = open_run(nb)
    assert run.state == "draft"
    assert not [e for e in run.history(100) if e.type == "gate.bypassed"]

    # 2. a profile the workflow does not declare is refused before anything runs
    code, _, err = cli(capsys, "run", nb, "--profile", "prod")
    assert code == 2
    assert "profile 'prod' is not declared by workflow 'Bending_Flow'" in err

    # 3. under demo: bypassed, fell back, then waiting for the escalated quota gate
    code, _, err = cli(capsys, "run", nb, "--profile", "demo")
    assert code == 3, err
    assert err.strip() == (
        f"waiting for approval: quota_ok (run `skillnb approve {nb} quota_ok --by NAME`)"
    )
    run = open_run(nb)
    assert run.state == "manual"
    (bypass,) = [e for e in run.history(100) if e.type == "gate.bypassed"]
    assert (bypass.data["gate"], bypass.data["profile"]) == ("has_publisher_role", "demo")
    assert "bypassed (profile demo)" in _outputs(nb, 4)
    fell_back = next(e for e in run.history(100) if e.data.get("fallback"))
    assert (fell_back.data["trigger"], fell_back.data["fallback"]["for"]) == ("by_hand", "fetch")
    assert "fell back to by_hand: unlocked" in _outputs(nb, 5)
    (request,) = run.pending()
    assert request.message == "The quota service does not answer: analyze anyway?"

    # 4. the warning of the fallback transition left a follow-up
    code, out, _ = cli(capsys, "follow-ups", nb)
    assert code == 0
    assert "enough_sources in unlocked" in out
    assert "Add sources before the report goes out" in out

    # 5. a person settles the escalation from the command line; the run finishes
    assert cli(capsys, "approve", nb, "quota_ok", "--by", "ed")[0] == 0
    code, out, err = cli(capsys, "run", nb, "--profile", "demo")
    assert code == 0, err
    assert out.startswith("finished in state done")
    run = open_run(nb)
    assert [a.status for a in run.snapshot.approvals.values()] == ["consumed"]
    assert run.state == "done"
    assert "analyze: manual \\u2192 analyzing" in _outputs(nb, 6)

    # 6. the follow-up stays listed until it is resolved
    assert "Add sources" in cli(capsys, "follow-ups", nb)[1]
    code, out, _ = cli(capsys, "resolve", nb, "enough_sources", "--by", "ed", "--note", "added")
    assert code == 0
    assert "resolved follow-up" in out
    assert cli(capsys, "follow-ups", nb)[1].strip() == "no open follow-ups"
    assert open_run(nb).follow_ups() == []
