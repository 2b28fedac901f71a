/**
 * Test doubles: an in-memory `IRunClient` and a metadata holder.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

import { RunApiError, type IApprover, type IRunClient } from '../src/api';
import { parseDescription } from '../src/parse';
import type {
  ICopyOf,
  IDecisionResult,
  IMilestoneResult,
  IRunDescription,
  IRunVersion
} from '../src/types';

/**
 * The golden `run.describe()`: a real run with every section filled, written by
 * `tests/golden_view.py` and checked by pytest against the pydantic models of the contract.
 */
export const GOLDEN_PATH = resolve(
  __dirname,
  '..',
  '..',
  '..',
  'tests',
  'fixtures',
  'describe.json'
);

/** A fresh copy of the golden description (as the server sends it: unparsed JSON). */
export function golden(): unknown {
  return JSON.parse(readFileSync(GOLDEN_PATH, 'utf-8')) as unknown;
}

/** The golden description, with `overrides`. */
export function description(
  overrides: Partial<IRunDescription> = {}
): IRunDescription {
  return { ...parseDescription(golden()), ...overrides };
}

/** One call made to the fake client. */
export interface ICall {
  method: string;
  args: unknown[];
}

/** An in-memory server: runs by path; answers can be delayed by hand. */
export class FakeClient implements IRunClient {
  runs = new Map<string, IRunDescription>();
  /** Paths whose runs live in a team store (their version checks may be held). */
  live = new Set<string>();
  /** Paths of copies of notebooks holding their run: what the server says of them. */
  copies = new Map<string, ICopyOf>();
  calls: ICall[] = [];
  failWith: Error | null = null;
  /** When set, `describe` waits for this promise before answering. */
  gate: Promise<void> | null = null;

  async describe(path: string): Promise<IRunDescription> {
    this.calls.push({ method: 'describe', args: [path] });
    const run = this.runs.get(path);
    if (this.gate !== null) {
      await this.gate;
    }
    if (this.failWith !== null) {
      throw this.failWith;
    }
    if (run === undefined) {
      throw new RunApiError(404, `no SKILL.nb run for ${path}`);
    }
    return structuredClone(run);
  }

  async version(
    path: string,
    after?: number,
    waitS?: number
  ): Promise<IRunVersion> {
    this.calls.push({
      method: 'version',
      args: after === undefined ? [path] : [path, String(after), String(waitS)]
    });
    if (this.failWith !== null) {
      throw this.failWith;
    }
    const run = this.runs.get(path);
    const copy = this.copies.get(path);
    if (run === undefined && copy !== undefined) {
      return { exists: false, version: null, copy_of: structuredClone(copy) };
    }
    if (run === undefined) {
      return { exists: false, version: null };
    }
    // As the server: only a held check says whether the run can be waited on.
    return after === undefined
      ? { exists: true, version: run.version }
      : { exists: true, version: run.version, live: this.live.has(path) };
  }

  async approve(
    path: string,
    gate: string,
    note?: string
  ): Promise<IDecisionResult> {
    this.calls.push({ method: 'approve', args: [path, gate, note] });
    return this._decide(path, gate);
  }

  async reject(
    path: string,
    gate: string,
    note?: string
  ): Promise<IDecisionResult> {
    this.calls.push({ method: 'reject', args: [path, gate, note] });
    return this._decide(path, gate);
  }

  async milestone(path: string, name: string): Promise<IMilestoneResult> {
    this.calls.push({ method: 'milestone', args: [path, name] });
    const run = this._require(path);
    run.version += 1;
    run.milestones.push({ name, seq: run.version, state: run.state, at: null });
    return {
      version: run.version,
      event: { seq: run.version, type: 'milestone' }
    };
  }

  async identity(): Promise<IApprover> {
    this.calls.push({ method: 'identity', args: [] });
    if (this.failWith !== null) {
      throw this.failWith;
    }
    return { ...this.approver };
  }

  /** What `identity()` answers. */
  approver: IApprover = { name: 'ada', display_name: 'Ada', source: 'server' };

  count(method: string): number {
    return this.calls.filter(c => c.method === method).length;
  }

  private _decide(path: string, gate: string): IDecisionResult {
    const run = this._require(path);
    if (!run.pending.some(p => p.gate === gate)) {
      throw new RunApiError(409, `no pending approval for gate '${gate}'`);
    }
    run.pending = run.pending.filter(p => p.gate !== gate);
    run.version += 1;
    return { version: run.version };
  }

  private _require(path: string): IRunDescription {
    const run = this.runs.get(path);
    if (run === undefined) {
      throw new RunApiError(404, `no SKILL.nb run for ${path}`);
    }
    return run;
  }
}

/** A metadata holder like JupyterLab 4's notebook and cell models. */
export class Holder {
  metadata: { [key: string]: unknown } = {};
  writes = 0;

  getMetadata(key: string): unknown {
    return this.metadata[key];
  }

  setMetadata(key: string, value: unknown): void {
    this.metadata[key] = value;
    this.writes += 1;
  }
}

/** Just enough of a DOM element for `h` and the sections (node has no DOM). */
export class FakeElement {
  className = '';
  title = '';
  disabled = false;
  dataset: { [key: string]: string } = {};
  attributes: { [name: string]: string } = {};
  children: FakeElement[] = [];
  private _text = '';
  private _listeners = new Map<string, (() => void)[]>();

  constructor(readonly tagName: string) {}

  get textContent(): string {
    return this._text + this.children.map(c => c.textContent).join('');
  }

  set textContent(value: string) {
    this._text = value;
    this.children = [];
  }

  setAttribute(name: string, value: string): void {
    this.attributes[name] = value;
  }

  appendChild(child: FakeElement): FakeElement {
    this.children.push(child);
    return child;
  }

  addEventListener(type: string, listener: () => void): void {
    this._listeners.set(type, [...(this._listeners.get(type) ?? []), listener]);
  }

  click(): void {
    for (const listener of this._listeners.get('click') ?? []) {
      listener();
    }
  }

  /** Every element below this one (depth first) that `test` accepts. */
  findAll(test: (el: FakeElement) => boolean): FakeElement[] {
    return this.children.flatMap(c => [
      ...(test(c) ? [c] : []),
      ...c.findAll(test)
    ]);
  }
}

/** Install a `document` that builds `FakeElement`s (once per test process). */
export function installFakeDocument(): void {
  (globalThis as { document?: unknown }).document = {
    createElement: (tag: string) => new FakeElement(tag)
  };
}

/** What the server says of `report-Copy1.ipynb`, a copy of `report.ipynb`. */
export const COPY_OF: ICopyOf = {
  text: "This notebook is a copy of report.ipynb; the run shown is the original's",
  original: 'report.ipynb',
  run_id: 'run-1',
  fork_from: '%skillnb fork-from report.ipynb',
  fork: 'skillnb fork report.ipynb report-Copy1.ipynb',
  new_run: '%skillnb new-run'
};
