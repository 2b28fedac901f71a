import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  InboxModel,
  inboxSection,
  parseInbox,
  type IInboxClient
} from '../src/inbox';
import type { IInboxItem, IInboxView } from '../src/types';
import { FakeElement, installFakeDocument } from './fakes';

const ITEM: IInboxItem = {
  kind: 'approval',
  run: 'reports/weekly.ipynb',
  source: 'folder',
  id: 'a1',
  gate: 'sign_off',
  message: '<img src=x onerror=alert(1)> Publish?',
  asked_by: 'publish',
  state: 'review',
  since: '2026-12-01T10:00:00+00:00',
  commands: ['skillnb approve reports/weekly.ipynb sign_off --by NAME']
};

class FakeInbox implements IInboxClient {
  view: IInboxView = { items: [ITEM], problems: [] };
  decided: [string, string][] = [];

  async inbox(): Promise<IInboxView> {
    return this.view;
  }

  async decideInbox(
    item: IInboxItem,
    verdict: 'approve' | 'reject'
  ): Promise<number> {
    this.decided.push([item.run, verdict]);
    this.view = { items: [], problems: [] };
    return 7;
  }
}

describe('inbox', () => {
  it('parses defensively', () => {
    const view = parseInbox({
      items: [{ ...ITEM, kind: 'odd', source: 7, commands: ['a', 3] }, 'junk'],
      problems: [{ name: 'bad.ipynb', source: 'store', problem: null }]
    });
    assert.equal(view.items.length, 1);
    assert.equal(view.items[0].kind, 'approval');
    assert.equal(view.items[0].source, 'folder');
    assert.deepEqual(view.items[0].commands, ['a']);
    assert.deepEqual(view.problems[0].problem, 'unreadable');
    assert.deepEqual(parseInbox(null), { items: [], problems: [] });
  });

  it('shows what waits as text and approves in place', async () => {
    installFakeDocument();
    const client = new FakeInbox();
    client.view = {
      items: [ITEM],
      problems: [
        { name: 'bad.ipynb', source: 'folder', target: [], problem: 'damaged' }
      ]
    };
    const model = new InboxModel(client);
    assert.equal(inboxSection(model), null);
    await model.refresh();
    const node = inboxSection(model) as unknown as FakeElement;
    assert.match(node.textContent, /Waiting for you \(1\)/);
    assert.match(node.textContent, /<img src=x onerror=alert\(1\)> Publish\?/);
    assert.equal(node.findAll(el => el.tagName === 'img').length, 0);
    assert.match(node.textContent, /\? bad\.ipynb: damaged/);
    const [approve] = node.findAll(el =>
      el.className.includes('jp-skillnb-inbox-approve')
    );
    let changed = 0;
    model.changed.connect(() => (changed += 1));
    approve.click();
    await new Promise(resolve => setTimeout(resolve, 0));
    assert.deepEqual(client.decided, [['reports/weekly.ipynb', 'approve']]);
    assert.ok(changed >= 1);
    assert.equal(inboxSection(model), null);
  });

  it('says when a decision failed', async () => {
    const client = new FakeInbox();
    client.decideInbox = async () => {
      throw new Error('conflict');
    };
    const model = new InboxModel(client);
    await model.refresh();
    await model.decide(ITEM, 'reject');
    assert.equal(model.error, 'Rejecting sign_off failed: conflict');
  });
});
