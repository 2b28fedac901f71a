/**
 * The "SKILL.nb" side panel: renders the `RunModel` of the current notebook. It only
 * renders; approvals go through the handlers it is given and polling runs while the panel
 * is visible.
 */
import type { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { h } from './dom';
import { inboxSection, type InboxModel } from './inbox';
import type { KeepSuggestions } from './keep';
import type { INotice, RunModel } from './model';
import {
  batchSection,
  factSection,
  historySection,
  keepSection,
  keyIdSection,
  milestoneSection,
  nextSection,
  pendingSection,
  reportSection,
  runSection,
  threadSection,
  uncertainSection,
  followUpSection,
  type IApprovalHandlers
} from './sections';
import { PANEL_ID, POLL_INTERVAL_MS } from './tokens';
import type { ICopyOf, ISuggestion } from './types';

/** How many lines of a notice (e.g. the Resume summary) show before "show all". */
export const NOTICE_LINES = 8;

/** What the panel's buttons do. */
export interface IRunPanelHandlers extends IApprovalHandlers {
  refresh(): void;
  /** Keep a suggestion of the notebook at `path` (its Keep button). */
  keep?(path: string, suggestion: ISuggestion): Promise<boolean>;
}

/** The side panel widget. */
export class RunPanel extends Widget {
  /**
   * @param model the run of the current notebook
   * @param handlers what Approve, Reject and Refresh do
   * @param pollIntervalMs how often to check the run's version while visible
   * @param suggestions the kernel's keep-suggestions per notebook, shown as "Keep?"
   * @param inbox what waits across the server's root, shown as "Waiting for you"
   */
  constructor(
    model: RunModel,
    handlers: IRunPanelHandlers,
    pollIntervalMs: number = POLL_INTERVAL_MS,
    suggestions: KeepSuggestions | null = null,
    inbox: InboxModel | null = null
  ) {
    super();
    this.id = PANEL_ID;
    this.addClass('jp-skillnb-panel');
    this.title.caption = 'SKILL.nb';
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', 'SKILL.nb run');
    this._model = model;
    this._handlers = handlers;
    this._pollIntervalMs = pollIntervalMs;
    this._suggestions = suggestions;
    this._inbox = inbox;
    model.stateChanged.connect(this._render, this);
    suggestions?.changed.connect(this._onSuggestions, this);
    inbox?.changed.connect(this._render, this);
    this._render();
  }

  /** The model rendered. */
  get model(): RunModel {
    return this._model;
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this._model.refresh();
    void this._inbox?.refresh();
    this._model.startPolling(this._pollIntervalMs);
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this._model.stopPolling();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._model.stateChanged.disconnect(this._render, this);
    this._suggestions?.changed.disconnect(this._onSuggestions, this);
    this._inbox?.changed.disconnect(this._render, this);
    this._model.stopPolling();
    super.dispose();
  }

  private _onSuggestions(_sender: KeepSuggestions, path: string): void {
    if (path === this._model.path) {
      this._render();
    }
  }

  private _keep(): HTMLElement | null {
    const path = this._model.path;
    const keep = this._handlers.keep;
    if (path === null || keep === undefined || this._suggestions === null) {
      return null;
    }
    return keepSection(this._suggestions.get(path), item => keep(path, item));
  }

  private _render(): void {
    const model = this._model;
    const refresh = h('button', {
      className: 'jp-mod-styled jp-skillnb-refresh',
      text: 'Refresh',
      title: 'Read the run again from its sidecar'
    });
    refresh.addEventListener('click', () => {
      this._handlers.refresh();
      void this._inbox?.refresh();
    });
    const header = h('header', { className: 'jp-skillnb-header' }, [
      h('h2', {
        className: 'jp-skillnb-title',
        text: 'SKILL.nb',
        attrs: { tabindex: '-1' } // where focus goes when the control it was on is gone
      }),
      refresh
    ]);
    const path = model.path
      ? h('div', {
          className: 'jp-skillnb-path jp-skillnb-muted',
          text: model.path
        })
      : null;
    const notice = this._notice();
    const inbox = this._inbox === null ? null : inboxSection(this._inbox);
    this.node.dataset.status = model.status;
    const focused = focusedControl(this.node);
    this.node.replaceChildren(
      ...[header, inbox, path, notice, ...this._body()].filter(
        (n): n is HTMLElement => n !== null
      )
    );
    if (focused !== null) {
      refocus(this.node, focused);
    }
  }

  private _notice(): HTMLElement | null {
    const notice = this._model.notice;
    if (notice === null) {
      return null;
    }
    const close = h('button', {
      className: 'jp-skillnb-notice-close',
      text: '×',
      title: 'Dismiss'
    });
    close.addEventListener('click', () => this._model.setNotice(null));
    const output = notice.text ? this._noticeText(notice) : null;
    return h(
      'div',
      { className: `jp-skillnb-notice jp-skillnb-notice-${notice.kind}` },
      [
        h('div', { className: 'jp-skillnb-notice-head' }, [
          h('span', {
            className: 'jp-skillnb-notice-title',
            text: notice.title
          }),
          close
        ]),
        output
      ]
    );
  }

  /** The notice's text: its first lines, and a "show all" button when there are more. */
  private _noticeText(notice: INotice): HTMLElement {
    const text = notice.text;
    const lines = text.split('\n');
    const pre = h('pre', { className: 'jp-skillnb-notice-text' });
    const compact = this._expanded !== notice && lines.length > NOTICE_LINES;
    pre.textContent = compact ? lines.slice(0, NOTICE_LINES).join('\n') : text;
    if (lines.length <= NOTICE_LINES) {
      return pre;
    }
    const toggle = h('button', {
      className: 'jp-skillnb-link jp-skillnb-notice-toggle',
      text: compact ? `show all (${lines.length} lines)` : 'show less'
    });
    toggle.addEventListener('click', () => {
      this._expanded = compact ? notice : null;
      this._render();
    });
    return h('div', { className: 'jp-skillnb-notice-body' }, [pre, toggle]);
  }

  private _body(): (HTMLElement | null)[] {
    const model = this._model;
    const message = (
      text: string,
      className = 'jp-skillnb-empty'
    ): HTMLElement[] => [h('div', { className, text })];
    switch (model.status) {
      case 'empty':
        return message('Open a notebook to see its SKILL.nb run.');
      case 'loading':
        return message('Loading the run…');
      case 'missing':
        return [
          h('div', { className: 'jp-skillnb-empty jp-skillnb-missing' }, [
            h('div', { text: 'This notebook has no SKILL.nb run yet.' }),
            h('div', {
              className: 'jp-skillnb-muted',
              text: 'Run %load_ext skillnb in it and formalize a first fact (%%formalize KEY).'
            })
          ]),
          this._keep()
        ];
      case 'copied':
        return model.copyOf === null ? [] : [copiedNotice(model.copyOf)];
      case 'error':
        return message(
          model.error ?? 'The run could not be read.',
          'jp-skillnb-error'
        );
      case 'ready':
        break;
    }
    const run = model.description;
    if (run === null) {
      return [];
    }
    const pendingGates = new Set(run.pending.map(item => item.gate));
    return [
      runSection(run),
      pendingSection(run.pending, this._handlers),
      nextSection(run.next, pendingGates),
      this._keep(),
      followUpSection(run.follow_ups),
      uncertainSection(run.uncertain),
      threadSection(run.threads, run.pending),
      batchSection(run.batches),
      factSection(run.facts),
      reportSection(run.last_report, pendingGates),
      milestoneSection(run.milestones),
      keyIdSection(run.key_ids),
      historySection(run.history)
    ];
  }

  private readonly _model: RunModel;
  private readonly _handlers: IRunPanelHandlers;
  private readonly _pollIntervalMs: number;
  private readonly _suggestions: KeepSuggestions | null;
  private readonly _inbox: InboxModel | null;
  /** The notice shown in full (a new notice starts compact). */
  private _expanded: INotice | null = null;
}

/** Which control of the panel has focus: its first class and its `data-gate`/`data-name`. */
interface IFocusedControl {
  kind: string;
  gate: string;
  name: string;
}

function focusedControl(panel: HTMLElement): IFocusedControl | null {
  const active = document.activeElement;
  if (!(active instanceof HTMLElement) || !panel.contains(active)) {
    return null;
  }
  const kind =
    [...active.classList].find(c => c.startsWith('jp-skillnb-')) ?? '';
  return {
    kind,
    gate: active.dataset.gate ?? '',
    name: active.dataset.name ?? ''
  };
}

/**
 * Put focus back after the panel drew itself again: on the same control when it is still
 * there, else on the next request's Approve button, else on the panel's title, never on
 * `<body>`.
 */
function refocus(panel: HTMLElement, was: IFocusedControl): void {
  const same = was.kind
    ? [...panel.querySelectorAll<HTMLElement>(`.${was.kind}`)].find(
        el =>
          (el.dataset.gate ?? '') === was.gate &&
          (el.dataset.name ?? '') === was.name
      )
    : undefined;
  const next =
    same ??
    panel.querySelector<HTMLElement>('.jp-skillnb-approve') ??
    panel.querySelector<HTMLElement>('.jp-skillnb-title');
  next?.focus({ preventScroll: true });
}

/**
 * A copy of a notebook holding its run: what its views show, and the two ways on.
 *
 * Everything said comes from the server (`copy_of`, built by the kernel's own test).
 */
export function copiedNotice(copy: ICopyOf): HTMLElement {
  const code = (command: string): HTMLElement =>
    h('code', { className: 'jp-skillnb-copy-command', text: command });
  const text = (words: string): Node => document.createTextNode(words);
  return h(
    'div',
    {
      className: 'jp-skillnb-empty jp-skillnb-copied',
      attrs: { role: 'note' },
      data: { skillnbOriginal: copy.original }
    },
    [
      h('div', { className: 'jp-skillnb-copied-what', text: `${copy.text}.` }),
      h('div', {
        className: 'jp-skillnb-muted',
        text: `This notebook has no run of its own (run ${copy.run_id} is ${copy.original}'s), and nothing is recorded until you choose:`
      }),
      h('ul', { className: 'jp-skillnb-copy-ways' }, [
        h('li', {}, [
          text('go on with a copy of its run: '),
          code(copy.fork_from),
          text(' in this notebook, or '),
          code(copy.fork),
          text(' in a terminal;')
        ]),
        h('li', {}, [
          text('or start fresh, a run of its own: '),
          code(copy.new_run),
          text(' in this notebook.')
        ])
      ])
    ]
  );
}
