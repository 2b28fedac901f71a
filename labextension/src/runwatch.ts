/**
 * `RunWatches`: one check of a run's version at a time per notebook, shared by whoever
 * follows that run (the side panel's model, the saved views of the notebook). A run the
 * server can wait on is long-polled (`GET /skillnb/api/version?after=V&wait=S`, held until
 * the run changes); one it cannot is asked every `fallbackMs`. A watch runs while someone
 * follows it and the page is visible, whether or not the side panel is open, and stops when
 * the last follower leaves. Followers hear each answer that differs from the last one.
 */
import type { IDisposable } from '@lumino/disposable';

import type { IRunVersion } from './types';

/** What a watch needs from the server. */
export interface IVersionClient {
  version(path: string, after?: number, waitS?: number): Promise<IRunVersion>;
}

/** Told each new answer about the run (`null`: the server did not answer). */
export type VersionListener = (answer: IRunVersion | null) => void;

/** How the watches ask. */
export interface IWatchOptions {
  /** How long the server may hold a check (seconds). */
  waitS: number;
  /** Between two checks of a run the server cannot wait on, or after a failure (ms). */
  fallbackMs: number;
  /** The pause between two held checks (ms): a server that answers at once is not hammered. */
  relookMs: number;
}

const DEFAULTS: IWatchOptions = { waitS: 20, fallbackMs: 2000, relookMs: 50 };

/** The watches of every followed run, by notebook path. */
export class RunWatches implements IDisposable {
  constructor(client: IVersionClient, options: Partial<IWatchOptions> = {}) {
    this._client = client;
    this._options = { ...DEFAULTS, ...options };
  }

  /** True after `dispose()`. */
  get isDisposed(): boolean {
    return this._disposed;
  }

  /** How many runs are being watched now. */
  get size(): number {
    return this._watches.size;
  }

  /** The last answer about `path`'s run (`undefined`: not watched, or not answered yet). */
  last(path: string): IRunVersion | null | undefined {
    return this._watches.get(path)?.last;
  }

  /**
   * Follow the run of `path`: `listener` hears each new answer (the last one known first,
   * when there is one). Dispose the result to stop.
   */
  follow(path: string, listener: VersionListener): IDisposable {
    let watch = this._watches.get(path);
    if (watch === undefined) {
      watch = new Watch(path, this._client, this._options, () =>
        this._watches.delete(path)
      );
      this._watches.set(path, watch);
    }
    return watch.add(listener);
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._watches.forEach(watch => watch.stop());
    this._watches.clear();
  }

  private readonly _client: IVersionClient;
  private readonly _options: IWatchOptions;
  private readonly _watches = new Map<string, Watch>();
  private _disposed = false;
}

/** One run's checks, asked in a loop while it has followers. */
class Watch {
  constructor(
    readonly path: string,
    private readonly _client: IVersionClient,
    private readonly _options: IWatchOptions,
    private readonly _ended: () => void
  ) {}

  /** The last answer (`undefined`: none yet). */
  last: IRunVersion | null | undefined = undefined;

  add(listener: VersionListener): IDisposable {
    this._listeners.add(listener);
    if (this.last !== undefined) {
      listener(this.last);
    }
    if (!this._running) {
      this._running = true;
      void this._loop();
    }
    let disposed = false;
    return {
      get isDisposed() {
        return disposed;
      },
      dispose: () => {
        disposed = true;
        this._listeners.delete(listener);
        if (!this._listeners.size) {
          this.stop();
        }
      }
    };
  }

  stop(): void {
    this._stopped = true;
    this._listeners.clear();
    clearTimeout(this._pause);
    this._wake?.();
    this._ended();
  }

  private async _loop(): Promise<void> {
    const { waitS, fallbackMs, relookMs } = this._options;
    while (!this._stopped) {
      if (pageHidden()) {
        await this._sleep(fallbackMs); // nobody can see the run: ask when they can
        continue;
      }
      const last = this.last;
      // Held checks from the first answer on; a server that cannot hold one says so (a held
      // check answered without `live`), and the run is then asked every `fallbackMs`.
      const held = this._canHold && typeof last?.version === 'number';
      let answer: IRunVersion | null;
      try {
        answer = held
          ? await this._client.version(this.path, last?.version ?? 0, waitS)
          : await this._client.version(this.path);
      } catch {
        answer = null;
      }
      if (this._stopped) {
        break;
      }
      if (held) {
        this._canHold = answer?.live === true;
      }
      this.last = answer;
      if (last === undefined || !same(answer, last)) {
        [...this._listeners].forEach(listener => listener(answer));
      }
      const next = this._canHold && typeof answer?.version === 'number';
      await this._sleep(next ? relookMs : fallbackMs);
    }
  }

  private _sleep(ms: number): Promise<void> {
    return new Promise(resolve => {
      this._wake = resolve;
      this._pause = setTimeout(resolve, ms);
    });
  }

  private readonly _listeners = new Set<VersionListener>();
  private _running = false;
  private _canHold = true; // until a held check comes back without `live`
  private _stopped = false;
  private _pause: ReturnType<typeof setTimeout> | undefined = undefined;
  private _wake: (() => void) | null = null;
}

function same(a: IRunVersion | null, b: IRunVersion | null): boolean {
  if (a === null || b === null) {
    return a === b;
  }
  return (
    a.exists === b.exists &&
    a.version === b.version &&
    Boolean(a.copy_of) === Boolean(b.copy_of)
  );
}

function pageHidden(): boolean {
  return (
    typeof document !== 'undefined' && document.visibilityState === 'hidden'
  );
}
