/**
 * A saved run view is a snapshot: "as of v38, 14:02". This module reads that marker from a
 * saved view's HTML (the kernel writes it, see `skillnb/jupyter/views/asof.py`), reads the server's
 * fresh rendering of the view (`GET /skillnb/api/view`), and decides what the view says
 * about itself: brought up to date from the run, or saved at an older version than the
 * run's, or saved from another run, or the original's run in a copy of its notebook. Pure
 * functions: `liveview.ts` does the DOM.
 */
import { parseCopyOf } from './parse';
import type { ICopyOf } from './types';

/** What a saved view's marker says: the run, the version and the time it shows. */
export interface IAsOf {
  run: string;
  version: number;
  /** ISO time of that version ('' when the marker has none). */
  at: string;
  /**
   * `run`: a run view (brought up to date from the server); `form`: a widget's saved form
   * (a Keep button, a batch bar), marked only.
   */
  kind: 'run' | 'form';
}

/** The server's rendering of a run view, as it is now (`GET /skillnb/api/view`). */
export interface IFreshView {
  run: string;
  version: number;
  at: string;
  html: string;
  text: string;
}

/** What the server said when asked for the run now. */
export interface ILiveAnswer {
  /** The fresh view, when the view route answered. */
  view?: IFreshView | null;
  /** The run's version, when only the version route answered (`null`: no run now). */
  version?: number | null;
  /** Why the run could not be read. */
  error?: string;
  /** The notebook has no run: it is a copy of one holding the run its views show. */
  copy?: ICopyOf;
}

/**
 * `current`: the view now shows the run as it is; `behind`: the saved view is older than
 * the run and could not be brought up to date; `other`: saved from another run than this
 * notebook's; `copy`: the notebook is a copy of one holding the run shown (it has no run
 * of its own); `unknown`: the run could not be read at all.
 */
export type Freshness = 'current' | 'behind' | 'other' | 'copy' | 'unknown';

/** What a view says about itself once the server was asked. */
export interface IVerdict {
  freshness: Freshness;
  /** One line for a person. */
  text: string;
  /** The fresh HTML to show in place of the saved one, or `null` to keep the saved one. */
  html: string | null;
  /** The fresh plain text (with `html`). */
  plain: string | null;
  /** The version the view now shows. */
  version: number;
}

const MARKER = /<[a-z]+\b[^>]*\bclass="[^"]*\bskillnb-as-of\b[^"]*"[^>]*>/i;

/** The value of attribute `name` in tag `tag` ('' when absent), unescaped. */
function attribute(tag: string, name: string): string | null {
  const match = new RegExp(`\\s${name}="([^"]*)"`).exec(tag);
  return match === null ? null : unescape(match[1]);
}

function unescape(text: string): string {
  return text
    .replace(/&quot;/g, '"')
    .replace(/&#x27;/g, "'")
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** The marker of a saved view's HTML, or `null` when it has none (an older saved view). */
export function parseAsOf(html: unknown): IAsOf | null {
  if (typeof html !== 'string') {
    return null;
  }
  const tag = MARKER.exec(html)?.[0];
  if (tag === undefined) {
    return null;
  }
  const run = attribute(tag, 'data-skillnb-run');
  const version = Number(attribute(tag, 'data-skillnb-version'));
  if (run === null || !Number.isInteger(version) || version < 0) {
    return null;
  }
  return {
    run,
    version,
    at: attribute(tag, 'data-skillnb-at') ?? '',
    kind: attribute(tag, 'data-skillnb-view') === 'form' ? 'form' : 'run'
  };
}

/** The view route's answer for a copy of a notebook holding the run (`null`: not a copy). */
export function copyIn(raw: unknown): ICopyOf | null {
  if (typeof raw !== 'object' || raw === null) {
    return null;
  }
  const body = raw as Record<string, unknown>;
  return body.v === 1 ? parseCopyOf(body.copy_of) : null;
}

/** Read the view route's answer; `null` when it is not one this version understands. */
export function parseFreshView(raw: unknown): IFreshView | null {
  if (typeof raw !== 'object' || raw === null) {
    return null;
  }
  const body = raw as Record<string, unknown>;
  const data = body.data as Record<string, unknown> | null | undefined;
  if (
    body.v !== 1 ||
    typeof body.run_id !== 'string' ||
    typeof body.version !== 'number' ||
    typeof data !== 'object' ||
    data === null ||
    typeof data['text/html'] !== 'string' ||
    typeof data['text/plain'] !== 'string'
  ) {
    return null;
  }
  return {
    run: body.run_id,
    version: body.version,
    at: typeof body.updated_at === 'string' ? body.updated_at : '',
    html: data['text/html'],
    text: data['text/plain']
  };
}

/** `14:02` (today) or `Dec 1 14:02`, in the page's time zone; '' for no or a bad time. */
export function clockTime(iso: string, now: Date = new Date()): string {
  const moment = new Date(iso);
  if (!iso || Number.isNaN(moment.getTime())) {
    return '';
  }
  const pad = (n: number): string => String(n).padStart(2, '0');
  const clock = `${pad(moment.getHours())}:${pad(moment.getMinutes())}`;
  if (moment.toDateString() === now.toDateString()) {
    return clock;
  }
  const month = moment.toLocaleString('en-US', { month: 'short' });
  return `${month} ${moment.getDate()} ${clock}`;
}

/** `v38, 14:02` (or `v38` without a time). */
function shown(version: number, at: string, now: Date): string {
  const clock = clockTime(at, now);
  return clock ? `v${version}, ${clock}` : `v${version}`;
}

/** What a saved view (`saved`) says once the server answered (`live`). */
export function verdict(
  saved: IAsOf,
  live: ILiveAnswer,
  now: Date = new Date()
): IVerdict {
  const was = shown(saved.version, saved.at, now);
  const keep = { html: null, plain: null, version: saved.version };
  if (live.copy !== undefined) {
    const copy = live.copy;
    return {
      ...keep,
      freshness: 'copy',
      text: `${copy.text} (as of ${was}). Go on with a copy of its run: ${copy.fork_from} (or ${copy.fork} in a terminal), or start fresh: ${copy.new_run}.`
    };
  }
  const view = live.view ?? null;
  if (view !== null && view.run !== saved.run) {
    return {
      ...keep,
      freshness: 'other',
      text: `Saved from another run (${saved.run}, as of ${was}); this notebook's run is ${view.run}, now at v${view.version}.`
    };
  }
  if (view !== null) {
    const moved =
      view.version === saved.version
        ? `the run is still at v${view.version}`
        : `saved as of ${was}`;
    return {
      freshness: 'current',
      text: `Current: as of ${shown(view.version, view.at, now)}, read from the run just now (${moved}).`,
      html: view.html,
      plain: view.text,
      version: view.version
    };
  }
  if (typeof live.version === 'number') {
    if (live.version === saved.version) {
      return {
        ...keep,
        freshness: 'current',
        text: `Current: the run is still at v${saved.version}.`
      };
    }
    return {
      ...keep,
      freshness: 'behind',
      text: `Saved at ${was}; the run is now at v${live.version}.`
    };
  }
  const why =
    live.version === null
      ? 'this notebook has no run now'
      : `the run could not be read now${live.error ? ` (${live.error})` : ''}`;
  return {
    ...keep,
    freshness: 'unknown',
    text: `Saved at ${was}; ${why}, so it may be out of date.`
  };
}

/** The server's routes for one notebook's run, as the saved views need them. */
export interface IViewSource {
  /** The raw answer of `GET /skillnb/api/view` for the notebook (rejects on failure). */
  view(): Promise<unknown>;
  /** The run's version (`exists: false`: the notebook has no run; `copy_of`: a copy). */
  version(): Promise<{
    exists: boolean;
    version: number | null;
    copy_of?: ICopyOf | null;
  }>;
}

/** Ask the server for the run now: its view, else at least its version. */
export async function askRun(runs: IViewSource): Promise<ILiveAnswer> {
  let error: string;
  try {
    const raw = await runs.view();
    const copy = copyIn(raw);
    if (copy !== null) {
      return { copy };
    }
    const view = parseFreshView(raw);
    if (view !== null) {
      return { view };
    }
    error = 'the server answered in a form this page does not read';
  } catch (reason) {
    error = reason instanceof Error ? reason.message : String(reason);
  }
  try {
    const { exists, version, copy_of: copy } = await runs.version();
    if (!exists && copy) {
      return { copy };
    }
    return { version: exists ? version : null, error };
  } catch (reason) {
    return { error: reason instanceof Error ? reason.message : String(reason) };
  }
}
