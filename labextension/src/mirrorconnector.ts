/**
 * Keeps each open notebook's `metadata["skillnb"]` and cells' `metadata["skillnb"]` in
 * step with the kernel: registers the `skillnb.mirror` comm target on every notebook's
 * kernel (again after a kernel change; a restart keeps the registration) and reads the
 * `mirror` that skillnb outputs carry in their metadata as they arrive, so the mirror also
 * works when the comm is unavailable. The kernel never writes the open `.ipynb`; saving the notebook carries
 * the mirror.
 */
import type { ICellModel, ICodeCellModel } from '@jupyterlab/cells';
import type { INotebookModel, NotebookPanel } from '@jupyterlab/notebook';
import type { IOutputAreaModel } from '@jupyterlab/outputarea';
import type { Kernel, KernelMessage, Session } from '@jupyterlab/services';

import {
  applyMirrorMessage,
  applyOutputMirror,
  type IMetadataHolder,
  type IMirrorChange,
  type IMirrorTarget
} from './mirror';
import { COMM_TARGET } from './tokens';
import { parseMirrorMessage } from './parse';
import type { IOutputBundle, ISuggestion } from './types';

/** Called after the mirror of the notebook at `path` changed. */
export type MirrorActivity = (path: string, change: IMirrorChange) => void;

/** Called with the suggestions a comm message carried for the notebook at `path`. */
export type SuggestionsArrived = (
  path: string,
  suggestions: ISuggestion[]
) => void;

/** Mirrors one notebook panel. Disposed with the panel. */
export class NotebookMirror {
  /**
   * @param panel the notebook panel to keep in step
   * @param onActivity told after each applied message (the panel refreshes on it)
   * @param onSuggestions told the keep-suggestions a message carried (the panel shows them)
   */
  constructor(
    panel: NotebookPanel,
    onActivity: MirrorActivity,
    onSuggestions: SuggestionsArrived | null = null
  ) {
    this._panel = panel;
    this._onActivity = onActivity;
    this._onSuggestions = onSuggestions;
    panel.sessionContext.kernelChanged.connect(this._onKernelChanged, this);
    this._attachKernel(panel.sessionContext.session?.kernel ?? null);
    void panel.context.ready.then(() => this._watchModel());
    panel.disposed.connect(() => this._attachKernel(null));
  }

  /** Apply a comm message's data (also used by the Resume command's outputs). */
  applyMessage(data: unknown): void {
    const model = this._panel.content.model;
    if (model === null) {
      return;
    }
    const change = applyMirrorMessage(targetOf(model), data);
    const suggestions = parseMirrorMessage(data)?.suggestions ?? null;
    if (suggestions !== null && this._onSuggestions !== null) {
      this._onSuggestions(this._panel.context.path, suggestions);
    }
    this._report(change);
  }

  /** Apply the mirror carried by an output (its metadata), for `cell` (or none). */
  applyOutput(cell: ICellModel | null, output: IOutputBundle): void {
    const model = this._panel.content.model;
    if (model === null) {
      return;
    }
    this._report(applyOutputMirror(model, cell, output.data, output.metadata));
  }

  private _report(change: IMirrorChange | null): void {
    if (change !== null) {
      this._onActivity(this._panel.context.path, change);
    }
  }

  private _onKernelChanged(
    _sender: unknown,
    args: Session.ISessionConnection.IKernelChangedArgs
  ): void {
    this._attachKernel(args.newValue);
  }

  private _attachKernel(kernel: Kernel.IKernelConnection | null): void {
    if (this._kernel === kernel) {
      return;
    }
    if (this._kernel !== null && !this._kernel.isDisposed) {
      this._kernel.removeCommTarget(COMM_TARGET, this._onCommOpen);
      this._kernel.statusChanged.disconnect(this._onStatus, this);
    }
    if (this._kernel !== null) {
      this._dropSuggestions(); // they were the old kernel's values
    }
    this._kernel = kernel;
    if (kernel !== null && !kernel.isDisposed) {
      kernel.registerCommTarget(COMM_TARGET, this._onCommOpen);
      kernel.statusChanged.connect(this._onStatus, this);
    }
  }

  /** A kernel that restarts or dies takes what it had on offer along. */
  private _onStatus(_kernel: unknown, status: Kernel.Status): void {
    if (
      status === 'restarting' ||
      status === 'autorestarting' ||
      status === 'dead'
    ) {
      this._dropSuggestions();
    }
  }

  private _dropSuggestions(): void {
    if (this._onSuggestions !== null && !this._panel.isDisposed) {
      this._onSuggestions(this._panel.context.path, []);
    }
  }

  private readonly _onCommOpen = (
    comm: Kernel.IComm,
    msg: KernelMessage.ICommOpenMsg
  ): void => {
    this.applyMessage(msg.content.data);
    comm.onMsg = (message: KernelMessage.ICommMsgMsg) => {
      this.applyMessage(message.content.data);
    };
  };

  private _watchModel(): void {
    const model = this._panel.content.model;
    if (model === null || this._panel.isDisposed) {
      return;
    }
    for (const cell of model.cells) {
      this._watchCell(cell);
    }
    model.cells.changed.connect((_list, args) => {
      if (args.type === 'add' || args.type === 'set') {
        for (const cell of args.newValues) {
          this._watchCell(cell);
        }
      }
    });
  }

  private _watchCell(cell: ICellModel): void {
    // A type check rather than `isCodeCellModel`, so this module needs no runtime import
    // from @jupyterlab/cells (and runs in unit tests without a DOM).
    if (cell.type !== 'code' || this._watched.has(cell)) {
      return;
    }
    this._watched.add(cell);
    (cell as ICodeCellModel).outputs.changed.connect(
      (_outputs: IOutputAreaModel, args: IOutputAreaModel.ChangedArgs) => {
        if (args.type !== 'add' && args.type !== 'set') {
          return;
        }
        for (const output of args.newValues) {
          this.applyOutput(cell, output);
        }
      }
    );
  }

  private readonly _panel: NotebookPanel;
  private readonly _onActivity: MirrorActivity;
  private readonly _onSuggestions: SuggestionsArrived | null;
  private readonly _watched = new WeakSet<ICellModel>();
  private _kernel: Kernel.IKernelConnection | null = null;
}

function targetOf(model: INotebookModel): IMirrorTarget {
  return {
    notebook: model,
    findCell(cellId: string): IMetadataHolder | null {
      for (const cell of model.cells) {
        if (cell.id === cellId) {
          return cell;
        }
      }
      return null;
    }
  };
}
