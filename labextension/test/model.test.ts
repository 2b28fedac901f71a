import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { RunApiError } from '../src/api';
import { RunModel } from '../src/model';
import { COPY_OF, description, FakeClient } from './fakes';

function pending(gate: string) {
  return {
    id: `req-${gate}`,
    gate,
    trigger: 'publish',
    message: 'ok to publish?',
    state: 'draft',
    requested_seq: 2,
    requested_at: null
  };
}

describe('RunModel', () => {
  it('loads the run of the path it follows and emits stateChanged', async () => {
    const client = new FakeClient();
    client.runs.set('a.ipynb', description({ state: 'review' }));
    const model = new RunModel(client);
    const seen: string[] = [];
    model.stateChanged.connect(() => seen.push(model.status));
    await model.setPath('a.ipynb');
    assert.equal(model.status, 'ready');
    assert.equal(model.description?.state, 'review');
    assert.deepEqual(seen, ['loading', 'ready']);
  });

  it('reports a copy of a notebook holding its run as copied, with the ways on', async () => {
    const client = new FakeClient();
    client.copies.set('report-Copy1.ipynb', COPY_OF);
    const model = new RunModel(client);
    await model.setPath('report-Copy1.ipynb');
    assert.equal(model.status, 'copied');
    assert.deepEqual(model.copyOf, COPY_OF);
    assert.equal(model.description, null);
    assert.equal(client.count('describe'), 0);
    assert.equal(await model.checkVersion(), false); // still a copy: nothing to fetch
    // `%skillnb new-run` in the copy: a run of its own, shown as the copy's
    client.runs.set('report-Copy1.ipynb', description({ state: 'draft' }));
    assert.equal(await model.checkVersion(), true);
    assert.equal(model.status, 'ready');
    assert.equal(model.copyOf, null);
  });

  it('a copy whose original went away is missing, not copied', async () => {
    const client = new FakeClient();
    client.copies.set('report-Copy1.ipynb', COPY_OF);
    const model = new RunModel(client);
    await model.setPath('report-Copy1.ipynb');
    client.copies.clear();
    assert.equal(await model.checkVersion(), true);
    assert.equal(model.status, 'missing');
    assert.equal(model.copyOf, null);
  });

  it('reports a notebook without a sidecar as missing, with the server message', async () => {
    const client = new FakeClient();
    const model = new RunModel(client);
    await model.setPath('new.ipynb');
    assert.equal(model.status, 'missing');
    assert.equal(model.description, null);
    assert.match(model.error ?? '', /no SKILL\.nb run for new\.ipynb/);
    // Told by the version route (200), so the browser logs no 404 for the describe route.
    assert.equal(client.count('describe'), 0);
    assert.equal(await model.checkVersion(), false);
    assert.equal(client.count('describe'), 0);
  });

  it('asks for a shown run directly, and for a new one after the version route', async () => {
    const client = new FakeClient();
    client.runs.set('a.ipynb', description({ version: 3 }));
    const model = new RunModel(client);
    await model.setPath('a.ipynb');
    assert.deepEqual(
      client.calls.map(call => call.method),
      ['version', 'describe']
    );
    await model.refresh();
    assert.deepEqual(
      client.calls.map(call => call.method),
      ['version', 'describe', 'describe']
    );
  });

  it('asks who decisions are recorded as once, and again after a failure', async () => {
    const client = new FakeClient();
    const model = new RunModel(client);
    client.failWith = new RunApiError(0, 'cannot reach the Jupyter server');
    await assert.rejects(model.recordedAs(), /cannot reach/);
    client.failWith = null;
    assert.deepEqual(await model.recordedAs(), {
      name: 'ada',
      display_name: 'Ada',
      source: 'server'
    });
    await model.recordedAs();
    assert.equal(client.count('identity'), 2);
  });

  it('reports other failures as errors', async () => {
    const client = new FakeClient();
    client.runs.set('a.ipynb', description());
    client.failWith = new RunApiError(500, 'journal.jsonl:7: damaged');
    const model = new RunModel(client);
    await model.setPath('a.ipynb');
    assert.equal(model.status, 'error');
    assert.equal(model.error, 'journal.jsonl:7: damaged');
  });

  it('drops an answer for a notebook it no longer follows', async () => {
    const client = new FakeClient();
    client.runs.set('a.ipynb', description({ state: 'from-a' }));
    client.runs.set('b.ipynb', description({ state: 'from-b' }));
    let release: () => void = () => undefined;
    client.gate = new Promise<void>(resolve => (release = resolve));
    const model = new RunModel(client);
    const first = model.setPath('a.ipynb');
    const second = model.setPath('b.ipynb');
    release();
    await Promise.all([first, second]);
    assert.equal(model.path, 'b.ipynb');
    assert.equal(model.description?.state, 'from-b');
  });

  it('refreshes on checkVersion only when the version moved', async () => {
    const client = new FakeClient();
    const run = description({ version: 3 });
    client.runs.set('a.ipynb', run);
    const model = new RunModel(client);
    await model.setPath('a.ipynb');
    assert.equal(await model.checkVersion(), false);
    assert.equal(client.count('describe'), 1);
    run.version = 4;
    run.state = 'review';
    assert.equal(await model.checkVersion(), true);
    assert.equal(client.count('describe'), 2);
    assert.equal(model.description?.state, 'review');
  });

  it('waits on the server for a run it can hold instead of asking again', async () => {
    const client = new FakeClient();
    const run = description({ version: 3 });
    client.runs.set('a.ipynb', run);
    client.live.add('a.ipynb');
    const model = new RunModel(client);
    await model.setPath('a.ipynb');
    assert.equal(await model.checkVersion(), false); // a held check, answered live
    run.version = 4;
    assert.equal(await model.checkVersion(), true); // a long poll since version 3
    const checks = client.calls.filter(call => call.method === 'version');
    assert.deepEqual(
      checks.map(call => call.args),
      // whether a run exists, then held checks
      [['a.ipynb'], ['a.ipynb', '3', '20'], ['a.ipynb', '3', '20']]
    );
    client.live.delete('a.ipynb');
    await model.setPath('b.ipynb');
    await model.setPath('a.ipynb');
    await model.checkVersion(); // held, but the server says it cannot hold this run
    await model.checkVersion();
    assert.deepEqual(client.calls.at(-1)?.args, ['a.ipynb']); // then plain checks
  });

  it('notices a sidecar created after the notebook was opened', async () => {
    const client = new FakeClient();
    const model = new RunModel(client);
    await model.setPath('a.ipynb');
    assert.equal(model.status, 'missing');
    assert.equal(await model.checkVersion(), false);
    client.runs.set('a.ipynb', description({ version: 1 }));
    assert.equal(await model.checkVersion(), true);
    assert.equal(model.status, 'ready');
  });

  it('approves through the client and shows the refreshed run', async () => {
    const client = new FakeClient();
    client.runs.set(
      'a.ipynb',
      description({ version: 3, pending: [pending('sign_off')] })
    );
    const model = new RunModel(client);
    await model.setPath('a.ipynb');
    assert.equal(model.description?.pending.length, 1);
    await model.approve('sign_off', 'looks good');
    assert.deepEqual(client.calls.find(c => c.method === 'approve')?.args, [
      'a.ipynb',
      'sign_off',
      'looks good'
    ]);
    assert.equal(model.description?.pending.length, 0);
    assert.equal(model.description?.version, 4);
  });

  it('passes a refused decision on to the caller and still refreshes', async () => {
    const client = new FakeClient();
    client.runs.set('a.ipynb', description());
    const model = new RunModel(client);
    await model.setPath('a.ipynb');
    await assert.rejects(
      model.reject('nope'),
      (e: unknown) => e instanceof RunApiError && e.status === 409
    );
    assert.equal(client.count('describe'), 2);
  });

  it('records a milestone and refreshes', async () => {
    const client = new FakeClient();
    client.runs.set('a.ipynb', description({ version: 7, milestones: [] }));
    const model = new RunModel(client);
    await model.setPath('a.ipynb');
    const result = await model.milestone('extraction-done');
    assert.equal(result.version, 8);
    assert.deepEqual(
      model.description?.milestones.map(m => m.name),
      ['extraction-done']
    );
  });

  it('refuses actions when no notebook is followed', async () => {
    const model = new RunModel(new FakeClient());
    await assert.rejects(model.milestone('x'), /no notebook is selected/);
  });

  it('polls while asked to and stops', async () => {
    const client = new FakeClient();
    const run = description({ version: 1 });
    client.runs.set('a.ipynb', run);
    const model = new RunModel(client);
    await model.setPath('a.ipynb');
    const changed = new Promise<void>(resolve => {
      model.stateChanged.connect(() => resolve());
    });
    model.startPolling(5);
    assert.equal(model.isPolling, true);
    run.version = 2;
    await changed;
    assert.equal(model.description?.version, 2);
    model.stopPolling();
    assert.equal(model.isPolling, false);
    const versions = client.count('version');
    await new Promise(resolve => setTimeout(resolve, 30));
    assert.equal(client.count('version'), versions);
    model.dispose();
    assert.equal(model.isDisposed, true);
  });

  it('holds one check after another on a live run, not one per interval', async () => {
    const client = new FakeClient();
    client.runs.set('a.ipynb', description({ version: 3 }));
    client.live.add('a.ipynb');
    const model = new RunModel(client);
    await model.setPath('a.ipynb');
    const before = client.count('version');
    model.startPolling(60_000); // the interval never comes within this test
    await new Promise(resolve => setTimeout(resolve, 1_500));
    const held = client.calls.filter(
      call => call.method === 'version' && call.args.length === 3
    );
    assert.ok(held.length >= 3, `${held.length} held checks`);
    assert.deepEqual(held[0].args, ['a.ipynb', '3', '20']);
    model.stopPolling();
    const after = client.count('version');
    assert.ok(after > before);
    await new Promise(resolve => setTimeout(resolve, 200));
    assert.equal(client.count('version'), after); // stopped: no chained check either
    model.dispose();
  });

  it('asks a run the server cannot wait on once per interval', async () => {
    const client = new FakeClient();
    client.runs.set('a.ipynb', description({ version: 3 }));
    const model = new RunModel(client);
    await model.setPath('a.ipynb');
    const before = client.count('version');
    model.startPolling(60_000);
    await new Promise(resolve => setTimeout(resolve, 300));
    assert.equal(client.count('version'), before + 1); // the first check only
    model.stopPolling();
    model.dispose();
  });

  it('keeps a notice until the notebook changes', async () => {
    const client = new FakeClient();
    client.runs.set('a.ipynb', description());
    const model = new RunModel(client);
    await model.setPath('a.ipynb');
    model.setNotice({ kind: 'success', title: 'Resumed', text: 'state draft' });
    await model.refresh();
    assert.equal(model.notice?.title, 'Resumed');
    await model.setPath('b.ipynb');
    assert.equal(model.notice, null);
  });
});
