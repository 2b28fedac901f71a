import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  errorText,
  parseBundle,
  parseDescription,
  parseMirrorMessage,
  parseVersion
} from '../src/parse';

describe('parseDescription', () => {
  it('fills safe defaults for missing or mistyped fields', () => {
    const run = parseDescription({
      v: 1,
      run_id: 'r',
      state: 7,
      facts: [
        {
          key: 'budget',
          version: 'two',
          preview: '<img src=x onerror=alert(1)>'
        },
        'junk'
      ],
      next: [
        {
          trigger: 'go',
          status: 'sideways',
          gates: [{ gate: 'g', passed: 'yes' }]
        }
      ],
      batches: null
    });
    assert.equal(run.state, null);
    assert.equal(run.facts.length, 1);
    assert.equal(run.facts[0].version, 0);
    assert.equal(run.facts[0].preview, '<img src=x onerror=alert(1)>');
    assert.equal(run.facts[0].restorable, true);
    assert.equal(run.next[0].status, 'unknown');
    assert.equal(run.next[0].gates[0].passed, null);
    assert.deepEqual(run.batches, []);
    assert.deepEqual(run.key_ids, {});
  });

  it('refuses another format version and non-objects', () => {
    assert.throws(
      () => parseDescription({ v: 2 }),
      /unsupported run description format v=2/
    );
    assert.throws(() => parseDescription([1]), /not an object/);
  });
});

describe('parseBundle', () => {
  it('reads a bundle and its mirror', () => {
    const bundle = parseBundle({
      v: 1,
      kind: 'formalize',
      badge: '📌 budget v2',
      status: 'restored',
      key: 'budget',
      trigger: null,
      mirror: { notebook: { v: 1, version: 5 }, cell: null }
    });
    assert.equal(bundle?.badge, '📌 budget v2');
    assert.equal(bundle?.status, 'restored');
    assert.deepEqual(bundle?.mirror?.notebook, { v: 1, version: 5 });
    assert.equal(bundle?.mirror?.cell, null);
  });

  it('ignores other versions and maps an unknown status to ok', () => {
    assert.equal(parseBundle({ v: 9, badge: 'x' }), null);
    assert.equal(parseBundle('text'), null);
    assert.equal(
      parseBundle({ v: 1, kind: 'gate', status: 'weird' })?.status,
      'ok'
    );
    assert.equal(parseBundle({ v: 1, kind: 'gate' })?.badge, 'gate');
  });
});

describe('small readers', () => {
  it('reads versions, mirror messages and error texts', () => {
    assert.deepEqual(parseVersion({ exists: true, version: 4 }), {
      exists: true,
      version: 4
    });
    assert.deepEqual(parseVersion(null), { exists: false, version: null });
    assert.equal(parseMirrorMessage({ v: 2 }), null);
    assert.deepEqual(
      parseMirrorMessage({ v: 1, cell_id: 'c1', cell: { step: 'k' } }),
      {
        v: 1,
        notebook: null,
        cell_id: 'c1',
        cell: { step: 'k' }
      }
    );
    assert.equal(errorText({ error: 'no sidecar' }, 'fallback'), 'no sidecar');
    assert.equal(errorText({ message: 'Forbidden' }, 'fallback'), 'Forbidden');
    assert.equal(errorText('<html>', 'fallback'), 'fallback');
  });
});
