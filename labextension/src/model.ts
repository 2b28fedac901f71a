/**
 * `RunModel`: the run of one notebook as the side panel sees it. It fetches
 * `run.describe()` through an `IRunClient`, long-polls the cheap version endpoint while asked
 * to (the server holds each check until the run changes), forwards approvals and milestones, and emits `stateChanged`. It holds no workflow
 * rule: everything it shows was computed in Python.
 */
import type { IDisposable } from '@lumino/disposable';
import { Signal, type ISignal } from '@lumino/signaling';

import { RunApiError, type IApprover, type IRunClient } from './api';
import type { RunWatches } from './runwatch';
import type {
  ICopyOf,
  IMilestoneResult,
  IRunDescription,
  IRunVersion
} from './types';

/** How long the server may hold a version check of a run (seconds). */
const LONG_POLL_S = 20;
/** The pause between two held checks (ms): a server that answers at once is not hammered. */
const RELOOK_MS = 50;

/** Where the model stands. */
export type RunModelStatus =
  | 'empty' // no notebook selected
  | 'loading' // first fetch for this notebook in flight
  | 'ready' // `description` holds the run
  | 'missing' // the notebook has no SKILL.nb run (no sidecar) yet
  | 'copied' // no run of its own: a copy of a notebook holding its run (`copyOf`)
  | 'error'; // the last fetch failed; `error` says why

/** A short message shown at the top of the panel (e.g. the output of Resume). */
export interface INotice {
  kind: 'info' | 'success' | 'warning' | 'error';
  title: string;
  text: string;
}

/** The run of the current notebook, fetched from the server extension. */
export class RunModel implements IDisposable {
  /**
   * @param client the server seam (`ServerRunClient` in the app, a double in tests)
   * @param watches the shared version checks of runs: while polling, the model follows its
   *   run's watch (the one long poll the notebook's saved views follow too) instead of
   *   asking on its own
   */
  constructor(client: IRunClient, watches: RunWatches | null = null) {
    this._client = client;
    this._watches = watches;
  }

  /** Emitted whenever anything the panel shows changed. */
  get stateChanged(): ISignal<this, void> {
    return this._stateChanged;
  }

  /** The notebook path relative to the server root, or null. */
  get path(): string | null {
    return this._path;
  }

  /** Where the model stands. */
  get status(): RunModelStatus {
    return this._status;
  }

  /** The last description fetched for `path` (null unless `status` is `ready`). */
  get description(): IRunDescription | null {
    return this._description;
  }

  /**
   * What the notebook is a copy of, when it has no run of its own because it is a copy of
   * one that holds the run it names (`status` is `copied`): its views show that run.
   */
  get copyOf(): ICopyOf | null {
    return this._copyOf;
  }

  /** Why the last fetch failed, or what is missing. */
  get error(): string | null {
    return this._error;
  }

  /** The notice to show, if any. */
  get notice(): INotice | null {
    return this._notice;
  }

  /** True while polling. */
  get isPolling(): boolean {
    return this._timer !== null || this._following !== null;
  }

  /** True after `dispose()`. */
  get isDisposed(): boolean {
    return this._disposed;
  }

  /**
   * Follow another notebook (or none) and fetch its run.
   *
   * Answers that arrive for the previous notebook are dropped.
   */
  async setPath(path: string | null): Promise<void> {
    if (path === this._path) {
      return;
    }
    this._path = path;
    this._generation += 1;
    this._live = true; // held checks first; a server that cannot hold one says so
    this._description = null;
    this._copyOf = null;
    this._error = null;
    this._notice = null;
    this._status = path === null ? 'empty' : 'loading';
    this._emit();
    if (this._following !== null) {
      this._follow(); // the watch of the new notebook's run
    }
    if (path !== null) {
      await this.refresh();
    }
  }

  /**
   * Fetch the description of the current notebook's run now.
   *
   * Unless a run was shown already, the cheap version route is asked first whether there is
   * one: a notebook without a run is then told apart by a 200 answer, not a 404 that every
   * browser logs as an error.
   */
  async refresh(): Promise<void> {
    const path = this._path;
    if (path === null || this._disposed) {
      return;
    }
    const generation = this._generation;
    const request = ++this._request;
    let description: IRunDescription | null = null;
    let failure: unknown = null;
    let copy: ICopyOf | null = null;
    try {
      if (this._status !== 'ready') {
        const known = await this._client.version(path);
        if (!known.exists) {
          copy = known.copy_of ?? null;
          throw new RunApiError(404, `no SKILL.nb run for ${path} yet`);
        }
      }
      description = await this._client.describe(path);
    } catch (reason) {
      failure = reason;
    }
    if (generation !== this._generation || request !== this._request) {
      return; // a newer request or another notebook took over
    }
    this._copyOf = copy;
    if (description !== null) {
      this._description = description;
      this._status = 'ready';
      this._error = null;
    } else if (failure instanceof RunApiError && failure.isMissing) {
      this._description = null;
      this._status = copy === null ? 'missing' : 'copied';
      this._error = failure.message;
    } else {
      this._status = 'error';
      this._error = describeFailure(failure);
    }
    this._emit();
  }

  /**
   * Ask the server for the run's version and refresh when it moved.
   *
   * @returns true when a refresh was made
   */
  async checkVersion(): Promise<boolean> {
    const path = this._path;
    if (path === null || this._disposed) {
      return false;
    }
    const generation = this._generation;
    let exists: boolean;
    let version: number | null;
    let live: boolean | undefined;
    let copy: ICopyOf | null | undefined;
    const since = this._status === 'ready' ? this._description?.version : null;
    try {
      ({
        exists,
        version,
        live,
        copy_of: copy
      } = this._live && typeof since === 'number'
        ? await this._client.version(path, since, LONG_POLL_S)
        : await this._client.version(path));
    } catch (reason) {
      if (generation === this._generation && this._status !== 'error') {
        this._status = 'error';
        this._error = describeFailure(reason);
        this._emit();
      }
      return false;
    }
    if (generation !== this._generation) {
      return false;
    }
    return this._apply({ exists, version, live, copy_of: copy });
  }

  /** Take a version answer about the current run: refresh when it moved. */
  private async _apply(answer: IRunVersion): Promise<boolean> {
    const { exists, version, live, copy_of: copy } = answer;
    // A run the server can wait on answers when it changes: the next check waits on the
    // server (woken by the sidecar's journal or the database's NOTIFY) instead of asking
    // again every interval.
    this._live = live === true;
    const known = this._status === 'ready' ? this._description?.version : null;
    const stale =
      this._status === 'error' ||
      (exists && known !== version) ||
      (!exists && this._status === 'ready') ||
      (!exists && (this._status === 'copied') !== Boolean(copy));
    if (stale) {
      await this.refresh();
    }
    return stale;
  }

  /** Approve the pending request of `gate`, then refresh. */
  async approve(gate: string, note?: string): Promise<void> {
    const path = this._requirePath();
    try {
      await this._client.approve(path, gate, note);
    } finally {
      await this.refresh();
    }
  }

  /** Reject the pending request of `gate`, then refresh. */
  async reject(gate: string, note?: string): Promise<void> {
    const path = this._requirePath();
    try {
      await this._client.reject(path, gate, note);
    } finally {
      await this.refresh();
    }
  }

  /** Record a milestone named `name`, then refresh. */
  async milestone(name: string): Promise<IMilestoneResult> {
    const path = this._requirePath();
    try {
      return await this._client.milestone(path, name);
    } finally {
      await this.refresh();
    }
  }

  /**
   * Who decisions from this page are recorded as (asked once; asked again after a failure).
   */
  recordedAs(): Promise<IApprover> {
    if (this._approver === null) {
      const asked = this._client.identity();
      this._approver = asked;
      asked.catch(() => {
        if (this._approver === asked) {
          this._approver = null;
        }
      });
    }
    return this._approver;
  }

  /** Show (or clear, with null) a notice. */
  setNotice(notice: INotice | null): void {
    this._notice = notice;
    this._emit();
  }

  /**
   * Check the version every `intervalMs` until `stopPolling()` (with shared watches: follow
   * the run's watch, which long-polls the run, or asks every interval when it cannot).
   */
  startPolling(intervalMs: number): void {
    if (this.isPolling || this._disposed) {
      return;
    }
    if (this._watches !== null) {
      this._follow();
      return;
    }
    this._timer = setInterval(() => {
      void this._tick();
    }, intervalMs);
    void this._tick(); // the first check now: a run that can be waited on is held from here
  }

  /** Stop checking the version. */
  stopPolling(): void {
    this._following?.dispose();
    this._following = null;
    if (this._timer !== null) {
      clearInterval(this._timer);
      this._timer = null;
    }
    if (this._again !== null) {
      clearTimeout(this._again);
      this._again = null;
    }
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this.stopPolling();
    Signal.clearData(this);
  }

  private async _tick(): Promise<void> {
    if (this._ticking || pageHidden()) {
      return; // the previous check is still waiting, or nobody can see the panel
    }
    this._ticking = true;
    try {
      await this.checkVersion();
    } finally {
      this._ticking = false;
    }
    // A run the server can wait on is asked again at once: the next check is held until
    // the run changes, so a change made anywhere shows without waiting for the interval.
    if (this._live && this._status === 'ready' && this._timer !== null) {
      this._again = setTimeout(() => {
        this._again = null;
        void this._tick();
      }, RELOOK_MS);
    }
  }

  /** Follow the shared watch of the current run (none while no notebook is selected). */
  private _follow(): void {
    this._following?.dispose();
    const path = this._path;
    const watches = this._watches;
    if (watches === null || this._disposed) {
      return;
    }
    const generation = this._generation;
    const listen = (answer: IRunVersion | null): void => {
      if (generation !== this._generation || this._disposed) {
        return;
      }
      if (answer === null) {
        void this.refresh(); // the server did not answer: say why, as a refresh finds it
        return;
      }
      void this._apply(answer);
    };
    // With no notebook there is nothing to watch, but the model stays "polling".
    this._following = path === null ? IDLE : watches.follow(path, listen);
  }

  private _requirePath(): string {
    if (this._path === null) {
      throw new RunApiError(400, 'no notebook is selected');
    }
    return this._path;
  }

  private _emit(): void {
    if (!this._disposed) {
      this._stateChanged.emit();
    }
  }

  private readonly _client: IRunClient;
  private readonly _watches: RunWatches | null;
  private _following: IDisposable | null = null;
  private readonly _stateChanged = new Signal<this, void>(this);
  private _path: string | null = null;
  private _status: RunModelStatus = 'empty';
  private _description: IRunDescription | null = null;
  private _copyOf: ICopyOf | null = null;
  private _error: string | null = null;
  private _notice: INotice | null = null;
  private _generation = 0;
  private _request = 0;
  private _timer: ReturnType<typeof setInterval> | null = null;
  private _again: ReturnType<typeof setTimeout> | null = null;
  private _ticking = false;
  private _live = true; // until the server says it cannot hold a check of this run
  private _disposed = false;
  private _approver: Promise<IApprover> | null = null;
}

/** What the model follows while polling with no notebook selected. */
const IDLE: IDisposable = { isDisposed: false, dispose: () => undefined };

function pageHidden(): boolean {
  return (
    typeof document !== 'undefined' && document.visibilityState === 'hidden'
  );
}

function describeFailure(reason: unknown): string {
  if (reason instanceof Error) {
    return reason.message;
  }
  return String(reason);
}
