import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { gateStatus, mark, resultStatus } from '../src/marks';
import { parseDescription } from '../src/parse';
import { nextSection } from '../src/sections';
import { FakeElement, golden, installFakeDocument } from './fakes';

describe('the golden run description', () => {
  it('is read whole: the parser keeps every field of a real run as it is', () => {
    const raw = golden();
    const run = parseDescription(raw);
    assert.deepEqual(run, raw);
    assert.deepEqual(
      Object.keys(run).sort(),
      Object.keys(raw as object).sort()
    );
  });

  it('has every section filled, so the tests above cover them all', () => {
    const run = parseDescription(golden());
    const empty = Object.entries(run)
      .filter(([, v]) => v === null || (Array.isArray(v) && v.length === 0))
      .map(([k]) => k);
    assert.deepEqual(empty, []);
  });

  it('shows its moves with the marks the Python views use', () => {
    installFakeDocument();
    const run = parseDescription(golden());
    const node = nextSection(run.next) as unknown as FakeElement;
    const moves = node.findAll(el => el.dataset.trigger !== undefined);
    assert.deepEqual(
      moves.map(m => m.children[0].textContent),
      ['✗ blocked', '✓ passing']
    );
    const signOff = run.next[0].gates[0];
    assert.equal(mark(gateStatus(signOff.passed, signOff.severity)), '✗');
  });

  it('shows an approval gate whose request is pending as waiting, like Python', () => {
    installFakeDocument();
    const run = parseDescription(golden());
    const pending = new Set(run.pending.map(p => p.gate));
    const node = nextSection(run.next, pending) as unknown as FakeElement;
    const marks = node
      .findAll(el => el.className.includes('jp-skillnb-gate-mark'))
      .map(el => el.textContent);
    assert.deepEqual(marks, ['⏳']);
    const signOff = run.next[0].gates[0];
    assert.equal(resultStatus(signOff, pending), 'waiting');
    assert.equal(resultStatus(signOff, new Set()), 'blocked');
  });
});
