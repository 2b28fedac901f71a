import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { parseSavedViews } from '../src/savedviews';

const DATA = { 'text/html': '<div>run</div>', 'text/plain': 'run' };

describe('parseSavedViews', () => {
  it('reads the models and the fresh data', () => {
    assert.deepEqual(
      parseSavedViews({ v: 1, models: ['m1', 'm2'], data: DATA }),
      {
        models: ['m1', 'm2'],
        data: DATA
      }
    );
  });

  it('drops model ids that are not strings', () => {
    const saved = parseSavedViews({
      v: 1,
      models: ['m1', 7, null],
      data: DATA
    });
    assert.deepEqual(saved?.models, ['m1']);
  });

  it('refuses other versions and shapes', () => {
    for (const raw of [
      null,
      'text',
      { v: 2, models: [], data: DATA },
      { v: 1, models: 'm1', data: DATA },
      { v: 1, models: [], data: { 'text/html': 1, 'text/plain': 'x' } },
      { v: 1, models: [], data: { 'text/html': 'x' } },
      { v: 1, models: [] }
    ]) {
      assert.equal(parseSavedViews(raw), null, JSON.stringify(raw));
    }
  });
});
