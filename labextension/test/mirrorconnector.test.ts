import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import type { NotebookPanel } from '@jupyterlab/notebook';
import { Signal } from '@lumino/signaling';

import { KeepSuggestions } from '../src/keep';
import type { IMirrorChange } from '../src/mirror';
import { NotebookMirror } from '../src/mirrorconnector';
import { COMM_TARGET, MIME_TYPE } from '../src/tokens';
import { Holder } from './fakes';

type CommOpen = (
  comm: { onMsg: ((msg: unknown) => void) | null },
  msg: { content: { data: unknown } }
) => void;

class FakeKernel {
  isDisposed = false;
  targets = new Map<string, CommOpen>();
  statusChanged = new Signal<this, string>(this);
  registerCommTarget(name: string, callback: CommOpen): void {
    this.targets.set(name, callback);
  }
  removeCommTarget(name: string, callback: CommOpen): void {
    if (this.targets.get(name) === callback) {
      this.targets.delete(name);
    }
  }
  /** What the kernel does: open a comm with data, then send more messages on it. */
  open(data: unknown): (next: unknown) => void {
    const comm: { onMsg: ((msg: unknown) => void) | null } = { onMsg: null };
    const target = this.targets.get(COMM_TARGET);
    assert.ok(target, 'the comm target is registered');
    target(comm, { content: { data } });
    return next => comm.onMsg?.({ content: { data: next } });
  }
}

class FakeCell extends Holder {
  outputsChanged = new Signal<
    object,
    { type: string; newValues: { data: object; metadata: object }[] }
  >(this);
  constructor(
    readonly id: string,
    readonly type: string
  ) {
    super();
  }
  get outputs() {
    return { changed: this.outputsChanged };
  }
}

class FakeModel extends Holder {
  cellList: FakeCell[] = [];
  cellsChanged = new Signal<object, { type: string; newValues: FakeCell[] }>(
    this
  );
  get cells() {
    const list = this.cellList;
    return {
      changed: this.cellsChanged,
      [Symbol.iterator]: () => list[Symbol.iterator]()
    };
  }
}

function fakePanel(model: FakeModel, kernel: FakeKernel | null) {
  const kernelChanged = new Signal<object, { newValue: FakeKernel | null }>({});
  const disposed = new Signal<object, void>({});
  const panel = {
    isDisposed: false,
    disposed,
    content: { model },
    context: { path: 'dir/report.ipynb', ready: Promise.resolve() },
    sessionContext: {
      kernelChanged,
      session: kernel === null ? null : { kernel }
    }
  };
  return { panel: panel as unknown as NotebookPanel, kernelChanged, disposed };
}

const MIRROR = { v: 1, run_id: 'r1', state: 'review', version: 9, facts: {} };

describe('NotebookMirror', () => {
  it('applies comm messages to the notebook and the named cell', async () => {
    const model = new FakeModel();
    const cell = new FakeCell('c2', 'code');
    model.cellList.push(new FakeCell('c1', 'markdown'), cell);
    const kernel = new FakeKernel();
    const activity: [string, IMirrorChange][] = [];
    new NotebookMirror(fakePanel(model, kernel).panel, (path, change) =>
      activity.push([path, change])
    );
    const send = kernel.open({
      v: 1,
      notebook: MIRROR,
      cell_id: null,
      cell: null
    });
    assert.deepEqual(model.metadata.skillnb, MIRROR);
    send({
      v: 1,
      notebook: { ...MIRROR, version: 10 },
      cell_id: 'c2',
      cell: { step: 'budget' }
    });
    assert.deepEqual(cell.metadata.skillnb, { step: 'budget' });
    assert.equal((model.metadata.skillnb as { version: number }).version, 10);
    assert.deepEqual(activity, [
      ['dir/report.ipynb', { notebook: true, cell: false }],
      ['dir/report.ipynb', { notebook: true, cell: true }]
    ]);
  });

  it('hands the suggestions a comm message carries to the panel', () => {
    const model = new FakeModel();
    const kernel = new FakeKernel();
    const store = new KeepSuggestions();
    new NotebookMirror(
      fakePanel(model, kernel).panel,
      () => undefined,
      (path, found) => store.replace(path, found)
    );
    const send = kernel.open({
      v: 1,
      notebook: MIRROR,
      cell_id: null,
      cell: null
    });
    assert.deepEqual(store.get('dir/report.ipynb'), []);
    const budget = {
      name: 'budget',
      kind: 'decision',
      score: 0.9,
      reason: 'r'
    };
    send({
      v: 1,
      notebook: null,
      cell: null,
      cell_id: 'c2',
      suggestions: [budget]
    });
    assert.deepEqual(store.get('dir/report.ipynb'), [budget]);
    send({
      v: 1,
      notebook: { ...MIRROR, version: 11 },
      cell_id: null,
      cell: null
    });
    assert.deepEqual(store.get('dir/report.ipynb'), [budget]); // no suggestions field
    send({ v: 1, notebook: null, cell: null, cell_id: 'c3', suggestions: [] });
    assert.deepEqual(store.get('dir/report.ipynb'), []);
  });

  it('drops the suggestions when the kernel restarts, dies or is replaced', () => {
    const model = new FakeModel();
    const kernel = new FakeKernel();
    const store = new KeepSuggestions();
    const { panel, kernelChanged } = fakePanel(model, kernel);
    new NotebookMirror(
      panel,
      () => undefined,
      (path, found) => store.replace(path, found)
    );
    const budget = {
      name: 'budget',
      kind: 'decision',
      score: 0.9,
      reason: 'r'
    };
    const offer = { v: 1, notebook: null, cell: null, cell_id: 'c2' };
    const send = kernel.open({ ...offer, suggestions: [budget] });
    assert.deepEqual(store.get('dir/report.ipynb'), [budget]);
    kernel.statusChanged.emit('busy');
    assert.deepEqual(store.get('dir/report.ipynb'), [budget]);
    kernel.statusChanged.emit('restarting');
    assert.deepEqual(store.get('dir/report.ipynb'), []);
    send({ ...offer, suggestions: [budget] });
    kernel.statusChanged.emit('dead');
    assert.deepEqual(store.get('dir/report.ipynb'), []);
    send({ ...offer, suggestions: [budget] });
    const second = new FakeKernel();
    kernelChanged.emit({ newValue: second });
    assert.deepEqual(store.get('dir/report.ipynb'), []);
    kernel.statusChanged.emit('restarting'); // the old kernel is no longer followed
    second.open({ ...offer, suggestions: [budget] });
    kernel.statusChanged.emit('dead');
    assert.deepEqual(store.get('dir/report.ipynb'), [budget]);
  });

  it('moves the comm target to a new kernel', () => {
    const model = new FakeModel();
    const first = new FakeKernel();
    const second = new FakeKernel();
    const { panel, kernelChanged, disposed } = fakePanel(model, first);
    new NotebookMirror(panel, () => undefined);
    kernelChanged.emit({ newValue: second });
    assert.equal(first.targets.has(COMM_TARGET), false);
    assert.equal(second.targets.has(COMM_TARGET), true);
    second.open({ v: 1, notebook: MIRROR, cell_id: null, cell: null });
    assert.deepEqual(model.metadata.skillnb, MIRROR);
    disposed.emit();
    assert.equal(second.targets.has(COMM_TARGET), false);
  });

  it('reads the mirror of skillnb outputs as they arrive, in old and new cells', async () => {
    const model = new FakeModel();
    const old = new FakeCell('c1', 'code');
    model.cellList.push(old);
    new NotebookMirror(fakePanel(model, null).panel, () => undefined);
    await Promise.resolve(); // context.ready
    await Promise.resolve();
    const bundle = (cell: object) => ({
      data: {
        'text/plain': 'budget v1',
        [MIME_TYPE]: {
          v: 1,
          kind: 'formalize',
          badge: 'budget v1',
          status: 'ok'
        }
      },
      metadata: {
        [MIME_TYPE]: { v: 1, run_id: 'r1', mirror: { notebook: MIRROR, cell } }
      }
    });
    old.outputsChanged.emit({
      type: 'add',
      newValues: [bundle({ step: 'budget', version: 1 })]
    });
    assert.deepEqual(old.metadata.skillnb, { step: 'budget', version: 1 });
    assert.deepEqual(model.metadata.skillnb, MIRROR);

    const added = new FakeCell('c2', 'code');
    model.cellList.push(added);
    model.cellsChanged.emit({ type: 'add', newValues: [added] });
    added.outputsChanged.emit({
      type: 'add',
      newValues: [bundle({ gate: 'publish' })]
    });
    assert.deepEqual(added.metadata.skillnb, { gate: 'publish' });

    added.outputsChanged.emit({
      type: 'remove',
      newValues: [bundle({ gate: 'other' })]
    });
    added.outputsChanged.emit({
      type: 'add',
      newValues: [{ data: { 'text/plain': '3' }, metadata: {} }]
    });
    assert.deepEqual(added.metadata.skillnb, { gate: 'publish' });
  });
});
