"""Claims on steps and batch items: who is running what (service layer).

Before a step's body or a batch item runs, the process *claims* it under the run's lock (a
``claim.taken`` event, see :mod:`skillnb.core.runstate.claims`). Another process that meets a claim
held by a live owner does not run that body: a step raises
:class:`~skillnb.errors.StepInProgress`, a batch loop skips the item and offers it later.
A claim whose owner is dead (same host: the pid is gone, reused or a zombie) or whose lease
expired (another host) binds nobody. While the body runs, a :class:`Heartbeat` renews the
lease (default 60 s, ``$SKILLNB_LEASE_SECONDS`` or ``open_run(lease=...)``).

A claim held by this very process (a loop left by ``break``, a cell interrupted and run
again) is this process's to take again.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta

from skillnb.core.runstate.records import (
    RECORD_VERSION,
    Claim,
    EventDraft,
    JsonValue,
    Owner,
    RunState,
    json_time,
)
from skillnb.errors import SkillnbError
from skillnb.service.journal import RunJournal
from skillnb.service.owner import claim_held, process_owner

__all__ = [
    "DEFAULT_LEASE",
    "Claims",
    "Heartbeat",
    "lease_from_env",
]

ALIVE_FOR = 0.5
"""Seconds a batch loop trusts that an owner it saw alive still is."""

DEFAULT_LEASE = 60.0
"""Seconds a claim binds other hosts unless its heartbeat renews it."""


def lease_from_env(env: Mapping[str, str], lease: float | None = None) -> float:
    """The lease in seconds: ``lease`` when given, else ``$SKILLNB_LEASE_SECONDS``, else 60.

    Raises:
        SkillnbError: the value is not a positive number (naming where it came from).

    """
    where = "lease"
    if lease is None and env.get("SKILLNB_LEASE_SECONDS"):
        where = "SKILLNB_LEASE_SECONDS"
        try:
            lease = float(env["SKILLNB_LEASE_SECONDS"])
        except ValueError:
            lease = -1.0
    value = DEFAULT_LEASE if lease is None else lease
    if not value > 0:
        raise SkillnbError(f"{where} must be a positive number of seconds, not {value!r}")
    return value


class Claims:
    """Take, renew, release and inspect the claims of one run."""

    def __init__(self, journal: RunJournal, lease: float = DEFAULT_LEASE) -> None:
        self.journal = journal
        self.lease = lease

    def new(self, key: str) -> Claim:
        """A claim on ``key`` for this process, its lease starting now."""
        now = self.journal.clock()
        return Claim(
            key=key, owner=process_owner(), since=now, until=now + timedelta(seconds=self.lease)
        )

    def new_dump(self, key: str) -> dict[str, JsonValue]:
        """``new(key).model_dump(mode="json")``, built directly (a claim per step cell)."""
        now = self.journal.clock()
        return {
            "v": RECORD_VERSION,
            "key": key,
            "owner": _owner_dump(),
            "since": json_time(now),
            "until": json_time(now + timedelta(seconds=self.lease)),
        }

    def taken(self, key: str) -> EventDraft:
        """The ``claim.taken`` event of ``key`` for this process (append it under the lock)."""
        return self.journal.draft("claim.taken", claim=self.new(key).model_dump(mode="json"))

    def holder(self, state: RunState, key: str) -> Claim | None:
        """The claim on ``key`` held by another live process, or ``None`` when it is free."""
        claim = state.claims.get(key)
        if claim is None or claim.owner.id == process_owner().id:
            return None
        return claim if claim_held(claim, self.journal.clock()) else None

    def held_elsewhere(
        self, state: RunState, now: datetime, seen_alive: dict[str, float] | None = None
    ) -> set[str]:
        """Keys of every claim that binds this process (another live owner holds it).

        ``seen_alive`` (owner id -> monotonic time it was last seen alive) lets a loop that
        asks many times a second trust an owner seen alive in the last :data:`ALIVE_FOR`
        seconds instead of asking the system again; a dead owner is always asked again.
        """
        mine = process_owner().id
        clock = time.monotonic()
        held = set()
        for key, claim in state.claims.items():
            owner = claim.owner.id
            if owner == mine:
                continue
            if seen_alive is not None and clock - seen_alive.get(owner, -math.inf) < ALIVE_FOR:
                held.add(key)
            elif claim_held(claim, now):
                held.add(key)
                if seen_alive is not None:
                    seen_alive[owner] = clock
        return held

    def release(self, key: str) -> None:
        """Give up this process's claim on ``key`` (nothing when it holds none)."""
        mine = process_owner().id

        def make(state: RunState) -> list[EventDraft]:
            claim = state.claims.get(key)
            if claim is None or claim.owner.id != mine:
                return []
            return [self.journal.draft("claim.released", key=key)]

        self.journal.commit(make)

    def renew(self, keys: list[str]) -> None:
        """Extend the lease of this process's claims on ``keys`` by one lease from now."""
        mine = process_owner().id
        until = self.journal.clock() + timedelta(seconds=self.lease)

        def make(state: RunState) -> list[EventDraft]:
            return [
                self.journal.draft("claim.renewed", key=k, owner=mine, until=until.isoformat())
                for k in keys
                if k in state.claims and state.claims[k].owner.id == mine
            ]

        self.journal.commit(make)

    @contextmanager
    def heartbeat(
        self,
        keys: Callable[[], list[str]],
        renew: Callable[[list[str]], None] | None = None,
    ) -> Iterator[Heartbeat]:
        """Renew the claims ``keys()`` names every third of a lease while the block runs.

        ``renew`` renews claims kept elsewhere than in the journal (a store's item rows);
        by default :meth:`renew`.
        """
        beat = Heartbeat(self, keys, renew)
        beat.start()
        try:
            yield beat
        finally:
            beat.stop()


_owner: tuple[Owner, dict[str, JsonValue]] | None = None
"""This process's owner and its JSON dump (a new owner after ``fork``: dumped again)."""


def _owner_dump() -> dict[str, JsonValue]:
    """``process_owner().model_dump(mode="json")``, dumped once per owner (a fresh copy)."""
    global _owner  # a cache of the process's one owner
    owner = process_owner()
    if _owner is None or _owner[0] is not owner:
        _owner = (owner, owner.model_dump(mode="json"))
    return dict(_owner[1])


class Heartbeat:
    """Renews this process's claims ``keys()`` names every third of a lease until stopped.

    The renewals run on one daemon thread shared by every heartbeat of the process (started
    at the first one, idle while none runs), so a short step costs no thread start.
    """

    def __init__(
        self,
        claims: Claims,
        keys: Callable[[], list[str]],
        renew: Callable[[list[str]], None] | None = None,
    ) -> None:
        self._claims = claims
        self._renew = renew or claims.renew
        self._keys = keys
        self.interval = claims.lease / 3
        """Seconds between renewals."""
        self.error: BaseException | None = None
        """The last renewal error (the body goes on; other hosts may then take over)."""

    def start(self) -> None:
        """Start renewing."""
        _beater().add(self)

    def stop(self) -> None:
        """Stop renewing; returns once no renewal of this heartbeat is under way."""
        _beater().remove(self)

    def beat(self) -> None:
        """Renew the claims now (called by the shared thread)."""
        keys = self._keys()
        if not keys:
            return
        try:
            self._renew(keys)
        except (SkillnbError, OSError) as exc:
            self.error = exc


class _Beater:
    """The one thread of a process that renews every running heartbeat when it is due."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._due: dict[Heartbeat, float] = {}
        self._beating: Heartbeat | None = None
        self._thread: threading.Thread | None = None
        self._idle = DEFAULT_LEASE / 6
        """How long the idle thread sleeps between looks (half the shortest interval seen)."""

    def add(self, beat: Heartbeat) -> None:
        """Renew ``beat`` every interval from now on.

        The thread is woken only when it would look too late otherwise (waking it costs a
        short step a thread switch): it sleeps until the earliest renewal due, or, idle,
        half the shortest interval seen, so it finds a new heartbeat before its first renewal.
        """
        with self._cond:
            due = time.monotonic() + beat.interval
            earliest = min(self._due.values(), default=math.inf)
            self._due[beat] = due
            if due < earliest < math.inf or beat.interval / 2 < self._idle:
                self._idle = min(self._idle, beat.interval / 2)
                self._cond.notify_all()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="skillnb-heartbeat", daemon=True
                )
                self._thread.start()

    def remove(self, beat: Heartbeat) -> None:
        with self._cond:
            self._due.pop(beat, None)
            while self._beating is beat and threading.current_thread() is not self._thread:
                self._cond.wait()

    def _run(self) -> None:
        with self._cond:
            while True:
                if not self._due:
                    self._cond.wait(self._idle)
                    continue
                beat = min(self._due, key=self._due.__getitem__)
                left = self._due[beat] - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                self._due[beat] = time.monotonic() + beat.interval
                self._beating = beat
                self._cond.release()
                try:
                    beat.beat()
                except Exception as exc:  # noqa: BLE001  # one bad renewal stops no other
                    beat.error = exc
                finally:
                    self._cond.acquire()
                    self._beating = None
                    self._cond.notify_all()


_shared: _Beater | None = None


def _beater() -> _Beater:
    global _shared  # one per process; a forked child starts its own (see below)
    if _shared is None:
        _shared = _Beater()
    return _shared


def _forget_in_child() -> None:
    global _shared  # the parent's thread does not exist in the child
    _shared = None


os.register_at_fork(after_in_child=_forget_in_child)
