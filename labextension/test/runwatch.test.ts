import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { RunModel } from '../src/model';
import { RunWatches } from '../src/runwatch';
import type { IRunVersion } from '../src/types';
import { description, FakeClient } from './fakes';

/** Wait until `done()` holds (the loops run on timers). */
async function until(done: () => boolean, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) {
      throw new Error('timed out');
    }
    await new Promise(resolve => setTimeout(resolve, 5));
  }
}

describe('RunWatches', () => {
  it('asks once per run for all its followers, and long-polls a run it can wait on', async () => {
    const client = new FakeClient();
    client.runs.set('a.ipynb', description({ version: 3 }));
    client.live.add('a.ipynb');
    const watches = new RunWatches(client, { fallbackMs: 10, relookMs: 5 });
    const heard: [string, number | null][] = [];
    const one = watches.follow('a.ipynb', v =>
      heard.push(['one', v?.version ?? null])
    );
    const two = watches.follow('a.ipynb', v =>
      heard.push(['two', v?.version ?? null])
    );
    await until(() => heard.length === 2);
    assert.deepEqual(heard, [
      ['one', 3],
      ['two', 3]
    ]);
    assert.equal(watches.size, 1);
    await until(() => client.count('version') >= 3);
    // the first check plain, then held checks since the version known
    const asked = client.calls
      .filter(c => c.method === 'version')
      .map(c => c.args);
    assert.deepEqual(asked[0], ['a.ipynb']);
    assert.deepEqual(asked[1], ['a.ipynb', '3', '20']);
    assert.equal(heard.length, 2); // an unchanged answer is not told again
    client.runs.set('a.ipynb', description({ version: 4 }));
    await until(() => heard.length === 4);
    assert.deepEqual(heard.slice(2), [
      ['one', 4],
      ['two', 4]
    ]);
    // a late follower hears the last answer at once
    const late: (IRunVersion | null)[] = [];
    const three = watches.follow('a.ipynb', v => late.push(v));
    assert.equal(late[0]?.version, 4);
    one.dispose();
    two.dispose();
    assert.equal(watches.size, 1);
    three.dispose();
    assert.equal(watches.size, 0);
    const count = client.count('version');
    await new Promise(resolve => setTimeout(resolve, 40));
    assert.ok(client.count('version') <= count + 1); // at most the check in flight
    watches.dispose();
  });

  it('tells a failure once, as null', async () => {
    const client = new FakeClient();
    client.failWith = new Error('down');
    const watches = new RunWatches(client, { fallbackMs: 5 });
    const heard: (IRunVersion | null)[] = [];
    watches.follow('a.ipynb', v => heard.push(v));
    await until(() => client.count('version') >= 3);
    assert.deepEqual(heard, [null]);
    watches.dispose();
  });

  it("is what a polling model follows: the model refreshes when the run's version moves", async () => {
    const client = new FakeClient();
    client.runs.set('a.ipynb', description({ version: 1 }));
    client.live.add('a.ipynb');
    const watches = new RunWatches(client, { fallbackMs: 10, relookMs: 5 });
    const model = new RunModel(client, watches);
    await model.setPath('a.ipynb');
    model.startPolling(60_000);
    assert.equal(model.isPolling, true);
    assert.equal(watches.size, 1);
    const views: (number | null)[] = [];
    const view = watches.follow('a.ipynb', v => views.push(v?.version ?? null));
    client.runs.set('a.ipynb', description({ version: 2 }));
    await until(() => model.description?.version === 2);
    await until(() => views.includes(2));
    assert.equal(watches.size, 1); // one watch for the model and the saved view
    await model.setPath('b.ipynb');
    assert.equal(watches.size, 2); // the model follows the new notebook's run
    model.stopPolling();
    assert.equal(model.isPolling, false);
    assert.equal(watches.size, 1); // the saved view still follows its run
    view.dispose();
    assert.equal(watches.size, 0);
    model.dispose();
    watches.dispose();
  });
});
