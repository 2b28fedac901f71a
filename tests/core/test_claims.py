"""Claims in one process: what a loop, a step and a failure leave behind."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from skillnb.core.runstate.claims import item_claim_key, step_claim_key
from skillnb.errors import SkillnbError
from skillnb.run import open_run
from skillnb.service import claims as claims_module
from skillnb.service.claims import lease_from_env
from skillnb.service.owner import process_owner


def test_limit_takes_exactly_that_many_and_completes_them(tmp_path: Path) -> None:
    with open_run(state_dir=tmp_path / "s", memory=False) as run:
        items = [f"t{i}" for i in range(10)]
        assert list(run.items("b", items, limit=3)) == ["t0", "t1", "t2"]
        assert run.snapshot.batches["b"].done == ["t0", "t1", "t2"]
        assert run.snapshot.claims == {}
        assert list(run.items("b", items, limit=0)) == []
        assert list(run.items("b", items)) == items[3:]


def test_an_item_left_by_break_or_an_error_is_released_not_done(tmp_path: Path) -> None:
    with open_run(state_dir=tmp_path / "s", memory=False) as run:
        for item in run.items("b", ["a", "b", "c"]):
            if item == "b":
                break
        assert run.snapshot.batches["b"].done == ["a"]
        assert item_claim_key("b", "b") not in run.snapshot.claims

        def fail_on_first() -> None:
            for item in run.items("b", ["a", "b", "c"]):
                raise ValueError("bad " + item)

        with pytest.raises(ValueError, match="bad"):
            fail_on_first()
        assert run.snapshot.claims == {}
        assert list(run.items("b", ["a", "b", "c"])) == ["b", "c"]


def test_marking_done_and_claiming_the_next_is_one_append(tmp_path: Path) -> None:
    with open_run(state_dir=tmp_path / "s", memory=False) as run:
        loop = run.items("b", ["a", "b"])
        next(loop)
        before = run.version
        next(loop)
        new = run.history(run.version - before)
        assert [e.type for e in new] == ["batch.item_done", "claim.taken"]
        assert len({e.at for e in new}) <= 2
        assert run.version == before + 2


def test_a_step_is_claimed_by_its_start_and_released_by_its_commit(tmp_path: Path) -> None:
    with open_run(state_dir=tmp_path / "s", memory=False) as run:
        seen = []

        def body() -> int:
            seen.append(dict(run.journal.refresh().claims))
            return 1

        run.gates.run_gated(None, body, key="gate:x", subject=run)
        assert list(seen[0]) == [step_claim_key("gate:x")]
        assert seen[0][step_claim_key("gate:x")].owner.pid > 0
        assert run.snapshot.claims == {}
        with pytest.raises(RuntimeError):
            run.gates.run_gated(
                None, lambda: (_ for _ in ()).throw(RuntimeError("x")), key="gate:y", subject=run
            )
        assert run.snapshot.claims == {}  # a failed step releases its claim


@pytest.mark.parametrize(("env", "lease"), [({}, 60.0), ({"SKILLNB_LEASE_SECONDS": "5"}, 5.0)])
def test_the_lease_comes_from_the_environment(env: dict[str, str], lease: float) -> None:
    assert lease_from_env(env) == lease


@pytest.mark.parametrize("value", ["0", "-3", "soon"])
def test_a_bad_lease_names_its_source(value: str) -> None:
    with pytest.raises(SkillnbError, match="SKILLNB_LEASE_SECONDS"):
        lease_from_env({"SKILLNB_LEASE_SECONDS": value})


@pytest.mark.parametrize("hours", [0.0, 5.5, -3.0, 1 / 7200])  # the last: a zone with seconds
def test_a_claims_dump_is_the_models_json_dump(tmp_path: Path, hours: float) -> None:
    moment = datetime(2026, 3, 1, 12, 30, 15, 250000, tzinfo=timezone(timedelta(hours=hours)))
    with open_run(state_dir=tmp_path / "s", memory=False, clock=lambda: moment) as run:
        key = step_claim_key("formalize:x")
        assert run.claims.new_dump(key) == run.claims.new(key).model_dump(mode="json")
        assert run.claims.new_dump(key) == run.claims.new(key).model_dump(mode="json")


def test_a_claims_dump_follows_a_new_owner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_run(state_dir=tmp_path / "s", memory=False) as run:
        first = run.claims.new_dump("k")
        first["owner"]["pid"] = -1  # type: ignore[index]  # a copy: the next dump is whole
        assert run.claims.new_dump("k")["owner"] == process_owner().model_dump(mode="json")
        child = process_owner().model_copy(update={"pid": 4242, "started": 1.0})
        monkeypatch.setattr(claims_module, "process_owner", lambda: child)  # as after a fork
        assert run.claims.new_dump("k")["owner"] == child.model_dump(mode="json")
