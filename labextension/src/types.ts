/**
 * The JSON shapes the extension reads: `run.describe()` (served by the server extension),
 * the display bundle of skillnb outputs, the metadata mirror and the server's answers.
 *
 * GENERATED from skillnb_magics/skillnb/core/contract.schema.json (the pydantic models of
 * skillnb.core.contract) by scripts/gen_types.py: do not edit by hand. The extension only
 * renders these shapes and never derives workflow rules from them.
 */
import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';

export type TriggerStatus = 'passing' | 'warning' | 'blocked' | 'unknown';
export type JsonValue = unknown;
export type BundleStatus =
  'ok' | 'restored' | 'blocked' | 'waiting' | 'warning' | 'error';
export type RunSource = 'folder' | 'store';

/**
 * The JSON shapes SKILL.nb sends from Python to its frontends (format v1).
 */
export interface ISkillnbContract {
  run_description: IRunDescription;
  notebook_mirror: INotebookMirror;
  cell_mirror: ICellMirror;
  bundle: ISkillnbBundle;
  output_volatile: IOutputVolatile;
  output_bundle: IOutputBundle;
  mirror_message: IMirrorMessage;
  run_version: IRunVersion;
  milestone_result: IMilestoneResult;
  decision_result: IDecisionResult;
  inbox_view: IInboxView;
}
/**
 * ``run.describe()``: the run at a glance, what every view renders.
 */
export interface IRunDescription {
  v: 1;
  run_id: string;
  workflow: string | null;
  state: string | null;
  version: number;
  updated_at: string | null;
  states: string[];
  visited: string[];
  next: INextTrigger[];
  facts: IFactView[];
  /**
   * How many facts of each kind the run holds (also those a ``facts_limit`` left out).
   */
  fact_counts: {
    [k: string]: number;
  };
  pending: IPendingApproval[];
  uncertain: IUncertainStep[];
  batches: IBatchView[];
  key_ids: {
    [k: string]: JsonValue;
  };
  milestones: IMilestoneView[];
  last_report: IGateReportView | null;
  history: IHistoryEntry[];
  /**
   * The run profile gates are evaluated under (``default`` unless one was chosen).
   */
  profile: string;
  follow_ups: IFollowUp[];
  /**
   * The workflow as a mermaid ``stateDiagram`` (``None`` without a workflow).
   */
  mermaid: string | null;
  /**
   * LangGraph threads checkpointed in the run (empty when there are none).
   */
  threads: IGraphThread[];
}
/**
 * A trigger allowed from the current state, with the status of its gates.
 */
export interface INextTrigger {
  trigger: string;
  to: string;
  status: TriggerStatus;
  gates: IGateView[];
}
/**
 * One gate result (``passed`` is null when the server could not run it).
 */
export interface IGateView {
  gate: string;
  kind: string;
  severity: string;
  passed: boolean | null;
  message: string;
}
/**
 * The latest version of one fact.
 */
export interface IFactView {
  key: string;
  kind: string;
  version: number;
  preview: string;
  cell_id: string | null;
  at: string | null;
  restorable: boolean;
}
/**
 * A pending approval request.
 */
export interface IPendingApproval {
  id: string;
  gate: string;
  trigger: string | null;
  message: string;
  state: string | null;
  requested_seq: number;
  requested_at: string | null;
}
/**
 * A step that started and never committed.
 */
export interface IUncertainStep {
  key: string;
  started_seq: number;
  cell_id: string | null;
}
/**
 * Progress of one batch (``remaining``: the first items still to do).
 */
export interface IBatchView {
  name: string;
  done: number;
  total: number;
  remaining: string[];
}
/**
 * A named checkpoint.
 */
export interface IMilestoneView {
  name: string;
  seq: number;
  state: string | null;
  at: string | null;
}
/**
 * The last recorded gate report (``key``: the trigger or gated cell it was kept under).
 */
export interface IGateReportView {
  key: string;
  version: number;
  trigger: string | null;
  state: string | null;
  passed: boolean;
  results: IGateView[];
}
/**
 * One journal event, summarised, or a run of similar ones folded into one row.
 */
export interface IHistoryEntry {
  /**
   * The (first) event's sequence number.
   */
  seq: number;
  type: string;
  at: string | null;
  /**
   * What happened; for a run, ``first … last (N events)``.
   */
  summary: string;
  /**
   * How many events the row stands for (1, or the length of a folded run).
   */
  count: number;
  /**
   * The last event's sequence number (``seq`` when ``count`` is 1).
   */
  last_seq: number;
  /**
   * The last event's time (``at`` when ``count`` is 1).
   */
  last_at: string | null;
}
/**
 * Something a warning gate left to do, open until resolved.
 */
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
/**
 * The head of a LangGraph thread whose checkpoints live in the run.
 */
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
/**
 * An ``interrupt()`` a LangGraph thread waits on (also a pending approval).
 */
export interface IGraphInterrupt {
  id: string;
  node: string;
  /**
   * A preview of what it asks (JSON text, clipped).
   */
  value: string;
}
/**
 * ``metadata["skillnb"]``: the run at a glance, written beside the cells.
 */
export interface INotebookMirror {
  /**
   * Format version.
   */
  v: 1;
  run_id: string;
  workflow?: string | null;
  state?: string | null;
  version?: number;
  facts?: {
    [k: string]: IFactMirror;
  };
  /**
   * @maxItems 1000
   */
  pending?: IPendingMirror[];
  updated_at?: string | null;
}
/**
 * One fact in the notebook mirror.
 */
export interface IFactMirror {
  /**
   * The fact's version.
   */
  version: number;
  /**
   * What the fact means for the workflow.
   */
  kind?: 'decision' | 'data' | 'constraint' | 'summary' | 'note';
  /**
   * The cell that produced it.
   */
  cell_id?: string | null;
  /**
   * A short rendering of the value (never the value itself).
   */
  preview?: string;
}
/**
 * A pending approval request in the notebook mirror.
 */
export interface IPendingMirror {
  id: string;
  gate: string;
  trigger?: string | null;
  message?: string;
  state?: string | null;
  requested_seq?: number;
  requested_at?: string | null;
}
/**
 * ``cell.metadata["skillnb"]`` of a step cell: a ``%%formalize`` or ``%%gate`` cell.
 *
 * A formalize cell carries ``step`` (the fact key), a gate cell ``gate`` (its trigger, or
 * ``None`` for a gate cell without one); ``status`` is the step's (``started``,
 * ``committed``, ``failed``, ...) or, for a gate cell whose last report blocked it,
 * ``blocked`` or ``waiting``.
 */
export interface ICellMirror {
  step?: string | null;
  gate?: string | null;
  version?: number;
  source_hash?: string | null;
  status:
    | 'started'
    | 'committed'
    | 'failed'
    | 'cleared'
    | 'passed'
    | 'blocked'
    | 'waiting';
}
/**
 * ``data["application/vnd.skillnb.v1+json"]`` of a magic's output.
 *
 * Deterministic fields only (the same on every fresh execution), so nbval can compare it.
 */
export interface ISkillnbBundle {
  v: 1;
  /**
   * ``formalize``, ``restore``, ``gate``, ``blocked``, ``approval``, ``resume``, ...
   */
  kind: string;
  badge: string;
  status: BundleStatus;
  key: string | null;
  trigger: string | null;
  /**
   * A blocked (or waiting) gated cell's gate report, shown folded under its lines.
   */
  report?: IFoldedReport | null;
}
/**
 * The gate report a blocked cell folds under what it says (closed until opened).
 */
export interface IFoldedReport {
  /**
   * What the fold is labelled: ``gate report in state review (2 gates)``.
   */
  summary: string;
  rows: IGateRow[];
}
/**
 * One gate of a folded gate report.
 */
export interface IGateRow {
  /**
   * ``✓`` passed, ``✗`` failed, ``⚠`` failed as a warning only.
   */
  mark: string;
  gate: string;
  kind: string;
  severity: string;
  /**
   * The gate's full message, its expression included.
   */
  message: string;
}
/**
 * ``metadata["application/vnd.skillnb.v1+json"]`` of a magic's output.
 *
 * What changes from one execution to the next: the run id, when it was shown, the events it
 * committed and the mirror.
 */
export interface IOutputVolatile {
  v: 1;
  run_id: string | null;
  at: string | null;
  /**
   * The dumps of the events committed since the previous output (read by Python only).
   */
  events: unknown[];
  mirror: IOutputMirror | null;
}
/**
 * The notebook mirror and the cell's, carried by an output's metadata.
 */
export interface IOutputMirror {
  notebook: ReadonlyPartialJSONObject | null;
  cell: ReadonlyPartialJSONObject | null;
}
/**
 * An output's MIME bundle and its metadata, as the kernel sends them.
 *
 * Any output, as the notebook holds it: the extension reads them to find SKILL.nb's.
 */
export interface IOutputBundle {
  data: {
    [k: string]: JsonValue;
  };
  metadata: {
    [k: string]: JsonValue;
  };
}
/**
 * A message on the ``skillnb.mirror`` comm.
 */
export interface IMirrorMessage {
  v: 1;
  notebook: ReadonlyPartialJSONObject | null;
  cell_id: string | null;
  cell: ReadonlyPartialJSONObject | null;
  /**
   * Every suggestion still on offer, newest first: it replaces the list shown (an empty
   * one clears it). Null when the message carries none (keep the old ones).
   */
  suggestions?: ISuggestion[] | null;
}
/**
 * A name the kernel suggests keeping after a cell ran (on offer until kept or superseded).
 */
export interface ISuggestion {
  name: string;
  /**
   * The fact kind it would be kept as (decision, data, constraint, summary, note).
   */
  kind: string;
  /**
   * How worth keeping, 0 to 1.
   */
  score: number;
  reason: string;
}
/**
 * ``GET /skillnb/api/version``.
 */
export interface IRunVersion {
  exists: boolean;
  version: number | null;
  /**
   * The server can hold a version check of this run until it changes (``after``/``wait``).
   */
  live?: boolean;
  /**
   * Set when the notebook has no run because it is a copy of one that holds it.
   */
  copy_of?: ICopyOf | null;
}
/**
 * The notebook is a copy of another that still holds the run both name (no run of its own).
 *
 * Its saved outputs and metadata show the original's run; nothing is recorded until one of
 * the ways on is taken (see :mod:`skillnb.notebookfile.identity`).
 */
export interface ICopyOf {
  /**
   * One line for a person: "This notebook is a copy of report.ipynb; the run shown is the
   * original's".
   */
  text: string;
  /**
   * The original notebook, relative to the copy's folder (as the commands name it).
   */
  original: string;
  /**
   * The run both notebooks name (the original's).
   */
  run_id: string;
  /**
   * In the copy's kernel: go on with a copy of the original's run (``%skillnb fork-from``).
   */
  fork_from: string;
  /**
   * The same from a shell in the copy's folder (``skillnb fork ORIGINAL COPY``).
   */
  fork: string;
  /**
   * In the copy's kernel: start a new run of its own (``%skillnb new-run``).
   */
  new_run: string;
}
/**
 * The answer of ``POST /skillnb/api/milestone``.
 */
export interface IMilestoneResult {
  version: number;
  event: IEventSummary;
}
/**
 * The event an action committed, as the server answers it.
 */
export interface IEventSummary {
  seq: number;
  type: string;
  data?: {
    [k: string]: JsonValue;
  } | null;
}
/**
 * The answer of ``POST /skillnb/api/approve`` and ``reject``.
 */
export interface IDecisionResult {
  version: number;
}
/**
 * ``GET /skillnb/api/inbox``: what waits across the server's root and its team store.
 */
export interface IInboxView {
  /**
   * Oldest first.
   */
  items: IInboxItem[];
  /**
   * The runs or places that could not be read (each with its ``problem``).
   */
  problems: IRunRow[];
}
/**
 * One open approval request or follow-up, with the commands that answer it.
 */
export interface IInboxItem {
  kind: 'approval' | 'follow_up';
  /**
   * The run's name, as :attr:`RunRow.name`.
   */
  run: string;
  source: RunSource;
  /**
   * The request's or follow-up's id.
   */
  id: string;
  gate: string;
  /**
   * What the person is asked (an approval) or what is to be done (a follow-up).
   */
  message: string;
  /**
   * The trigger or gated cell that asked.
   */
  asked_by: string | null;
  state: string | null;
  /**
   * When it was asked.
   */
  since: string | null;
  /**
   * The exact ``skillnb`` commands that approve and reject it, or resolve it.
   */
  commands: string[];
}
/**
 * One run in a listing, or one place that could not be read (``problem`` set).
 */
export interface IRunRow {
  /**
   * The notebook or state folder (relative to the listed folder), or the store's run name.
   */
  name: string;
  /**
   * Where the run lives.
   */
  source: 'folder' | 'store';
  /**
   * The words that name this run on a ``skillnb`` command line (``NB``, ``--state-dir D``,
   * or ``NAME --store URL``).
   */
  target: string[];
  workflow?: string | null;
  state?: string | null;
  version?: number;
  /**
   * When the run last changed (its latest event).
   */
  updated_at?: string | null;
  /**
   * The approval gates with a pending request in the current state.
   */
  waiting?: string[];
  /**
   * How many follow-ups are open.
   */
  follow_ups?: number;
  /**
   * The blocking gates that failed in the latest report of each trigger, in this state.
   */
  blocked?: string[];
  batches?: IBatchProgress[];
  /**
   * Why this run could not be read (the row is shown as ``?``).
   */
  problem?: string | null;
}
/**
 * How far one batch of a run is.
 */
export interface IBatchProgress {
  name: string;
  done: number;
  total: number;
}
