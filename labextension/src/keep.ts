/**
 * Keep-suggestions: what the kernel has on offer (sent on the `skillnb.mirror` comm after
 * each cell and each keep, as the whole list), held per notebook until the kernel sends
 * another list, and the Keep action, which runs `%formalize NAME --kind KIND` silently in the
 * notebook's kernel. The ranking, the keeping and when a suggestion is withdrawn are the
 * kernel's; this file only holds the list it sent and sends the request.
 */
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import { Signal, type ISignal } from '@lumino/signaling';

import { isObject, parseBundle } from './parse';
import { MIME_TYPE } from './tokens';
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
  return `%formalize ${suggestion.name} --kind ${suggestion.kind} --tell-kept`;
}

/** The suggestions each open notebook's kernel has on offer, by path. */
export class KeepSuggestions {
  /** Emits the path whose suggestions changed. */
  get changed(): ISignal<this, string> {
    return this._changed;
  }

  /** The suggestions shown for `path` (empty when none). */
  get(path: string | null): readonly ISuggestion[] {
    return path === null ? [] : (this._byPath.get(path) ?? []);
  }

  /** The kernel's list replaces the one shown (an empty list clears it). */
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
  /**
   * What the kernel said when it wrote nothing ("budget is already kept as v1 with this
   * value"); empty when it kept a new version.
   */
  info: string;
}

/** The badge of a SKILL.nb output that wrote nothing (status `restored`), or null. */
function unchangedBadge(msg: KernelMessage.IIOPubMessage): string | null {
  if (msg.header.msg_type !== 'display_data') {
    return null;
  }
  const data = (msg.content as { data?: unknown }).data;
  const bundle = isObject(data) ? parseBundle(data[MIME_TYPE]) : null;
  return bundle !== null && bundle.status === 'restored' ? bundle.badge : null;
}

/**
 * Keep `suggestion`: run its `%formalize` in `kernel` (silent, out of the history). The
 * kernel then sends the suggestions still on offer, without this one; the list shown is
 * never changed here.
 */
export async function keepSuggestion(
  kernel: IKeepKernel,
  suggestion: ISuggestion
): Promise<IKeepResult> {
  const code = keepCode(suggestion);
  if (code === null) {
    return {
      ok: false,
      error: `"${suggestion.name}" (${suggestion.kind}) cannot be kept from the panel: use %formalize in a cell`,
      info: ''
    };
  }
  const future = kernel.requestExecute({
    code,
    silent: true,
    store_history: false,
    allow_stdin: false,
    stop_on_error: false
  });
  let info = '';
  future.onIOPub = msg => {
    info = unchangedBadge(msg) ?? info;
  };
  const reply = await future.done;
  const content = reply.content as unknown as { [key: string]: unknown };
  if (content.status !== 'ok') {
    const error = [content.ename, content.evalue]
      .filter(v => typeof v === 'string' && v)
      .join(': ');
    return { ok: false, error: error || 'the kernel refused it', info: '' };
  }
  return { ok: true, error: '', info };
}
