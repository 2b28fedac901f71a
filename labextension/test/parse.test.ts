import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  errorText,
  parseBundle,
  parseDescription,
  parseMirrorMessage,
  parseOutputVolatile,
  parseVersion
} from '../src/parse';
import { MIME_TYPE } from '../src/tokens';

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

  it('reads the profile and the open follow-ups', () => {
    const run = parseDescription({
      v: 1,
      run_id: 'r',
      profile: 'demo',
      follow_ups: [
        {
          id: 'f1',
          gate: 'quality_ok',
          state: 'analyzing',
          trigger: 'analysis_done',
          reason: 'score is low',
          text: 'Add a caveat',
          opened_seq: 12,
          opened_at: null
        },
        'junk'
      ]
    });
    assert.equal(run.profile, 'demo');
    assert.equal(run.follow_ups.length, 1);
    assert.equal(run.follow_ups[0].text, 'Add a caveat');
    assert.equal(run.follow_ups[0].opened_seq, 12);
    const older = parseDescription({ v: 1, run_id: 'r' });
    assert.equal(older.profile, 'default');
    assert.deepEqual(older.follow_ups, []);
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
  it('reads the deterministic fields of a bundle', () => {
    const bundle = parseBundle({
      v: 1,
      kind: 'formalize',
      badge: '📌 budget v2',
      status: 'restored',
      key: 'budget',
      trigger: null
    });
    assert.deepEqual(bundle, {
      v: 1,
      kind: 'formalize',
      badge: '📌 budget v2',
      status: 'restored',
      key: 'budget',
      trigger: null
    });
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

describe('parseOutputVolatile', () => {
  const mirror = { notebook: { v: 1, version: 5 }, cell: { step: 'budget' } };

  it('reads the run id, the time and the mirror from the output metadata', () => {
    const volatile = parseOutputVolatile({
      [MIME_TYPE]: {
        v: 1,
        run_id: 'r1',
        at: '2026-01-01T10:00:00+00:00',
        events: [{ seq: 3 }],
        mirror
      },
      'image/png': { width: 3 }
    });
    assert.deepEqual(volatile, {
      run_id: 'r1',
      at: '2026-01-01T10:00:00+00:00',
      mirror
    });
  });

  it('reads the mirror of an output saved before it moved to the metadata', () => {
    const legacyData = { v: 1, kind: 'formalize', badge: 'b', mirror };
    const oldMetadata = {
      [MIME_TYPE]: { run_id: 'r1', at: '2024-01-01T00:00:00+00:00' }
    };
    assert.deepEqual(parseOutputVolatile(oldMetadata, legacyData), {
      run_id: 'r1',
      at: '2024-01-01T00:00:00+00:00',
      mirror
    });
    assert.deepEqual(parseOutputVolatile({}, legacyData)?.mirror, mirror);
  });

  it('prefers the metadata, and ignores foreign or newer formats', () => {
    const legacyData = { v: 1, mirror };
    const metadata = { [MIME_TYPE]: { v: 1, run_id: 'r2', mirror: null } };
    assert.equal(parseOutputVolatile(metadata, legacyData)?.mirror, null);
    assert.equal(parseOutputVolatile({}), null);
    assert.equal(parseOutputVolatile('text'), null);
    assert.equal(
      parseOutputVolatile({ [MIME_TYPE]: { v: 2, run_id: 'r', mirror } }),
      null
    );
    assert.deepEqual(
      parseOutputVolatile({ [MIME_TYPE]: { v: 1, run_id: 7, at: ['x'] } }),
      { run_id: null, at: null, mirror: null }
    );
  });
});

describe('small readers', () => {
  it('reads versions, mirror messages and error texts', () => {
    assert.deepEqual(parseVersion({ exists: true, version: 4 }), {
      exists: true,
      version: 4
    });
    assert.deepEqual(parseVersion(null), { exists: false, version: null });
    assert.deepEqual(parseVersion({ exists: true, version: 5, live: true }), {
      exists: true,
      version: 5,
      live: true
    });
    assert.equal(parseMirrorMessage({ v: 2 }), null);
    assert.deepEqual(
      parseMirrorMessage({ v: 1, cell_id: 'c1', cell: { step: 'k' } }),
      {
        v: 1,
        notebook: null,
        cell_id: 'c1',
        cell: { step: 'k' },
        suggestions: null
      }
    );
    assert.equal(errorText({ error: 'no sidecar' }, 'fallback'), 'no sidecar');
    assert.equal(errorText({ message: 'Forbidden' }, 'fallback'), 'Forbidden');
    assert.equal(errorText('<html>', 'fallback'), 'fallback');
  });
});
