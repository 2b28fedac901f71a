/**
 * The marks every SKILL.nb view uses for a gate or transition status: the same characters
 * as the Python renderers (skillnb.core.views.marks): ✓ passed, ⚠ warning (a failing warn gate:
 * the move still happens), ✗ blocked, ⏳ waiting (for an approval), ? not evaluated.
 */

import type { IGateView } from './types';

export type Status = 'passing' | 'warning' | 'blocked' | 'waiting' | 'unknown';

export const MARKS: Readonly<Record<Status, string>> = {
  passing: '✓',
  warning: '⚠',
  blocked: '✗',
  waiting: '⏳',
  unknown: '?'
};

/** The mark of ``status``; ``?`` for anything that is not a known status. */
export function mark(status: string): string {
  return (MARKS as Record<string, string>)[status] ?? MARKS.unknown;
}

/** Classify one gate result like the Python ``gate_status``. */
export function gateStatus(passed: boolean | null, severity: string): Status {
  if (passed === null) {
    return 'unknown';
  }
  if (passed) {
    return 'passing';
  }
  return severity === 'warn' ? 'warning' : 'blocked';
}

/**
 * Classify one gate result in its view like the Python ``result_status``: an approval gate
 * whose request is pending is ``waiting`` (⏳), not ``blocked``: someone has to decide.
 */
export function resultStatus(
  gate: IGateView,
  pendingGates: ReadonlySet<string>
): Status {
  const status = gateStatus(gate.passed, gate.severity);
  return status === 'blocked' &&
    gate.kind === 'approval' &&
    pendingGates.has(gate.gate)
    ? 'waiting'
    : status;
}

const APPROVE_HINT = /; approve with `[^`]*`(?: or `[^`]*`)?$/;

/**
 * A gate's message without the approve hint when the panel lists its request (with
 * Approve and Reject buttons): the hint is then said once, by the buttons.
 */
export function gateReason(
  gate: IGateView,
  pendingGates: ReadonlySet<string>
): string {
  return gate.kind === 'approval' && pendingGates.has(gate.gate)
    ? gate.message.replace(APPROVE_HINT, '')
    : gate.message;
}
