/**
 * The user-facing flows behind the toolbar buttons, the commands and the panel buttons:
 * ask (dialog), call the server or the kernel, tell the outcome (notification, panel
 * notice). The rules stay in Python; these functions only move requests and messages.
 */
import {
  Dialog,
  InputDialog,
  Notification,
  showDialog,
  type ISessionContextDialogs
} from '@jupyterlab/apputils';
import type { NotebookPanel } from '@jupyterlab/notebook';
import { Widget } from '@lumino/widgets';

import { RunApiError, type IApprover, type IRunClient } from './api';
import { h } from './dom';
import { keepSuggestion } from './keep';
import { applyOutputMirror } from './mirror';
import type { RunModel } from './model';
import { resumeInKernel } from './resume';
import { decidedNotice } from './decided';
import type { IApprovalHandlers } from './sections';
import type { ISkillnbPanel } from './tokens';
import type { IPendingApproval, ISuggestion } from './types';

/** Shown when a notebook has no sidecar yet. */
export const NO_RUN_MESSAGE =
  'This notebook has no SKILL.nb run yet, so there is nothing to checkpoint. ' +
  'Run %load_ext skillnb in the notebook and formalize a first fact (%%formalize KEY), ' +
  'then record the milestone.';

const AUTO_CLOSE_MS = 6000;

function failureText(reason: unknown): string {
  return reason instanceof Error ? reason.message : String(reason);
}

/** Ask for a name and record a milestone of the notebook's run. */
export async function recordMilestone(
  panel: NotebookPanel,
  client: IRunClient,
  runs: ISkillnbPanel | null
): Promise<void> {
  const path = panel.context.path;
  // Ask first whether there is a run (a 200 answer): then no name is asked for nothing.
  // When the check itself fails, the milestone request says what is wrong.
  const exists = await client.version(path).then(
    answer => answer.exists,
    () => true
  );
  if (!exists) {
    Notification.warning(NO_RUN_MESSAGE, { autoClose: false });
    return;
  }
  const answer = await InputDialog.getText({
    title: 'Record a SKILL.nb milestone',
    label: 'Milestone name',
    placeholder: 'e.g. extraction-done',
    okLabel: 'Record',
    required: true
  });
  if (!answer.button.accept) {
    return;
  }
  const name = (answer.value ?? '').trim();
  if (!name) {
    Notification.warning('A milestone needs a name: nothing was recorded.', {
      autoClose: AUTO_CLOSE_MS
    });
    return;
  }
  try {
    const result = await client.milestone(path, name);
    Notification.success(
      `Milestone "${name}" recorded (run version ${result.version}).`,
      {
        autoClose: AUTO_CLOSE_MS
      }
    );
  } catch (reason) {
    const missing = reason instanceof RunApiError && reason.isMissing;
    Notification.warning(
      missing
        ? NO_RUN_MESSAGE
        : `Milestone not recorded: ${failureText(reason)}`,
      {
        autoClose: missing ? false : AUTO_CLOSE_MS
      }
    );
  }
  runs?.notifyActivity(path);
}

/** Run `%resume` in the notebook's kernel (loading the extension if needed). */
export async function resumeNotebook(
  panel: NotebookPanel,
  dialogs: ISessionContextDialogs | null,
  runs: ISkillnbPanel | null
): Promise<void> {
  const context = panel.sessionContext;
  // `ready` only settles once a session exists, so a notebook opened with "No Kernel" is
  // offered the kernel dialog instead of being waited on.
  if (!context.session?.kernel && dialogs !== null) {
    await dialogs.selectKernel(context);
  }
  const kernel = context.session?.kernel ?? null;
  if (kernel === null) {
    Notification.warning(
      'Resume needs a running kernel: select one for this notebook first.',
      {
        autoClose: AUTO_CLOSE_MS
      }
    );
    return;
  }
  const path = panel.context.path;
  const pending = Notification.emit(
    'Resuming the SKILL.nb run…',
    'in-progress',
    {
      autoClose: false
    }
  );
  try {
    const result = await resumeInKernel(kernel);
    const model = panel.content.model;
    if (model !== null) {
      for (const output of result.outputs) {
        applyOutputMirror(model, null, output.data, output.metadata);
      }
    }
    const ok = result.status === 'ok';
    const last = result.badges[result.badges.length - 1];
    // The badge ("▶ resumed report at state review") is the headline; the text below it
    // then starts after that line instead of saying it again.
    const headline = ok ? (last ?? 'Resumed') : 'Resume failed';
    const text =
      last && result.text.startsWith(`${last}\n`)
        ? result.text.slice(last.length + 1)
        : result.text;
    Notification.update({
      id: pending,
      message: headline,
      type: ok ? 'success' : 'error',
      autoClose: AUTO_CLOSE_MS
    });
    if (runs !== null && runs.model.path === path) {
      runs.model.setNotice({
        kind: ok ? 'success' : 'error',
        title: headline,
        text
      });
      runs.show();
    }
  } catch (reason) {
    Notification.update({
      id: pending,
      message: `Resume failed: ${failureText(reason)}`,
      type: 'error',
      autoClose: AUTO_CLOSE_MS
    });
  }
  runs?.notifyActivity(path);
}

/** The line of the decision dialog that says who will be recorded. */
export function recordedAsText(who: IApprover | null): string {
  if (who === null) {
    return "Recorded as the server's user (it could not be asked who that is).";
  }
  const shown =
    who.display_name && who.display_name !== who.name
      ? `${who.name} (${who.display_name})`
      : who.name;
  return who.source === 'server'
    ? `Recorded as ${shown}, the signed-in Jupyter user.`
    : `Recorded as ${shown}: this Jupyter server does not identify its users, so the run's user is recorded.`;
}

/** The decision dialog's body: who will be recorded, and an optional note. */
class DecisionBody extends Widget implements Dialog.IBodyWidget<string> {
  constructor(who: IApprover | null) {
    super();
    this.addClass('jp-skillnb-decision');
    this._note = h('input', { className: 'jp-mod-styled jp-skillnb-note' });
    this._note.type = 'text';
    this._note.placeholder = 'Note (optional)';
    this._note.setAttribute('aria-label', 'Note (optional)');
    this.node.append(
      h('p', {
        className: 'jp-skillnb-recorded-as',
        text: recordedAsText(who),
        data: { name: who?.name ?? '' }
      }),
      this._note
    );
  }

  getValue(): string {
    return this._note.value;
  }

  private readonly _note: HTMLInputElement;
}

async function decide(
  model: RunModel,
  pending: IPendingApproval,
  verb: 'Approve' | 'Reject'
): Promise<void> {
  const who = await model.recordedAs().catch(() => null);
  const origin = document.activeElement;
  const answer = await showDialog({
    title: pending.message
      ? `${verb} "${pending.gate}": ${pending.message}`
      : `${verb} "${pending.gate}"?`,
    body: new DecisionBody(who),
    focusNodeSelector: 'input',
    buttons: [
      Dialog.cancelButton(),
      Dialog.okButton({ label: verb, accept: true })
    ]
  });
  if (!answer.button.accept) {
    return;
  }
  const note = (answer.value ?? '').trim() || undefined;
  const panel =
    origin instanceof HTMLElement ? origin.closest('.jp-skillnb-panel') : null;
  try {
    if (verb === 'Approve') {
      await model.approve(pending.gate, note);
    } else {
      await model.reject(pending.gate, note);
    }
    const notice = decidedNotice(verb, pending.gate, who ? who.name : null);
    Notification.emit(notice.message, notice.type, {
      autoClose: AUTO_CLOSE_MS
    });
  } catch (reason) {
    Notification.error(`${verb} failed: ${failureText(reason)}`, {
      autoClose: AUTO_CLOSE_MS
    });
  }
  keepFocusIn(panel, pending.gate);
  watchFocus(panel, pending.gate);
}

/** How long after a decision focus is watched for falling to `<body>` (ms). */
const WATCH_MS = 10_000;

/**
 * For a while after a decision, put focus back in the panel whenever it falls to `<body>`.
 *
 * Two things take it there at moments of their own: the dialog, which gives focus back to
 * the control it was asked from once it is detached (by then that control may be gone), and
 * the panel's redraw when the run's new version arrives (on a loaded machine, seconds later).
 * Both change the page, so each change is a moment to look; focus that went anywhere but
 * `<body>` (another dialog, a cell) is left where it is.
 */
function watchFocus(panel: Element | null, gate: string): void {
  if (!(panel instanceof HTMLElement)) {
    return;
  }
  const look = (): void => {
    const active = document.activeElement;
    if (active === null || active === document.body || !active.isConnected) {
      keepFocusIn(panel, gate);
    }
  };
  const observer = new MutationObserver(look);
  observer.observe(document.body, { childList: true, subtree: true });
  window.setTimeout(() => observer.disconnect(), WATCH_MS);
}

/**
 * After a decision the card of its request is gone, and focus with it (to `<body>`): put it
 * on the next request's Approve button, else on the panel's title, so a keyboard user goes on
 * from where they were.
 */
export function keepFocusIn(panel: Element | null, gate: string): void {
  if (!(panel instanceof HTMLElement) || !panel.isConnected) {
    return;
  }
  const active = document.activeElement;
  if (active !== null && active !== document.body && panel.contains(active)) {
    return;
  }
  const same = panel.querySelector<HTMLElement>(
    `.jp-skillnb-approve[data-gate="${CSS.escape(gate)}"]`
  );
  const next =
    same ??
    panel.querySelector<HTMLElement>('.jp-skillnb-approve') ??
    panel.querySelector<HTMLElement>('.jp-skillnb-title');
  next?.focus();
}

/** The panel's Approve and Reject buttons: confirm with an optional note, then record. */
export function approvalHandlers(model: RunModel): IApprovalHandlers {
  return {
    approve: pending => void decide(model, pending, 'Approve'),
    reject: pending => void decide(model, pending, 'Reject')
  };
}

/**
 * The panel's Keep button: run `%formalize NAME --kind KIND` in the kernel of the open
 * notebook at `path`, then refresh the run. Tells what happened: kept, already kept with
 * this value (the kernel's one line; no version written), or why nothing was kept.
 *
 * @returns whether the suggestion was kept
 */
export async function keepFromPanel(
  notebook: NotebookPanel | null,
  suggestion: ISuggestion,
  runs: ISkillnbPanel | null
): Promise<boolean> {
  const kernel = notebook?.sessionContext.session?.kernel ?? null;
  if (notebook === null || kernel === null) {
    Notification.warning(
      `"${suggestion.name}" was not kept: its notebook has no running kernel.`,
      { autoClose: AUTO_CLOSE_MS }
    );
    return false;
  }
  const path = notebook.context.path;
  let kept = false;
  try {
    const result = await keepSuggestion(kernel, suggestion);
    kept = result.ok;
    if (result.ok && result.info) {
      Notification.info(result.info, {
        autoClose: AUTO_CLOSE_MS
      });
    } else if (result.ok) {
      Notification.success(`Kept "${suggestion.name}" (${suggestion.kind}).`, {
        autoClose: AUTO_CLOSE_MS
      });
    } else {
      Notification.error(`"${suggestion.name}" was not kept: ${result.error}`, {
        autoClose: AUTO_CLOSE_MS
      });
    }
  } catch (reason) {
    Notification.error(
      `"${suggestion.name}" was not kept: ${failureText(reason)}`,
      { autoClose: AUTO_CLOSE_MS }
    );
  }
  runs?.notifyActivity(path);
  return kept;
}
