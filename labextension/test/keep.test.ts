import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { keepCode, keepSuggestion, KeepSuggestions } from '../src/keep';
import { parseMirrorMessage, parseSuggestions } from '../src/parse';
import { keepSection } from '../src/sections';
import type { ISuggestion } from '../src/types';
import { FakeElement, installFakeDocument } from './fakes';

installFakeDocument();

const BUDGET: ISuggestion = {
  name: 'budget',
  kind: 'decision',
  score: 0.9,
  reason: 'a decision: <b>1200</b>'
};
const ROWS: ISuggestion = {
  name: 'rows',
  kind: 'data',
  score: 0.7,
  reason: 'a table of 10 records'
};

/** A kernel that answers every execute request with `status` and records the request. */
class FakeKernel {
  requests: { [key: string]: unknown }[] = [];
  constructor(private readonly reply: { [key: string]: unknown }) {}
  requestExecute(content: { [key: string]: unknown }) {
    this.requests.push(content);
    return { done: Promise.resolve({ content: this.reply }) };
  }
}

function kernel(reply: { [key: string]: unknown }) {
  const fake = new FakeKernel(reply);
  return {
    fake,
    kernel: fake as unknown as Parameters<typeof keepSuggestion>[0]
  };
}

describe('keep-suggestions', () => {
  it('parses the suggestions of a mirror message, tolerating junk', () => {
    const message = parseMirrorMessage({
      v: 1,
      notebook: null,
      cell: null,
      cell_id: 'c3',
      suggestions: [
        { name: 'budget', kind: 'decision', score: 0.9, reason: 'r' },
        { name: '', kind: 'data' },
        { name: 'x', score: 'high' },
        7
      ]
    });
    assert.deepEqual(message?.suggestions, [
      { name: 'budget', kind: 'decision', score: 0.9, reason: 'r' },
      { name: 'x', kind: 'data', score: 0, reason: '' }
    ]);
    assert.equal(parseMirrorMessage({ v: 1 })?.suggestions, null);
    assert.deepEqual(parseSuggestions([]), []);
    assert.equal(parseSuggestions('budget'), null);
  });

  it('keeps the latest suggestions per notebook until replaced or kept', () => {
    const store = new KeepSuggestions();
    const changed: string[] = [];
    store.changed.connect((_, path) => changed.push(path));
    store.replace('a.ipynb', [BUDGET, ROWS]);
    store.replace('b.ipynb', [ROWS]);
    assert.deepEqual(store.get('a.ipynb'), [BUDGET, ROWS]);
    store.remove('a.ipynb', 'budget');
    assert.deepEqual(store.get('a.ipynb'), [ROWS]);
    store.remove('a.ipynb', 'budget'); // already gone: no signal
    store.replace('a.ipynb', []);
    store.replace('a.ipynb', []); // nothing to clear: no signal
    assert.deepEqual(store.get('a.ipynb'), []);
    assert.deepEqual(store.get('b.ipynb'), [ROWS]);
    assert.deepEqual(store.get(null), []);
    assert.deepEqual(changed, ['a.ipynb', 'b.ipynb', 'a.ipynb', 'a.ipynb']);
  });

  it('builds the magic only for identifier names and plain kinds', () => {
    assert.equal(keepCode(BUDGET), '%formalize budget --kind decision');
    assert.equal(keepCode({ ...BUDGET, name: 'a; import os' }), null);
    assert.equal(keepCode({ ...BUDGET, name: 'df["x"]' }), null);
    assert.equal(keepCode({ ...BUDGET, kind: 'data --auto' }), null);
  });

  it('runs %formalize silently in the kernel and drops the kept suggestion', async () => {
    const store = new KeepSuggestions();
    store.replace('a.ipynb', [BUDGET, ROWS]);
    const { fake, kernel: k } = kernel({ status: 'ok', execution_count: 1 });
    const result = await keepSuggestion(k, store, 'a.ipynb', BUDGET);
    assert.deepEqual(result, { ok: true, error: '' });
    assert.equal(fake.requests.length, 1);
    assert.equal(fake.requests[0].code, '%formalize budget --kind decision');
    assert.equal(fake.requests[0].silent, true);
    assert.equal(fake.requests[0].store_history, false);
    assert.deepEqual(store.get('a.ipynb'), [ROWS]);
  });

  it('leaves the suggestion when the kernel refuses, and never sends odd names', async () => {
    const store = new KeepSuggestions();
    store.replace('a.ipynb', [BUDGET]);
    const { kernel: refusing } = kernel({
      status: 'error',
      ename: 'UsageError',
      evalue: 'no variable budget'
    });
    const refused = await keepSuggestion(refusing, store, 'a.ipynb', BUDGET);
    assert.deepEqual(refused, {
      ok: false,
      error: 'UsageError: no variable budget'
    });
    assert.deepEqual(store.get('a.ipynb'), [BUDGET]);
    const { fake, kernel: k } = kernel({ status: 'ok' });
    const odd = { ...BUDGET, name: '__import__("os")' };
    const result = await keepSuggestion(k, store, 'a.ipynb', odd);
    assert.equal(result.ok, false);
    assert.equal(fake.requests.length, 0);
  });

  it('shows a quiet Keep? section whose buttons keep one suggestion each', async () => {
    assert.equal(
      keepSection([], () => Promise.resolve(true)),
      null
    );
    const kept: string[] = [];
    const node = keepSection([BUDGET, ROWS], s => {
      kept.push(s.name);
      return Promise.resolve(true);
    }) as unknown as FakeElement;
    assert.equal(node.dataset.section, 'keep');
    const items = node.findAll(el => el.className === 'jp-skillnb-suggestion');
    assert.deepEqual(
      items.map(i => i.dataset.name),
      ['budget', 'rows']
    );
    // the reason is set as text, never parsed as HTML
    assert.match(
      items[0].textContent,
      /budget \(decision\) a decision: <b>1200<\/b>Keep/
    );
    const buttons = node.findAll(el => el.tagName === 'button');
    assert.equal(buttons[1].title, '%formalize rows --kind data');
    // each button its own accessible name, not "Keep" twice
    assert.deepEqual(
      buttons.map(b => b.attributes['aria-label']),
      ['Keep budget', 'Keep rows']
    );
    buttons[1].click();
    assert.deepEqual(kept, ['rows']);
    assert.equal(buttons[1].disabled, true);
    assert.equal(buttons[0].disabled, false);
    await new Promise(resolve => setTimeout(resolve, 0));
    assert.equal(buttons[1].disabled, true); // kept: stays pressed until it leaves the list
  });

  it('lets a Keep that failed be pressed again', async () => {
    const node = keepSection([BUDGET], () =>
      Promise.resolve(false)
    ) as unknown as FakeElement;
    const [button] = node.findAll(el => el.tagName === 'button');
    button.click();
    assert.equal(button.disabled, true);
    await new Promise(resolve => setTimeout(resolve, 0));
    assert.equal(button.disabled, false);
  });
});
