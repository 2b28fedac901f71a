import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { parseDescription } from '../src/parse';
import {
  pendingSection,
  question,
  threadLines,
  threadSection
} from '../src/sections';
import { FakeElement, installFakeDocument } from './fakes';

const THREADS = [
  {
    thread_id: 'agent-1',
    checkpoint: 'cp-9',
    step: 4,
    source: 'loop',
    next: ['review', 'publish'],
    interrupts: [
      { id: 'int-1', node: 'review', value: '{"ask": "<b>ship it?</b>"}' }
    ],
    checkpoints: 6,
    updated_at: '2024-05-01T10:00:00+00:00'
  },
  {
    thread_id: 'agent-2',
    checkpoint: 'cp-1',
    step: null,
    source: null,
    next: [],
    interrupts: [],
    checkpoints: 1,
    updated_at: null
  }
];

describe('LangGraph threads', () => {
  it('parses threads, tolerating their absence and bad fields', () => {
    const run = parseDescription({
      v: 1,
      run_id: 'r',
      threads: [
        {
          thread_id: 't',
          step: 'three',
          next: ['a', 5],
          interrupts: [{ id: 'i', node: 7, value: 'why' }, 'junk'],
          checkpoints: 2
        },
        null
      ]
    });
    assert.equal(run.threads.length, 1);
    const t = run.threads[0];
    assert.equal(t.step, null);
    assert.deepEqual(t.next, ['a']);
    assert.deepEqual(t.interrupts, [{ id: 'i', node: '', value: 'why' }]);
    assert.equal(t.checkpoints, 2);
    assert.equal(t.updated_at, null);
    assert.deepEqual(parseDescription({ v: 1, run_id: 'r' }).threads, []);
    assert.deepEqual(
      parseDescription({ v: 1, run_id: 'r', threads: 'x' }).threads,
      []
    );
  });

  it('lists step, next nodes and interrupts waiting for approval', () => {
    const pending = [
      {
        id: 'int-1',
        gate: 'approve_agent-1_review',
        trigger: null,
        message: '',
        state: null,
        requested_seq: 3,
        requested_at: null
      }
    ];
    const lines = threadLines(THREADS, pending);
    assert.equal(lines.length, 2);
    assert.equal(lines[0].thread_id, 'agent-1');
    assert.equal(lines[0].title, 'checkpoint cp-9');
    assert.equal(
      lines[0].detail,
      'step 4 · next review, publish · 6 checkpoints'
    );
    assert.deepEqual(lines[0].interrupts, [
      { node: 'review', value: '{"ask": "<b>ship it?</b>"}', waiting: true }
    ]);
    assert.equal(lines[1].detail, 'finished · 1 checkpoint');
    assert.equal(threadLines(THREADS)[0].interrupts[0].waiting, false);
  });

  it('clips long interrupt values and shows no section without threads', () => {
    const long = [
      {
        ...THREADS[0],
        interrupts: [{ id: 'x', node: 'n', value: 'v'.repeat(500) }]
      }
    ];
    const value = threadLines(long)[0].interrupts[0].value;
    assert.ok(value.length <= 160);
    assert.ok(value.endsWith('…'));
    assert.equal(threadSection([]), null);
  });
});

describe('LangGraph thread section', () => {
  it('lists each thread with its interrupts as text', () => {
    installFakeDocument();
    const pending = [
      {
        id: 'int-1',
        gate: 'g',
        trigger: null,
        message: '',
        state: null,
        requested_seq: 1,
        requested_at: null
      }
    ];
    const node = threadSection(THREADS, pending) as unknown as FakeElement;
    assert.equal(node.dataset.section, 'threads');
    const threads = node.findAll(el => el.dataset.thread !== undefined);
    assert.deepEqual(
      threads.map(t => t.dataset.thread),
      ['agent-1', 'agent-2']
    );
    assert.match(
      threads[0].textContent,
      /interrupt in review .*<b>ship it\?<\/b>.* · waiting for approval/
    );
    assert.equal(threads[0].children[0].title, 'checkpoint cp-9');
  });
});

describe('pending approvals', () => {
  it('title a card with what the request asks, its fields below, the gate muted', () => {
    installFakeDocument();
    const handlers = { approve: () => undefined, reject: () => undefined };
    const node = pendingSection(
      [
        {
          id: 'a1',
          gate: 'langgraph:weekly-brief:review',
          trigger: null,
          message: 'send the brief?\npages: 3\n\nto: team',
          state: null,
          requested_seq: 4,
          requested_at: null
        },
        {
          id: 'a2',
          gate: 'sign_off',
          trigger: 'publish',
          message: '',
          state: 'review',
          requested_seq: 5,
          requested_at: null
        }
      ],
      handlers
    ) as unknown as FakeElement;
    const cards = node.findAll(el => el.className === 'jp-skillnb-card');
    assert.equal(cards.length, 2);
    const title = (card: FakeElement): string =>
      card.findAll(el => el.className === 'jp-skillnb-card-title')[0]
        .textContent;
    const muted = (card: FakeElement): string[] =>
      card
        .findAll(el => el.className === 'jp-skillnb-muted')
        .map(el => el.textContent);
    assert.equal(title(cards[0]), 'send the brief?');
    assert.equal(muted(cards[0])[0], 'gate langgraph:weekly-brief:review');
    const body = cards[0].findAll(el => el.className === 'jp-skillnb-message');
    assert.equal(body[0].textContent, 'pages: 3\nto: team');
    assert.equal(title(cards[1]), 'sign_off');
    assert.equal(muted(cards[1])[0], 'for publish in review');
    assert.equal(
      cards[1].findAll(el => el.className === 'jp-skillnb-message').length,
      0
    );
  });

  it('splits a question like the kernel does', () => {
    assert.deepEqual(question(''), ['', []]);
    assert.deepEqual(question('ok?'), ['ok?', []]);
    assert.deepEqual(question('\nok?\n a: 1\n'), ['ok?', [' a: 1']]);
  });
});
