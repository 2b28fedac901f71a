/** What the panel says once a person decided an approval request. */

import { threadResume } from './threadresume';

/** A toast: its kind (its colour and icon) and its words. */
export interface IDecidedNotice {
  type: 'success' | 'info';
  message: string;
}

/**
 * The toast after Approve or Reject: an approval is a success (green), a rejection only
 * information (it keeps the gate shut: no success colour, no check mark).
 */
export function decidedNotice(
  verb: 'Approve' | 'Reject',
  gate: string,
  who: string | null
): IDecidedNotice {
  const as = who ? ` as ${who}` : '';
  const done = verb === 'Approve' ? 'Approved' : 'Rejected';
  return {
    type: verb === 'Approve' ? 'success' : 'info',
    message: `${done} "${gate}"${as}.` + threadResume(gate)
  };
}
