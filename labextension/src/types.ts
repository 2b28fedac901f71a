/**
 * The JSON shapes the extension reads: `run.describe()` (served by the server extension),
 * the display bundle of skillnb outputs and the metadata mirror. They mirror the Python
 * contract; the extension only renders them and never derives workflow rules from them.
 */
import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';

/** Status of one next trigger, as computed in Python. */
export type TriggerStatus = 'passing' | 'warning' | 'blocked' | 'unknown';

/** One gate result (`passed` is null when the server could not run it). */
export interface IGateView {
  gate: string;
  kind: string;
  severity: string;
  passed: boolean | null;
  message: string;
}

/** A trigger allowed from the current state. */
export interface INextTrigger {
  trigger: string;
  to: string;
  status: TriggerStatus;
  gates: IGateView[];
}

/** The latest version of one fact. */
export interface IFactView {
  key: string;
  kind: string;
  version: number;
  preview: string;
  cell_id: string | null;
  at: string | null;
  restorable: boolean;
}

/** A pending approval request. */
export interface IPendingApproval {
  id: string;
  gate: string;
  trigger: string | null;
  message: string;
  state: string | null;
  requested_seq: number;
  requested_at: string | null;
}

/** Something a warning gate left to do, open until resolved. */
export interface IFollowUp {
  id: string;
  gate: string;
  state: string | null;
  trigger: string | null;
  reason: string;
  text: string;
  opened_seq: number;
  opened_at: string | null;
}

/** A step that started and never committed. */
export interface IUncertainStep {
  key: string;
  started_seq: number;
  cell_id: string | null;
}

/** Progress of one batch. */
export interface IBatchView {
  name: string;
  done: number;
  total: number;
  remaining: string[];
}

/** A named checkpoint. */
export interface IMilestoneView {
  name: string;
  seq: number;
  state: string | null;
  at: string | null;
}

/** The last recorded gate report. */
export interface IGateReportView {
  trigger: string | null;
  state: string | null;
  passed: boolean;
  results: IGateView[];
}

/** One journal event, summarised. */
export interface IHistoryEntry {
  seq: number;
  type: string;
  at: string | null;
  summary: string;
}

/** `run.describe()`: the run at a glance. */
export interface IRunDescription {
  v: number;
  run_id: string;
  workflow: string | null;
  state: string | null;
  version: number;
  updated_at: string | null;
  states: string[];
  visited: string[];
  next: INextTrigger[];
  facts: IFactView[];
  pending: IPendingApproval[];
  uncertain: IUncertainStep[];
  batches: IBatchView[];
  key_ids: { [key: string]: unknown };
  milestones: IMilestoneView[];
  last_report: IGateReportView | null;
  history: IHistoryEntry[];
  mermaid: string | null;
  /** The run profile gates are evaluated under (`default` unless one was chosen). */
  profile: string;
  follow_ups: IFollowUp[];
  /** LangGraph threads checkpointed in the run (empty when there are none). */
  threads: IGraphThread[];
}

/** An `interrupt()` a LangGraph thread waits on (also a pending approval). */
export interface IGraphInterrupt {
  id: string;
  node: string;
  /** A preview of what it asks (JSON text, clipped by the server). */
  value: string;
}

/** The head of a LangGraph thread whose checkpoints live in the run. */
export interface IGraphThread {
  thread_id: string;
  checkpoint: string;
  step: number | null;
  source: string | null;
  next: string[];
  interrupts: IGraphInterrupt[];
  checkpoints: number;
  updated_at: string | null;
}

/** `GET /skillnb/api/version`. */
export interface IRunVersion {
  exists: boolean;
  version: number | null;
  /** True for a team-store run: the server can hold a version check until it changes. */
  live?: boolean;
}

/** The answer of `POST /skillnb/api/milestone`. */
export interface IMilestoneResult {
  version: number;
  event: { seq: number; type: string; data?: { [key: string]: unknown } };
}

/** The answer of `POST /skillnb/api/approve` and `reject`. */
export interface IDecisionResult {
  version: number;
}

/** The status of a skillnb output, which picks the badge style. */
export type BundleStatus =
  'ok' | 'restored' | 'blocked' | 'waiting' | 'warning' | 'error';

/** The mirror carried by outputs' metadata and comm messages. */
export interface IMirror {
  notebook: ReadonlyPartialJSONObject | null;
  cell: ReadonlyPartialJSONObject | null;
}

/**
 * The `application/vnd.skillnb.v1+json` data of a magic output: deterministic fields only
 * (the same on every fresh execution), so nbval can compare it.
 */
export interface ISkillnbBundle {
  v: number;
  kind: string;
  badge: string;
  status: BundleStatus;
  key: string | null;
  trigger: string | null;
}

/**
 * The volatile part of a magic output, in the output's metadata under the same MIME type:
 * the run id, when it was shown, the events it committed (not read here) and the mirror.
 */
export interface IOutputVolatile {
  run_id: string | null;
  at: string | null;
  mirror: IMirror | null;
}

/** An output's MIME bundle and metadata, as the kernel sent them or the notebook holds them. */
export interface IOutputBundle {
  readonly data: { readonly [mime: string]: unknown };
  readonly metadata: { readonly [key: string]: unknown };
}

/** A name the kernel suggests keeping after a cell ran (`skillnb.suggest`). */
export interface ISuggestion {
  name: string;
  /** The fact kind it would be kept as (decision, data, constraint, summary, note). */
  kind: string;
  /** How worth keeping, 0 to 1. */
  score: number;
  reason: string;
}

/** A message on the `skillnb.mirror` comm. */
export interface IMirrorMessage {
  v: number;
  notebook: ReadonlyPartialJSONObject | null;
  cell_id: string | null;
  cell: ReadonlyPartialJSONObject | null;
  /** The last cell's suggestions; null when the message carries none (keep the old ones). */
  suggestions: ISuggestion[] | null;
}
