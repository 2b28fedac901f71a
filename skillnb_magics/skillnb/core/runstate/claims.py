"""Claim keys: how steps and batch items are named in :attr:`RunState.claims` (core layer).

A process *claims* a step (a gated cell, a formalized computation, the action of a
transition) or a batch item under the run's lock before it runs the body: a step with the
``claim`` of its ``step.started`` event, an item with a ``claim.taken`` event.
``claim.renewed`` extends a lease; ``claim.released``, the step's ``step.committed``,
``step.failed`` or ``step.cleared``, or the item's ``batch.item_done`` end the claim.
Which claims are still *held* depends on whether their owner lives, which the service layer
decides (:mod:`skillnb.service.owner`); the core only records them.
"""

from __future__ import annotations

import json

__all__ = ["item_claim_key", "step_claim_key"]


def step_claim_key(step: str) -> str:
    """The claim key of step ``step`` (``formalize:budget``, ``gate:send``, ...)."""
    return f"step:{step}"


def item_claim_key(batch: str, item: str) -> str:
    """The claim key of item ``item`` of batch ``batch`` (unambiguous for any two strings)."""
    return "item:" + json.dumps([batch, item], ensure_ascii=False, separators=(",", ":"))
