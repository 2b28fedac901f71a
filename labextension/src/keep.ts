/**
 * Keep-suggestions: what the kernel suggests keeping after each cell (sent on the
 * `skillnb.mirror` comm), held per notebook until kept or replaced, and the Keep action,
 * which runs `%formalize NAME --kind KIND` silently in the notebook's kernel. The ranking
 * and the keeping are the kernel's; this file only holds the list and sends the request.
 */
import type { Kernel } from '@jupyterlab/services';
import { Signal, type ISignal } from '@lumino/signaling';

import type { ISuggestion } from './types';

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const KIND = /^[a-z_]+$/;

/**
 * The code that keeps `suggestion`, or null when its name or kind is not one a magic line
 * can carry as is (a Python identifier, a lower-case kind): nothing else is sent.
 */
export function keepCode(suggestion: ISuggestion): string | null {
  if (!NAME.test(suggestion.name) || !KIND.test(suggestion.kind)) {
    return null;
  }
  return `%formalize ${suggestion.name} --kind ${suggestion.kind}`;
}

/** The latest suggestions of each open notebook, by path. */
export class KeepSuggestions {
  /** Emits the path whose suggestions changed. */
  get changed(): ISignal<this, string> {
    return this._changed;
  }

  /** The suggestions shown for `path` (empty when none). */
  get(path: string | null): readonly ISuggestion[] {
    return path === null ? [] : (this._byPath.get(path) ?? []);
  }

  /** A cell's suggestions replace the previous cell's (an empty list clears them). */
  replace(path: string, suggestions: readonly ISuggestion[]): void {
    const before = this.get(path);
    if (!suggestions.length && !before.length) {
      return;
    }
    if (suggestions.length) {
      this._byPath.set(path, [...suggestions]);
    } else {
      this._byPath.delete(path);
    }
    this._changed.emit(path);
  }

  /** Drop the suggestion of `name` (it was kept). */
  remove(path: string, name: string): void {
    const before = this.get(path);
    const after = before.filter(s => s.name !== name);
    if (after.length !== before.length) {
      this.replace(path, after);
    }
  }

  private readonly _byPath = new Map<string, ISuggestion[]>();
  private readonly _changed = new Signal<this, string>(this);
}

/** The part of a kernel connection Keep needs. */
export type IKeepKernel = Pick<Kernel.IKernelConnection, 'requestExecute'>;

/** What a Keep did. */
export interface IKeepResult {
  ok: boolean;
  /** Why it failed (the kernel's error, or the refusal of an odd name). */
  error: string;
}

/**
 * Keep `suggestion` of the notebook at `path`: run its `%formalize` in `kernel` (silent, out
 * of the history) and, when the kernel answers ok, drop it from `store`.
 */
export async function keepSuggestion(
  kernel: IKeepKernel,
  store: KeepSuggestions,
  path: string,
  suggestion: ISuggestion
): Promise<IKeepResult> {
  const code = keepCode(suggestion);
  if (code === null) {
    return {
      ok: false,
      error: `"${suggestion.name}" (${suggestion.kind}) cannot be kept from the panel: use %formalize in a cell`
    };
  }
  const future = kernel.requestExecute({
    code,
    silent: true,
    store_history: false,
    allow_stdin: false,
    stop_on_error: false
  });
  const reply = await future.done;
  const content = reply.content as unknown as { [key: string]: unknown };
  if (content.status !== 'ok') {
    const error = [content.ename, content.evalue]
      .filter(v => typeof v === 'string' && v)
      .join(': ');
    return { ok: false, error: error || 'the kernel refused it' };
  }
  store.remove(path, suggestion.name);
  return { ok: true, error: '' };
}
