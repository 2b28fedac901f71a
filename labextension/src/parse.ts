/**
 * Defensive readers for JSON that comes from the server, the kernel or a saved notebook.
 * Facts can hold LLM output and notebooks are untrusted input, so every field is checked
 * and given a safe default; nothing here evaluates or interprets the text.
 */
import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';

import { FORMAT_VERSION, MIME_TYPE } from './tokens';
import type {
  BundleStatus,
  IBatchView,
  ICopyOf,
  IFactView,
  IFoldedReport,
  IGateRow,
  IGateReportView,
  IGraphInterrupt,
  IGraphThread,
  IGateView,
  IHistoryEntry,
  IMilestoneView,
  IOutputMirror,
  IMirrorMessage,
  INextTrigger,
  IOutputVolatile,
  IPendingApproval,
  IRunDescription,
  IRunVersion,
  ISkillnbBundle,
  ISuggestion,
  IUncertainStep,
  IFollowUp,
  TriggerStatus
} from './types';

type Dict = { [key: string]: unknown };

/** True for a plain JSON object (not null, not an array). */
export function isObject(value: unknown): value is Dict {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function str(value: unknown, fallback = ''): string {
  return typeof value === 'string' ? value : fallback;
}

function strOrNull(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function num(value: unknown, fallback = 0): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

function list<T>(value: unknown, read: (item: Dict) => T): T[] {
  if (!Array.isArray(value)) {
    return [];
  }
  return value.filter(isObject).map(read);
}

function strings(value: unknown): string[] {
  return Array.isArray(value)
    ? value.filter((v): v is string => typeof v === 'string')
    : [];
}

function jsonObjectOrNull(value: unknown): ReadonlyPartialJSONObject | null {
  return isObject(value) ? (value as ReadonlyPartialJSONObject) : null;
}

const TRIGGER_STATUSES: readonly TriggerStatus[] = [
  'passing',
  'warning',
  'blocked',
  'unknown'
];

const BUNDLE_STATUSES: readonly BundleStatus[] = [
  'ok',
  'restored',
  'blocked',
  'waiting',
  'warning',
  'error'
];

function readGate(item: Dict): IGateView {
  const passed = item.passed;
  return {
    gate: str(item.gate),
    kind: str(item.kind),
    severity: str(item.severity, 'block'),
    passed: typeof passed === 'boolean' ? passed : null,
    message: str(item.message)
  };
}

function readTrigger(item: Dict): INextTrigger {
  const status = TRIGGER_STATUSES.find(s => s === item.status) ?? 'unknown';
  return {
    trigger: str(item.trigger),
    to: str(item.to),
    status,
    gates: list(item.gates, readGate)
  };
}

function readFact(item: Dict): IFactView {
  return {
    key: str(item.key),
    kind: str(item.kind, 'data'),
    version: num(item.version),
    preview: str(item.preview),
    cell_id: strOrNull(item.cell_id),
    at: strOrNull(item.at),
    restorable: item.restorable !== false
  };
}

function readPending(item: Dict): IPendingApproval {
  return {
    id: str(item.id),
    gate: str(item.gate),
    trigger: strOrNull(item.trigger),
    message: str(item.message),
    state: strOrNull(item.state),
    requested_seq: num(item.requested_seq),
    requested_at: strOrNull(item.requested_at)
  };
}

function readUncertain(item: Dict): IUncertainStep {
  return {
    key: str(item.key),
    started_seq: num(item.started_seq),
    cell_id: strOrNull(item.cell_id)
  };
}

function readFollowUp(item: Dict): IFollowUp {
  return {
    id: str(item.id),
    gate: str(item.gate),
    state: strOrNull(item.state),
    trigger: strOrNull(item.trigger),
    reason: str(item.reason),
    text: str(item.text),
    opened_seq: num(item.opened_seq),
    opened_at: strOrNull(item.opened_at)
  };
}

function readInterrupt(item: Dict): IGraphInterrupt {
  return { id: str(item.id), node: str(item.node), value: str(item.value) };
}

function readThread(item: Dict): IGraphThread {
  const step = item.step;
  return {
    thread_id: str(item.thread_id),
    checkpoint: str(item.checkpoint),
    step: typeof step === 'number' && Number.isFinite(step) ? step : null,
    source: strOrNull(item.source),
    next: strings(item.next),
    interrupts: list(item.interrupts, readInterrupt),
    checkpoints: num(item.checkpoints),
    updated_at: strOrNull(item.updated_at)
  };
}

function readSuggestion(item: Dict): ISuggestion {
  return {
    name: str(item.name),
    kind: str(item.kind, 'data'),
    score: num(item.score),
    reason: str(item.reason)
  };
}

/** Read the `suggestions` of a mirror message; null when it has none (not a list). */
export function parseSuggestions(value: unknown): ISuggestion[] | null {
  if (!Array.isArray(value)) {
    return null;
  }
  return list(value, readSuggestion).filter(s => s.name !== '');
}

function readBatch(item: Dict): IBatchView {
  return {
    name: str(item.name),
    done: num(item.done),
    total: num(item.total),
    remaining: strings(item.remaining)
  };
}

function readMilestone(item: Dict): IMilestoneView {
  return {
    name: str(item.name),
    seq: num(item.seq),
    state: strOrNull(item.state),
    at: strOrNull(item.at)
  };
}

function readHistory(item: Dict): IHistoryEntry {
  const seq = num(item.seq);
  const at = strOrNull(item.at);
  return {
    seq,
    type: str(item.type),
    at,
    summary: str(item.summary),
    count: num(item.count, 1),
    last_seq: num(item.last_seq, seq),
    last_at: item.last_at === undefined ? at : strOrNull(item.last_at)
  };
}

function counts(value: unknown): { [kind: string]: number } {
  const out: { [kind: string]: number } = {};
  if (isObject(value)) {
    for (const [kind, n] of Object.entries(value)) {
      out[kind] = num(n);
    }
  }
  return out;
}

function readReport(value: unknown): IGateReportView | null {
  if (!isObject(value)) {
    return null;
  }
  return {
    key: str(value.key),
    version: num(value.version),
    trigger: strOrNull(value.trigger),
    state: strOrNull(value.state),
    passed: value.passed === true,
    results: list(value.results, readGate)
  };
}

/**
 * Read a `run.describe()` payload.
 *
 * @throws Error when the payload is not an object of a known format version.
 */
export function parseDescription(value: unknown): IRunDescription {
  if (!isObject(value)) {
    throw new Error('the server sent a run description that is not an object');
  }
  const v = num(value.v, -1);
  if (v !== FORMAT_VERSION) {
    throw new Error(
      `unsupported run description format v=${String(value.v)} (this extension reads v=${FORMAT_VERSION})`
    );
  }
  return {
    v,
    run_id: str(value.run_id),
    workflow: strOrNull(value.workflow),
    state: strOrNull(value.state),
    version: num(value.version),
    updated_at: strOrNull(value.updated_at),
    states: strings(value.states),
    visited: strings(value.visited),
    next: list(value.next, readTrigger),
    facts: list(value.facts, readFact),
    fact_counts: counts(value.fact_counts),
    pending: list(value.pending, readPending),
    uncertain: list(value.uncertain, readUncertain),
    batches: list(value.batches, readBatch),
    key_ids: isObject(value.key_ids) ? value.key_ids : {},
    milestones: list(value.milestones, readMilestone),
    last_report: readReport(value.last_report),
    history: list(value.history, readHistory),
    mermaid: strOrNull(value.mermaid),
    profile: str(value.profile) || 'default',
    follow_ups: list(value.follow_ups, readFollowUp),
    threads: list(value.threads, readThread)
  };
}

/** Read `GET /skillnb/api/version`. */
export function parseVersion(value: unknown): IRunVersion {
  if (!isObject(value)) {
    return { exists: false, version: null };
  }
  const version = value.version;
  const copy = parseCopyOf(value.copy_of);
  return {
    exists: value.exists === true,
    version: typeof version === 'number' ? version : null,
    ...(value.live === true ? { live: true } : {}),
    ...(copy !== null ? { copy_of: copy } : {})
  };
}

const COPY_FIELDS = [
  'text',
  'original',
  'run_id',
  'fork_from',
  'fork',
  'new_run'
] as const;

/** Read what a copy of a notebook holding the run is (`null`: not one, or malformed). */
export function parseCopyOf(value: unknown): ICopyOf | null {
  if (!isObject(value)) {
    return null;
  }
  const copy: Partial<Record<(typeof COPY_FIELDS)[number], string>> = {};
  for (const field of COPY_FIELDS) {
    const text = value[field];
    if (typeof text !== 'string') {
      return null;
    }
    copy[field] = text;
  }
  return copy as ICopyOf;
}

function readMirror(value: unknown): IOutputMirror | null {
  if (!isObject(value)) {
    return null;
  }
  return {
    notebook: jsonObjectOrNull(value.notebook),
    cell: jsonObjectOrNull(value.cell)
  };
}

/** Read a skillnb display bundle; `null` when it is not one this extension understands. */
export function parseBundle(value: unknown): ISkillnbBundle | null {
  if (!isObject(value) || value.v !== FORMAT_VERSION) {
    return null;
  }
  const status = BUNDLE_STATUSES.find(s => s === value.status) ?? 'ok';
  const report = readFoldedReport(value.report);
  return {
    v: FORMAT_VERSION,
    kind: str(value.kind),
    badge: str(value.badge, str(value.kind, 'skillnb')),
    status,
    key: strOrNull(value.key),
    trigger: strOrNull(value.trigger),
    ...(report !== null ? { report } : {})
  };
}

const ROW_FIELDS = ['mark', 'gate', 'kind', 'severity', 'message'] as const;

/** A blocked cell's folded gate report (`null`: none, or not one this version reads). */
function readFoldedReport(value: unknown): IFoldedReport | null {
  if (!isObject(value) || typeof value.summary !== 'string') {
    return null;
  }
  if (!Array.isArray(value.rows)) {
    return null;
  }
  const rows: IGateRow[] = [];
  for (const row of value.rows) {
    if (!isObject(row) || ROW_FIELDS.some(f => typeof row[f] !== 'string')) {
      return null;
    }
    rows.push({
      mark: str(row.mark),
      gate: str(row.gate),
      kind: str(row.kind),
      severity: str(row.severity),
      message: str(row.message)
    });
  }
  return { summary: value.summary, rows };
}

/** What the extension reads of an output's volatile part (the events are Python's). */
export type OutputVolatileFields = Pick<
  IOutputVolatile,
  'run_id' | 'at' | 'mirror'
>;

/**
 * Read the volatile part of a skillnb output from its metadata (`metadata[MIME_TYPE]`).
 *
 * Outputs saved before the volatile fields moved to the metadata carry the mirror in the
 * bundle's data instead: pass that data as `legacyData` to read it from there.
 *
 * @returns null when the metadata holds nothing this extension understands
 */
export function parseOutputVolatile(
  metadata: unknown,
  legacyData: unknown = null
): OutputVolatileFields | null {
  const raw = isObject(metadata) ? metadata[MIME_TYPE] : undefined;
  const ours =
    isObject(raw) && (raw.v ?? FORMAT_VERSION) === FORMAT_VERSION ? raw : null;
  const legacy = isObject(legacyData) ? legacyData : null;
  if (ours === null && legacy === null) {
    return null;
  }
  const mirror =
    ours !== null && 'mirror' in ours ? ours.mirror : legacy?.mirror;
  return {
    run_id: strOrNull(ours?.run_id),
    at: strOrNull(ours?.at),
    mirror: readMirror(mirror)
  };
}

/** Read a `skillnb.mirror` comm message; `null` when it is not one. */
export function parseMirrorMessage(value: unknown): IMirrorMessage | null {
  if (!isObject(value) || value.v !== FORMAT_VERSION) {
    return null;
  }
  return {
    v: FORMAT_VERSION,
    notebook: jsonObjectOrNull(value.notebook),
    cell_id: strOrNull(value.cell_id),
    cell: jsonObjectOrNull(value.cell),
    suggestions: parseSuggestions(value.suggestions)
  };
}

/** The `error` text of a JSON error answer, or `fallback`. */
export function errorText(value: unknown, fallback: string): string {
  if (isObject(value)) {
    const error = value.error ?? value.message;
    if (typeof error === 'string' && error) {
      return error;
    }
  }
  return fallback;
}
