/**
 * The Resume action: runs `%load_ext skillnb` (only when not loaded yet) and `%resume` in
 * the notebook's kernel, silently (no cell is added to the notebook), and gathers what the
 * kernel printed so the panel can show it. The magic does the work; this file only sends
 * the request and collects the replies.
 */
import type { Kernel, KernelMessage } from '@jupyterlab/services';

import { isObject, parseBundle } from './parse';
import { MIME_TYPE } from './tokens';
import type { IOutputBundle } from './types';

/**
 * The code sent to the kernel. It loads the extension only when needed (no "already
 * loaded" message) with its banner captured, since `%resume` reports the same and more,
 * and it leaves no new name in the user's namespace. Errors still surface.
 */
export const RESUME_CODE = [
  "if 'skillnb' not in get_ipython().extension_manager.loaded:",
  "    with __import__('IPython.utils.capture', fromlist=['capture_output']).capture_output():",
  "        get_ipython().run_line_magic('load_ext', 'skillnb')",
  "get_ipython().run_line_magic('resume', '')"
].join('\n');

/** What Resume produced. */
export interface IResumeResult {
  /** `ok`, or `error` when the kernel raised. */
  status: 'ok' | 'error';
  /** Everything the kernel printed, as plain text. */
  text: string;
  /** The badge texts of the skillnb outputs, in order. */
  badges: string[];
  /** The skillnb outputs, data and metadata (the caller applies their mirrors). */
  outputs: IOutputBundle[];
}

/** Gathers the iopub messages of one execution. */
export class OutputCollector {
  /** Take one iopub message. */
  add(msg: KernelMessage.IIOPubMessage): void {
    const content = msg.content as { [key: string]: unknown };
    switch (msg.header.msg_type) {
      case 'stream':
        this._parts.push(typeof content.text === 'string' ? content.text : '');
        break;
      case 'display_data':
      case 'execute_result':
      case 'update_display_data':
        this._addOutput(content.data, content.metadata);
        break;
      case 'error':
        this._error = true;
        this._parts.push(
          `${String(content.ename)}: ${String(content.evalue)}\n`
        );
        break;
      default:
        break;
    }
  }

  /** The result so far; `failed` marks an error reply. */
  result(failed = false): IResumeResult {
    return {
      status: failed || this._error ? 'error' : 'ok',
      text: this._parts.join('').replace(/\n+$/, ''),
      badges: [...this._badges],
      outputs: [...this._outputs]
    };
  }

  private _addOutput(data: unknown, metadata: unknown): void {
    if (!isObject(data)) {
      return;
    }
    const plain = data['text/plain'];
    if (typeof plain === 'string') {
      this._parts.push(plain.endsWith('\n') ? plain : `${plain}\n`);
    }
    const skillnb = parseBundle(data[MIME_TYPE]);
    if (skillnb !== null) {
      this._badges.push(skillnb.badge);
      this._outputs.push({
        data,
        metadata: isObject(metadata) ? metadata : {}
      });
    }
  }

  private readonly _parts: string[] = [];
  private readonly _badges: string[] = [];
  private readonly _outputs: IOutputBundle[] = [];
  private _error = false;
}

/** The part of a kernel connection Resume needs. */
export type IExecutingKernel = Pick<Kernel.IKernelConnection, 'requestExecute'>;

/** Run Resume in `kernel` and return what it printed. */
export async function resumeInKernel(
  kernel: IExecutingKernel
): Promise<IResumeResult> {
  const collector = new OutputCollector();
  const future = kernel.requestExecute({
    code: RESUME_CODE,
    silent: false,
    store_history: false,
    allow_stdin: false,
    stop_on_error: true
  });
  future.onIOPub = msg => collector.add(msg);
  const reply = await future.done;
  return collector.result(reply.content.status !== 'ok');
}
