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

type IOPub = { header: { msg_type: string }; content: unknown };

/**
 * A kernel that answers every execute request with `status`, after publishing `outputs`
 * on IOPub as a kernel does, and records the request.
 */
class FakeKernel {
  requests: { [key: string]: unknown }[] = [];
  constructor(
    private readonly reply: { [key: string]: unknown },
    private readonly outputs: IOPub[] = []
  ) {}
  requestExecute(content: { [key: string]: unknown }) {
    this.requests.push(content);
    const future: { onIOPub: ((msg: IOPub) => void) | null; done: unknown } = {
      onIOPub: null,
      done: Promise.resolve().then(() => {
        this.outputs.forEach(msg => future.onIOPub?.(msg));
        return { content: this.reply };
      })
    };
    return future;
  }
}

/** The display_data of a SKILL.nb output with `status` and `badge`. */
function output(status: string, badge: string): IOPub {
  const bundle = {
    v: 1,
    kind: 'formalize',
    badge,
    status,
    key: 'budget',
    trigger: null
  };
  return {
    header: { msg_type: 'display_data' },
    content: {
      data: { 'application/vnd.skillnb.v1+json': bundle, 'text/plain': badge },
      metadata: {}
    }
  };
}

function kernel(reply: { [key: string]: unknown }, outputs: IOPub[] = []) {
  const fake = new FakeKernel(reply, outputs);
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

  it('holds the list each kernel sent until it sends another', () => {
    const store = new KeepSuggestions();
    const changed: string[] = [];
    store.changed.connect((_, path) => changed.push(path));
    store.replace('a.ipynb', [BUDGET, ROWS]);
    store.replace('b.ipynb', [ROWS]);
    assert.deepEqual(store.get('a.ipynb'), [BUDGET, ROWS]);
    store.replace('a.ipynb', [ROWS]);
    assert.deepEqual(store.get('a.ipynb'), [ROWS]);
    store.replace('a.ipynb', []);
    store.replace('a.ipynb', []); // nothing to clear: no signal
    assert.deepEqual(store.get('a.ipynb'), []);
    assert.deepEqual(store.get('b.ipynb'), [ROWS]);
    assert.deepEqual(store.get(null), []);
    assert.deepEqual(changed, ['a.ipynb', 'b.ipynb', 'a.ipynb', 'a.ipynb']);
  });

  it('builds the magic only for identifier names and plain kinds', () => {
    assert.equal(
      keepCode(BUDGET),
      '%formalize budget --kind decision --tell-kept'
    );
    assert.equal(keepCode({ ...BUDGET, name: 'a; import os' }), null);
    assert.equal(keepCode({ ...BUDGET, name: 'df["x"]' }), null);
    assert.equal(keepCode({ ...BUDGET, kind: 'data --auto' }), null);
  });

  it('runs %formalize silently in the kernel and leaves the list to the kernel', async () => {
    const { fake, kernel: k } = kernel({ status: 'ok', execution_count: 1 }, [
      output('ok', '📌 budget v1')
    ]);
    const result = await keepSuggestion(k, BUDGET);
    assert.deepEqual(result, { ok: true, error: '', info: '' });
    assert.equal(fake.requests.length, 1);
    assert.equal(
      fake.requests[0].code,
      '%formalize budget --kind decision --tell-kept'
    );
    assert.equal(fake.requests[0].silent, true);
    assert.equal(fake.requests[0].store_history, false);
  });

  it("says the kernel's line when the value was already kept", async () => {
    const line = 'budget is already kept as v1 with this value';
    const { kernel: k } = kernel({ status: 'ok' }, [
      { header: { msg_type: 'stream' }, content: { text: 'x' } },
      output('restored', line)
    ]);
    assert.deepEqual(await keepSuggestion(k, BUDGET), {
      ok: true,
      error: '',
      info: line
    });
  });

  it('says why the kernel refused, and never sends odd names', async () => {
    const { kernel: refusing } = kernel({
      status: 'error',
      ename: 'UsageError',
      evalue: 'no variable budget'
    });
    const refused = await keepSuggestion(refusing, BUDGET);
    assert.deepEqual(refused, {
      ok: false,
      error: 'UsageError: no variable budget',
      info: ''
    });
    const { fake, kernel: k } = kernel({ status: 'ok' });
    const odd = { ...BUDGET, name: '__import__("os")' };
    const result = await keepSuggestion(k, odd);
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
