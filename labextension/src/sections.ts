/**
 * The side panel's sections, one builder per part of `run.describe()`. Pure rendering:
 * each function takes data and returns DOM; buttons call the handlers they are given.
 */
import { breakable, clip, coded, h, when } from './dom';
import { gateReason, mark, resultStatus } from './marks';
import { objectLines } from './values';
import type {
  IBatchView,
  IFactView,
  IFollowUp,
  IGateReportView,
  IGateView,
  IGraphThread,
  IHistoryEntry,
  IMilestoneView,
  INextTrigger,
  IPendingApproval,
  IRunDescription,
  ISuggestion,
  IUncertainStep
} from './types';

/** What the pending-approval buttons do. */
export interface IApprovalHandlers {
  approve(pending: IPendingApproval): void;
  reject(pending: IPendingApproval): void;
}

const PREVIEW_CHARS = 160;

function section(
  name: string,
  title: string,
  body: ReadonlyArray<Node | null>
): HTMLElement {
  return h(
    'section',
    { className: 'jp-skillnb-section', data: { section: name } },
    [h('h3', { className: 'jp-skillnb-section-title', text: title }), ...body]
  );
}

function gateLine(
  gate: IGateView,
  pendingGates: ReadonlySet<string> = new Set()
): HTMLElement {
  const status = resultStatus(gate, pendingGates);
  const message = gateReason(gate, pendingGates);
  return h('li', { className: `jp-skillnb-gate jp-skillnb-gate-${status}` }, [
    h('span', {
      className: 'jp-skillnb-gate-mark',
      text: mark(status)
    }),
    h('span', { className: 'jp-skillnb-gate-name', text: gate.gate }),
    h('span', {
      className: 'jp-skillnb-muted',
      text: ` ${gate.kind}, ${gate.severity}`
    }),
    message
      ? h('div', { className: 'jp-skillnb-gate-message' }, coded(message))
      : null
  ]);
}

/** Current state, workflow, version and the states of the machine. */
export function runSection(run: IRunDescription): HTMLElement {
  const visited = new Set(run.visited);
  const chips = run.states.map(state => {
    let className = 'jp-skillnb-chip';
    if (state === run.state) {
      className += ' jp-skillnb-chip-current';
    } else if (visited.has(state)) {
      className += ' jp-skillnb-chip-visited';
    }
    return h('span', { className, text: state });
  });
  return section('run', 'Run', [
    h(
      'div',
      { className: 'jp-skillnb-state', data: { state: run.state ?? '' } },
      [
        h('span', { className: 'jp-skillnb-muted', text: 'state ' }),
        h('strong', {
          className: 'jp-skillnb-state-name',
          text: run.state ?? '(no workflow)'
        })
      ]
    ),
    h('div', {
      className: 'jp-skillnb-muted',
      text:
        `${run.workflow ? `workflow ${run.workflow} · ` : ''}version ${run.version}` +
        (run.profile !== 'default' ? ` · profile ${run.profile}` : '') +
        (run.updated_at ? ` · updated ${when(run.updated_at)}` : '')
    }),
    chips.length ? h('div', { className: 'jp-skillnb-chips' }, chips) : null
  ]);
}

/**
 * A request's text as its question (the first line) and its `key: value` lines, as the
 * kernel's views show it (`skillnb.core.views.viewtext.question`): a LangGraph interrupt's message
 * is its question, then one line per field.
 */
export function question(text: string): [string, string[]] {
  const lines = text.split(/\r?\n|\r/).filter(line => line.trim() !== '');
  return [lines[0] ?? '', lines.slice(1)];
}

/**
 * Pending approvals with Approve and Reject buttons: each card's title is what the request
 * asks (the gate's name when it asks nothing), then its gate, fields and time.
 */
export function pendingSection(
  pending: IPendingApproval[],
  handlers: IApprovalHandlers
): HTMLElement | null {
  if (!pending.length) {
    return null;
  }
  const cards = pending.map(item => {
    const approve = h('button', {
      className: 'jp-mod-styled jp-mod-accept jp-skillnb-approve',
      text: 'Approve',
      data: { gate: item.gate },
      attrs: { 'aria-label': `Approve ${item.gate}` }
    });
    approve.addEventListener('click', () => handlers.approve(item));
    const reject = h('button', {
      className: 'jp-mod-styled jp-mod-warn jp-skillnb-reject',
      text: 'Reject',
      data: { gate: item.gate },
      attrs: { 'aria-label': `Reject ${item.gate}` }
    });
    reject.addEventListener('click', () => handlers.reject(item));
    const [title, fields] = question(item.message);
    const where = [
      title ? `gate ${item.gate}` : '',
      item.trigger ? `for ${item.trigger}` : '',
      item.state ? `in ${item.state}` : ''
    ]
      .filter(Boolean)
      .join(' ');
    return h(
      'div',
      { className: 'jp-skillnb-card', data: { gate: item.gate } },
      [
        h('div', {
          className: 'jp-skillnb-card-title',
          text: title || item.gate
        }),
        where ? h('div', { className: 'jp-skillnb-muted', text: where }) : null,
        fields.length
          ? h('div', {
              className: 'jp-skillnb-message',
              text: fields.join('\n')
            })
          : null,
        h('div', {
          className: 'jp-skillnb-muted',
          text: when(item.requested_at)
        }),
        h('div', { className: 'jp-skillnb-buttons' }, [approve, reject])
      ]
    );
  });
  return section('pending', `Pending approvals (${pending.length})`, cards);
}

/** Triggers allowed from the current state, with gate status. */
export function nextSection(
  next: INextTrigger[],
  pendingGates: ReadonlySet<string> = new Set()
): HTMLElement | null {
  if (!next.length) {
    return null;
  }
  const items = next.map(trigger =>
    h(
      'li',
      { className: 'jp-skillnb-trigger', data: { trigger: trigger.trigger } },
      [
        h('span', {
          className: `jp-skillnb-status jp-skillnb-status-${trigger.status}`,
          text: `${mark(trigger.status)} ${trigger.status}`
        }),
        h('span', {
          className: 'jp-skillnb-trigger-name',
          text: ` ${trigger.trigger}`
        }),
        h('span', { className: 'jp-skillnb-muted', text: ` → ${trigger.to}` }),
        trigger.gates.length
          ? h(
              'ul',
              { className: 'jp-skillnb-gates' },
              trigger.gates.map(gate => gateLine(gate, pendingGates))
            )
          : null
      ]
    )
  );
  return section('next', 'Next', [
    h('ul', { className: 'jp-skillnb-list' }, items)
  ]);
}

/** Follow-ups that warning gates left, open until resolved. */
export function followUpSection(followUps: IFollowUp[]): HTMLElement | null {
  if (!followUps.length) {
    return null;
  }
  const items = followUps.map(item =>
    h('li', { className: 'jp-skillnb-follow-up' }, [
      h('strong', { text: clip(item.text, PREVIEW_CHARS) }),
      h('div', {
        className: 'jp-skillnb-muted',
        text: `gate ${item.gate} warned in ${item.state ?? '?'}: ${clip(item.reason, PREVIEW_CHARS)}`
      }),
      h('div', {
        className: 'jp-skillnb-muted',
        text: `resolve with %skillnb resolve ${item.gate}`
      })
    ])
  );
  return section('follow-ups', `Follow-ups (${followUps.length})`, [
    h('ul', { className: 'jp-skillnb-list' }, items)
  ]);
}

/** Steps that started and never committed. */
export function uncertainSection(steps: IUncertainStep[]): HTMLElement | null {
  if (!steps.length) {
    return null;
  }
  const items = steps.map(step =>
    h('li', { text: `${step.key} (started at v${step.started_seq})` })
  );
  return section('uncertain', 'Uncertain steps', [
    h('div', {
      className: 'jp-skillnb-muted',
      text: 'Started and never committed: check their effects before running them again.'
    }),
    h('ul', { className: 'jp-skillnb-list' }, items)
  ]);
}

/** Batch progress bars. */
export function batchSection(batches: IBatchView[]): HTMLElement | null {
  if (!batches.length) {
    return null;
  }
  const rows = batches.map(batch => {
    const bar = h('progress', { className: 'jp-skillnb-progress' });
    bar.max = Math.max(batch.total, 1);
    bar.value = batch.done;
    const next = batch.remaining.length
      ? `next: ${batch.remaining.slice(0, 3).join(', ')}`
      : '';
    return h(
      'div',
      { className: 'jp-skillnb-batch', data: { batch: batch.name } },
      [
        h('div', { text: `${batch.name}: ${batch.done}/${batch.total}` }),
        bar,
        next
          ? h('div', {
              className: 'jp-skillnb-muted',
              text: clip(next, PREVIEW_CHARS)
            })
          : null
      ]
    );
  });
  return section('batches', 'Batches', rows);
}

/**
 * A fact's value: a JSON object as `key: value` lines, anything else as text. Both wrap at
 * word boundaries and between compact JSON's entries (`breakable`); `overflow-wrap:
 * break-word` is left only for a single word wider than the panel.
 */
export function factValue(preview: string, restorable = true): HTMLElement {
  const suffix = restorable ? '' : ' (not restorable)';
  const lines = objectLines(preview);
  if (lines === null) {
    return h(
      'div',
      { className: 'jp-skillnb-value' },
      breakable(clip(preview, PREVIEW_CHARS) + suffix)
    );
  }
  return h('div', { className: 'jp-skillnb-value jp-skillnb-value-object' }, [
    ...lines.map(line =>
      h('div', { className: 'jp-skillnb-kv' }, [
        h('span', { className: 'jp-skillnb-kv-key', text: `${line.key}:` }),
        h('span', {}, breakable(line.value ? ` ${line.value}` : ''))
      ])
    ),
    suffix ? h('div', { className: 'jp-skillnb-muted', text: suffix }) : null
  ]);
}

/** The latest version of each fact. */
export function factSection(facts: IFactView[]): HTMLElement {
  if (!facts.length) {
    return section('facts', 'Facts', [
      h('div', {
        className: 'jp-skillnb-muted',
        text: 'No facts formalized yet.'
      })
    ]);
  }
  const rows = facts.map(fact =>
    h('tr', { data: { key: fact.key } }, [
      h('td', { className: 'jp-skillnb-fact-name' }, [
        h('div', { className: 'jp-skillnb-fact-key', text: fact.key }),
        h('div', {
          className: 'jp-skillnb-muted',
          text: `${fact.kind} v${fact.version}`
        })
      ]),
      h('td', { className: 'jp-skillnb-fact-preview', title: fact.preview }, [
        factValue(fact.preview, fact.restorable)
      ])
    ])
  );
  return section('facts', `Facts (${facts.length})`, [
    h('table', { className: 'jp-skillnb-table jp-skillnb-facts' }, [
      h('tbody', {}, rows)
    ])
  ]);
}

/** The last recorded gate report. */
export function reportSection(
  report: IGateReportView | null,
  pendingGates: ReadonlySet<string> = new Set()
): HTMLElement | null {
  if (report === null) {
    return null;
  }
  const title = `Last gate check${report.trigger ? `: ${report.trigger}` : ''}`;
  return section('report', title, [
    h('div', {
      className: `jp-skillnb-status jp-skillnb-status-${report.passed ? 'passing' : 'blocked'}`,
      text: report.passed ? 'passed' : 'blocked'
    }),
    h(
      'ul',
      { className: 'jp-skillnb-gates' },
      report.results.map(gate => gateLine(gate, pendingGates))
    )
  ]);
}

/** Named checkpoints. */
export function milestoneSection(
  milestones: IMilestoneView[]
): HTMLElement | null {
  if (!milestones.length) {
    return null;
  }
  const items = milestones.map(m =>
    h('li', { data: { milestone: m.name } }, [
      h('span', { text: m.name }),
      h('span', {
        className: 'jp-skillnb-muted',
        text: ` v${m.seq}${m.state ? ` in ${m.state}` : ''} ${when(m.at)}`
      })
    ])
  );
  return section('milestones', 'Milestones', [
    h('ul', { className: 'jp-skillnb-list' }, items)
  ]);
}

/** Recent history, newest last. */
export function historySection(history: IHistoryEntry[]): HTMLElement | null {
  if (!history.length) {
    return null;
  }
  // One number per entry: the run version it made (a list marker would be a second one).
  const items = history.map(entry =>
    h('li', { data: { seq: String(entry.seq) } }, [
      h('span', { className: 'jp-skillnb-muted', text: `v${entry.seq} ` }),
      h('span', {
        text: entry.summary || entry.type,
        title: `${entry.type} ${when(entry.at)}`
      })
    ])
  );
  return section('history', 'History', [
    h('ul', { className: 'jp-skillnb-history' }, items)
  ]);
}

/** Ids worth remembering. */
export function keyIdSection(keyIds: {
  [key: string]: unknown;
}): HTMLElement | null {
  const entries = Object.entries(keyIds);
  if (!entries.length) {
    return null;
  }
  const rows = entries.map(([key, value]) =>
    h('tr', {}, [
      h('td', { className: 'jp-skillnb-fact-key', text: key }),
      h('td', {
        text: clip(
          typeof value === 'string' ? value : JSON.stringify(value),
          PREVIEW_CHARS
        )
      })
    ])
  );
  return section('key-ids', 'Key ids', [
    h('table', { className: 'jp-skillnb-table' }, [h('tbody', {}, rows)])
  ]);
}

/** One LangGraph thread as the panel shows it (plain text, built without the DOM). */
export interface IThreadLine {
  thread_id: string;
  /** `checkpoint ID`: the last checkpoint, shown as a tooltip. */
  title: string;
  /** `step N · next a, b · K checkpoints`. */
  detail: string;
  interrupts: { node: string; value: string; waiting: boolean }[];
}

/**
 * The panel's lines for the run's LangGraph threads. An open interrupt is also a pending
 * approval request with the same id: `waiting` marks it so, and its
 * Approve and Reject buttons are the pending approvals' own.
 */
export function threadLines(
  threads: IGraphThread[],
  pending: IPendingApproval[] = []
): IThreadLine[] {
  const ids = new Set(pending.map(p => p.id));
  return threads.map(thread => {
    const parts = [
      thread.step === null ? '' : `step ${thread.step}`,
      thread.next.length ? `next ${thread.next.join(', ')}` : 'finished',
      `${thread.checkpoints} checkpoint${thread.checkpoints === 1 ? '' : 's'}`
    ].filter(Boolean);
    return {
      thread_id: thread.thread_id,
      title: thread.checkpoint ? `checkpoint ${thread.checkpoint}` : '',
      detail: parts.join(' · '),
      interrupts: thread.interrupts.map(i => ({
        node: i.node,
        value: clip(i.value, PREVIEW_CHARS),
        waiting: ids.has(i.id)
      }))
    };
  });
}

/** LangGraph threads checkpointed in the run: step, next nodes, open interrupts. */
export function threadSection(
  threads: IGraphThread[],
  pending: IPendingApproval[] = []
): HTMLElement | null {
  if (!threads.length) {
    return null;
  }
  const items = threadLines(threads, pending).map(line =>
    h('li', { data: { thread: line.thread_id } }, [
      h('span', {
        className: 'jp-skillnb-fact-key',
        text: line.thread_id,
        title: line.title
      }),
      h('span', { className: 'jp-skillnb-muted', text: ` ${line.detail}` }),
      line.interrupts.length
        ? h(
            'ul',
            { className: 'jp-skillnb-list' },
            line.interrupts.map(i =>
              h('li', { className: 'jp-skillnb-interrupt' }, [
                h('span', { text: `interrupt in ${i.node || '?'}` }),
                i.value
                  ? h('span', {
                      className: 'jp-skillnb-message',
                      text: ` ${i.value}`
                    })
                  : null,
                i.waiting
                  ? h('span', {
                      className: 'jp-skillnb-muted',
                      text: ' · waiting for approval'
                    })
                  : null
              ])
            )
          )
        : null
    ])
  );
  return section('threads', 'LangGraph threads', [
    h('ul', { className: 'jp-skillnb-list' }, items)
  ]);
}

/**
 * A quiet "Keep?" list of what the kernel has on offer (it withdraws what was kept or
 * superseded), each with a Keep button. `keep` answers whether it kept the suggestion;
 * otherwise the button can be pressed again.
 */
export function keepSection(
  suggestions: readonly ISuggestion[],
  keep: (suggestion: ISuggestion) => Promise<boolean>
): HTMLElement | null {
  if (!suggestions.length) {
    return null;
  }
  const items = suggestions.map(item => {
    const button = h('button', {
      className: 'jp-mod-styled jp-skillnb-keep',
      text: 'Keep',
      title: `%formalize ${item.name} --kind ${item.kind}`,
      data: { name: item.name },
      attrs: { 'aria-label': `Keep ${item.name}` }
    });
    button.addEventListener('click', () => {
      button.disabled = true; // one request per click; enabled again if it failed
      void keep(item).then(
        kept => {
          button.disabled = kept;
        },
        () => {
          button.disabled = false;
        }
      );
    });
    return h(
      'li',
      { className: 'jp-skillnb-suggestion', data: { name: item.name } },
      [
        h('span', { className: 'jp-skillnb-fact-key', text: item.name }),
        h('span', { className: 'jp-skillnb-muted', text: ` (${item.kind}) ` }),
        h('span', {
          className: 'jp-skillnb-muted',
          text: clip(item.reason, PREVIEW_CHARS)
        }),
        button
      ]
    );
  });
  return section('keep', 'Keep?', [
    h('ul', { className: 'jp-skillnb-list' }, items)
  ]);
}
