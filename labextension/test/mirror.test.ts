import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  applyCellMirror,
  applyMirrorMessage,
  applyNotebookMirror,
  applyOutputMirror,
  type IMirrorTarget
} from '../src/mirror';
import { MIME_TYPE } from '../src/tokens';
import { Holder } from './fakes';

function target(
  notebook: Holder,
  cells: { [id: string]: Holder }
): IMirrorTarget {
  return { notebook, findCell: id => cells[id] ?? null };
}

const MIRROR = { v: 1, run_id: 'r1', state: 'draft', version: 5, facts: {} };

describe('mirror', () => {
  it('writes the notebook mirror under the skillnb key, once', () => {
    const nb = new Holder();
    assert.equal(applyNotebookMirror(nb, MIRROR), true);
    assert.deepEqual(nb.metadata, { skillnb: MIRROR });
    assert.equal(applyNotebookMirror(nb, { ...MIRROR }), false);
    assert.equal(nb.writes, 1);
  });

  it('does not move the same run backwards, but takes another run', () => {
    const nb = new Holder();
    applyNotebookMirror(nb, MIRROR);
    assert.equal(applyNotebookMirror(nb, { ...MIRROR, version: 4 }), false);
    assert.equal(
      applyNotebookMirror(nb, { ...MIRROR, run_id: 'r2', version: 1 }),
      true
    );
    assert.equal((nb.metadata.skillnb as { run_id: string }).run_id, 'r2');
  });

  it('stores a copy, not the message object', () => {
    const nb = new Holder();
    const message = { ...MIRROR, facts: { a: { version: 1 } } };
    applyNotebookMirror(nb, message);
    message.facts.a.version = 99;
    assert.deepEqual((nb.metadata.skillnb as typeof message).facts.a, {
      version: 1
    });
  });

  it('applies a comm message to the notebook and the cell it names', () => {
    const nb = new Holder();
    const cell = new Holder();
    const change = applyMirrorMessage(target(nb, { c1: cell }), {
      v: 1,
      notebook: MIRROR,
      cell_id: 'c1',
      cell: { step: 'budget', version: 2, status: 'committed' }
    });
    assert.deepEqual(change, { notebook: true, cell: true });
    assert.deepEqual(cell.metadata.skillnb, {
      step: 'budget',
      version: 2,
      status: 'committed'
    });
    assert.equal(
      applyCellMirror(cell, {
        step: 'budget',
        version: 2,
        status: 'committed'
      }),
      false
    );
  });

  it('ignores unknown cells and foreign messages', () => {
    const nb = new Holder();
    const change = applyMirrorMessage(target(nb, {}), {
      v: 1,
      notebook: null,
      cell_id: 'gone',
      cell: { step: 'x' }
    });
    assert.deepEqual(change, { notebook: false, cell: false });
    assert.equal(applyMirrorMessage(target(nb, {}), { hello: 1 }), null);
    assert.equal(nb.writes, 0);
  });

  const BUNDLE = {
    'text/plain': 'budget v1',
    [MIME_TYPE]: {
      v: 1,
      kind: 'formalize',
      badge: '📌 budget v1',
      status: 'ok',
      key: 'budget',
      trigger: null
    }
  };

  it('applies the mirror a skillnb output carries in its metadata', () => {
    const nb = new Holder();
    const cell = new Holder();
    const metadata = {
      [MIME_TYPE]: {
        v: 1,
        run_id: 'r1',
        at: '2026-01-01T10:00:00+00:00',
        events: [],
        mirror: { notebook: MIRROR, cell: { step: 'budget', version: 1 } }
      }
    };
    assert.deepEqual(applyOutputMirror(nb, cell, BUNDLE, metadata), {
      notebook: true,
      cell: true
    });
    assert.deepEqual(nb.metadata.skillnb, MIRROR);
    assert.deepEqual(cell.metadata.skillnb, { step: 'budget', version: 1 });
    assert.equal(
      applyOutputMirror(nb, cell, { 'text/plain': 'plain output' }, metadata),
      null
    );
    assert.equal(applyOutputMirror(nb, cell, BUNDLE, {}), null);
  });

  it('applies the mirror of an output saved before it moved to the metadata', () => {
    const nb = new Holder();
    const cell = new Holder();
    const legacy = {
      ...BUNDLE,
      [MIME_TYPE]: {
        ...BUNDLE[MIME_TYPE],
        events: [],
        mirror: { notebook: MIRROR, cell: { step: 'budget', version: 1 } }
      }
    };
    const oldMetadata = {
      [MIME_TYPE]: { run_id: 'r1', at: '2024-01-01T00:00:00+00:00' }
    };
    assert.deepEqual(applyOutputMirror(nb, cell, legacy, oldMetadata), {
      notebook: true,
      cell: true
    });
    assert.deepEqual(cell.metadata.skillnb, { step: 'budget', version: 1 });
  });
});
