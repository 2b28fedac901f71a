/**
 * "Waiting for you": the open approval requests and follow-ups across the server's root
 * (and its team store), oldest first, with Approve/Reject in place. The model only holds
 * what the server answered; the section only renders it. Every text from a run goes through
 * `textContent` (`h`), never HTML.
 */
import { Signal, type ISignal } from '@lumino/signaling';

import { clip, h, when } from './dom';
import { mark } from './marks';
import { isObject } from './parse';
import type { IInboxItem, IInboxView, IRunRow } from './types';

/** What the inbox needs from the server (`ServerRunClient` implements it). */
export interface IInboxClient {
  /** `GET /skillnb/api/inbox`. */
  inbox(): Promise<IInboxView>;
  /** `POST /skillnb/api/inbox/decide`: approve or reject `item` in place. */
  decideInbox(item: IInboxItem, verdict: 'approve' | 'reject'): Promise<number>;
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function textOrNull(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function source(value: unknown): 'folder' | 'store' {
  return value === 'store' ? 'store' : 'folder';
}

function words(value: unknown): string[] {
  return Array.isArray(value)
    ? value.filter((w): w is string => typeof w === 'string')
    : [];
}

/** Read an inbox answer defensively: every field checked, unknown ones dropped. */
export function parseInbox(value: unknown): IInboxView {
  const body = isObject(value) ? value : {};
  const items: IInboxItem[] = (Array.isArray(body.items) ? body.items : [])
    .filter(isObject)
    .map(item => ({
      kind: item.kind === 'follow_up' ? 'follow_up' : 'approval',
      run: text(item.run),
      source: source(item.source),
      id: text(item.id),
      gate: text(item.gate),
      message: text(item.message),
      asked_by: textOrNull(item.asked_by),
      state: textOrNull(item.state),
      since: textOrNull(item.since),
      commands: words(item.commands)
    }));
  const problems: IRunRow[] = (
    Array.isArray(body.problems) ? body.problems : []
  )
    .filter(isObject)
    .map(row => ({
      name: text(row.name),
      source: source(row.source),
      target: words(row.target),
      problem: textOrNull(row.problem) ?? 'unreadable'
    }));
  return { items, problems };
}

/** The inbox as last read from the server; `changed` fires when it changes. */
export class InboxModel {
  constructor(client: IInboxClient) {
    this._client = client;
  }

  /** Emitted after every read or decision. */
  get changed(): ISignal<InboxModel, void> {
    return this._changed;
  }

  /** The last answer (`null` before the first). */
  get view(): IInboxView | null {
    return this._view;
  }

  /** Why the last read or decision failed, if it did. */
  get error(): string | null {
    return this._error;
  }

  /** Read the inbox again. */
  async refresh(): Promise<void> {
    try {
      this._view = await this._client.inbox();
      this._error = null;
    } catch (reason) {
      this._error = `The inbox could not be read: ${errorMessage(reason)}`;
    }
    this._changed.emit();
  }

  /** Approve or reject `item`, then read the inbox again. */
  async decide(item: IInboxItem, verdict: 'approve' | 'reject'): Promise<void> {
    try {
      await this._client.decideInbox(item, verdict);
    } catch (reason) {
      this._error = `${verdict === 'approve' ? 'Approving' : 'Rejecting'} ${item.gate} failed: ${errorMessage(reason)}`;
      this._changed.emit();
      return;
    }
    await this.refresh();
  }

  private readonly _client: IInboxClient;
  private readonly _changed = new Signal<InboxModel, void>(this);
  private _view: IInboxView | null = null;
  private _error: string | null = null;
}

function errorMessage(reason: unknown): string {
  return reason instanceof Error ? reason.message : String(reason);
}

function itemNode(
  item: IInboxItem,
  decide: (item: IInboxItem, verdict: 'approve' | 'reject') => void
): HTMLElement {
  const what = item.kind === 'approval' ? 'approve' : 'follow up';
  const asked = [
    item.asked_by ? `asked by ${item.asked_by}` : '',
    item.state ? `in ${item.state}` : '',
    item.since ? `since ${when(item.since)}` : ''
  ]
    .filter(Boolean)
    .join(' · ');
  const buttons: HTMLElement[] = [];
  if (item.kind === 'approval') {
    for (const verdict of ['approve', 'reject'] as const) {
      const button = h('button', {
        className: `jp-mod-styled jp-skillnb-inbox-${verdict}`,
        text: verdict === 'approve' ? 'Approve' : 'Reject',
        title: `${verdict === 'approve' ? 'Approve' : 'Reject'} ${item.gate} in ${item.run}`,
        attrs: {
          'aria-label': `${verdict === 'approve' ? 'Approve' : 'Reject'} ${item.gate} in ${item.run}`
        }
      });
      button.addEventListener('click', () => {
        button.disabled = true;
        decide(item, verdict);
      });
      buttons.push(button);
    }
  }
  const command = item.commands[0] ?? '';
  return h(
    'li',
    {
      className: 'jp-skillnb-inbox-item',
      data: { run: item.run, gate: item.gate, kind: item.kind }
    },
    [
      h('div', { className: 'jp-skillnb-inbox-head' }, [
        h('span', { className: 'jp-skillnb-mark', text: mark('waiting') }),
        h('span', { className: 'jp-skillnb-inbox-run', text: item.run }),
        h('span', { text: ` · ${what} ${item.gate}` })
      ]),
      h('div', {
        className: 'jp-skillnb-inbox-message',
        text: clip(item.message, 300)
      }),
      h('div', { className: 'jp-skillnb-muted', text: asked }),
      buttons.length
        ? h('div', { className: 'jp-skillnb-inbox-actions' }, buttons)
        : h('code', { className: 'jp-skillnb-inbox-command', text: command })
    ]
  );
}

/** The "Waiting for you" section (`null` when nothing waits and nothing failed). */
export function inboxSection(model: InboxModel): HTMLElement | null {
  const view = model.view;
  const items = view?.items ?? [];
  const problems = view?.problems ?? [];
  if (!items.length && !problems.length && model.error === null) {
    return null;
  }
  const decide = (item: IInboxItem, verdict: 'approve' | 'reject'): void =>
    void model.decide(item, verdict);
  return h('section', { className: 'jp-skillnb-section jp-skillnb-inbox' }, [
    h('h3', { text: `Waiting for you (${items.length})` }),
    model.error === null
      ? null
      : h('div', { className: 'jp-skillnb-error', text: model.error }),
    h(
      'ul',
      { className: 'jp-skillnb-inbox-list' },
      items.map(item => itemNode(item, decide))
    ),
    ...problems.map(row =>
      h('div', {
        className: 'jp-skillnb-inbox-problem jp-skillnb-muted',
        text: `? ${row.name}: ${row.problem ?? 'unreadable'}`
      })
    )
  ]);
}
