import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { gateReason, gateStatus, mark, MARKS } from '../src/marks';
import type { IGateView } from '../src/types';

const HINT =
  '; approve with `%skillnb approve boss` or `skillnb approve NOTEBOOK boss --by NAME`';

function gate(kind: string, message: string): IGateView {
  return { gate: 'boss', kind, severity: 'block', passed: false, message };
}

describe('marks', () => {
  it('are the same set as the Python renderers', () => {
    assert.deepEqual(MARKS, {
      passing: '✓',
      warning: '⚠',
      blocked: '✗',
      waiting: '⏳',
      unknown: '?'
    });
  });

  it('mark a failing warn gate as a warning, not as blocked', () => {
    assert.equal(mark(gateStatus(false, 'warn')), '⚠');
    assert.equal(mark(gateStatus(false, 'block')), '✗');
    assert.equal(mark(gateStatus(true, 'block')), '✓');
    assert.equal(mark(gateStatus(null, 'block')), '?');
    assert.equal(mark('nonsense'), '?');
  });

  it('drop the approve hint only where the request is listed', () => {
    const waiting = gate('approval', `waiting for approval (Ship?)${HINT}`);
    assert.equal(
      gateReason(waiting, new Set(['boss'])),
      'waiting for approval (Ship?)'
    );
    assert.equal(gateReason(waiting, new Set()), waiting.message);
    const other = gate('requires', `missing${HINT}`);
    assert.equal(gateReason(other, new Set(['boss'])), other.message);
  });
});
