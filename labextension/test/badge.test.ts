import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { describeOutput } from '../src/badge';
import { MIME_TYPE } from '../src/tokens';

const SCRIPT = '<script>alert(1)</script>';

function data(status: string, plain: string) {
  return {
    'text/plain': plain,
    [MIME_TYPE]: {
      v: 1,
      kind: 'gate',
      badge: `⛔ publish ${SCRIPT}`,
      status,
      key: null,
      trigger: 'publish'
    }
  };
}

describe('describeOutput', () => {
  it('takes the badge from the data and the time from the metadata', () => {
    const metadata = {
      [MIME_TYPE]: { v: 1, run_id: 'r1', at: '2026-01-01T10:00:00+00:00' }
    };
    const view = describeOutput(data('blocked', 'details here'), metadata);
    assert.deepEqual(view, {
      kind: 'gate',
      status: 'blocked',
      badge: `⛔ publish ${SCRIPT}`, // text, rendered as a text node
      title: 'SKILL.nb gate: blocked · shown 2026-01-01T10:00:00+00:00',
      details: 'details here',
      open: true,
      report: null,
      lines: []
    });
  });

  it("says a blocked cell's lines once and folds its gate report", () => {
    const report = {
      summary: 'gate report in state review (2 gates)',
      rows: [
        {
          mark: '✓',
          gate: 'has_summary',
          kind: 'requires',
          severity: 'block',
          message: 'ok'
        },
        {
          mark: '✗',
          gate: 'enough',
          kind: 'check',
          severity: 'block',
          message: `n >= 3 ${SCRIPT}`
        }
      ]
    };
    const bundle = data(
      'blocked',
      `⛔ publish ${SCRIPT}\n✗ enough: 2 of 3\n→ Run again.`
    );
    const raw = { ...bundle, [MIME_TYPE]: { ...bundle[MIME_TYPE], report } };
    const view = describeOutput(raw);
    assert.deepEqual(view?.lines, ['✗ enough: 2 of 3', '→ Run again.']); // no badge again
    assert.equal(view?.details, null); // the lines are not folded, nor repeated
    assert.deepEqual(view?.report, report);
    const bad = describeOutput({
      ...bundle,
      [MIME_TYPE]: {
        ...bundle[MIME_TYPE],
        report: { summary: 'x', rows: [{ mark: 1 }] }
      }
    });
    assert.equal(bad?.report, null);
    assert.equal(
      bad?.details,
      `⛔ publish ${SCRIPT}\n✗ enough: 2 of 3\n→ Run again.`
    );
  });

  it('folds the details of fine outcomes and drops a repeated badge', () => {
    const fine = describeOutput(data('ok', 'more'));
    assert.equal(fine?.open, false);
    assert.equal(fine?.title, 'SKILL.nb gate: ok');
    const repeated = describeOutput(data('ok', `⛔ publish ${SCRIPT}\n`));
    assert.equal(repeated?.details, null);
  });

  it('returns null for a bundle of another format', () => {
    assert.equal(describeOutput({ [MIME_TYPE]: { v: 2 } }), null);
    assert.equal(describeOutput({ 'text/plain': 'x' }), null);
  });
});
