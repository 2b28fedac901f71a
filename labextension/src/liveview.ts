/**
 * Run views that stay readable: the kernel's live ipywidgets view when its widget model
 * is there, else the `text/html` the kernel saved beside it in the same output.
 *
 * A run view's output carries `application/vnd.jupyter.widget-view+json`, `text/html`,
 * `text/plain` and the marker `application/vnd.skillnb.view+json`. On its own, ipywidgets'
 * renderer says "Error displaying widget: model not found" after a reload whenever the
 * widget's model is gone (a new kernel, no kernel, state not saved). The renderer here
 * takes the marker (ranked ahead of ipywidgets), asks the notebook's own rendermime for
 * both renderers, and shows the live widget once it is on screen, the fallback otherwise.
 * Outputs rendered before the kernel's widget manager existed are tried again when the
 * session becomes ready or its kernel changes. Nothing is parsed here: the HTML goes
 * through JupyterLab's HTML renderer (sanitized unless the output is trusted).
 *
 * The kernel keeps the saved fallback current: after each change of the run it sends
 * `{v: 1, models: [widget model ids], data: {'text/html', 'text/plain'}}` on the comm
 * target `skillnb.view`, and the outputs of those widgets take the new data (so a notebook
 * saved later shows the run as it is, not as it was when the view was displayed).
 *
 * A saved view is marked "as of v38, 14:02" (its run id and version in `data-skillnb-*`
 * attributes, see `asof.ts`). When the fallback is shown (no kernel, or one without the
 * widget's model), the view is brought up to date from the server's routes: the run's view
 * as it is now (`GET /skillnb/api/view`) replaces the saved HTML on screen (not in the
 * notebook: opening a notebook does not change it), and a line says so ("Current: as of
 * v43, 14:10 …"). When that route fails, the version route says whether the run moved on
 * ("Saved at v38, 14:02; the run is now at v43."), so no stale view passes for current.
 * While such views are on screen they follow the run's shared watch (`runwatch.ts`: the one
 * long poll of the run, which the side panel's model follows too), and a view whose run
 * moved on is brought up to date again.
 */
import type {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import type { IDisposable } from '@lumino/disposable';
import { Panel, Widget } from '@lumino/widgets';

import { syncPressed } from './pressed';
import {
  askRun,
  parseAsOf,
  verdict,
  type IVerdict,
  type IViewSource
} from './asof';
import { ServerRunClient } from './request';
import { RunWatches, type VersionListener } from './runwatch';
import { parseSavedViews } from './savedviews';
import { ISkillnbPanel, PLUGIN_IDS } from './tokens';

/** The comm target of the views' fresh fallbacks. */
export const VIEW_TARGET = 'skillnb.view';
/** The marker MIME type of a run view's output. */
export const VIEW_MIME_TYPE = 'application/vnd.skillnb.view+json';
/** ipywidgets' MIME type. */
export const WIDGET_MIME_TYPE = 'application/vnd.jupyter.widget-view+json';
/** Ahead of ipywidgets' renderer (-10). */
export const VIEW_RANK = -20;
/** How long a live widget may take to appear before the fallback is shown. */
export const GRACE_MS = 1000;
/** CSS class of the renderer's node; `data-skillnb-view` is `pending`, `live` or `fallback`. */
export const LIVE_VIEW_CLASS = 'jp-skillnb-live-view';

/** CSS class of the line that says whether a saved view is current. */
export const FRESHNESS_CLASS = 'jp-skillnb-freshness';

/** What the renderer needs from a rendermime registry. */
export interface IRendererSource {
  createRenderer(mimeType: string): IRenderMime.IRenderer;
}

type Shown = 'pending' | 'live' | 'fallback';

/** Shows a run view live, or its saved HTML. */
export class LiveViewRenderer extends Panel implements IRenderMime.IRenderer {
  /**
   * @param source the notebook's rendermime (the live and the fallback renderers)
   * @param hasModel whether the notebook's kernel holds a widget model: a live widget is
   *   tried only then, so a missing one costs no "widget model not found" in the console
   * @param runs the server's routes for the notebook's run: a saved view shown as the
   *   fallback is brought up to date from them (none: the saved view stays as saved)
   * @param followed called once the view knows the run's version (then it follows the run)
   */
  constructor(
    source: IRendererSource,
    hasModel: (id: string) => boolean = () => true,
    runs: IViewSource | null = null,
    followed: () => void = () => undefined
  ) {
    super();
    this._source = source;
    this._hasModel = hasModel;
    this._runs = runs;
    this._onFollowed = followed;
    this.addClass(LIVE_VIEW_CLASS);
    this._show('pending');
  }

  /** What is on screen. */
  get shown(): Shown {
    return (this.node.dataset.skillnbView as Shown | undefined) ?? 'pending';
  }

  /** The ipywidgets model id of the view shown ('' when none). */
  get modelId(): string {
    return widgetId(this._model);
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    if (this.isDisposed) {
      // An output re-rendered after its cell was cleared or the notebook closed.
      return;
    }
    const same = widgetId(model) === this.modelId && this._liveOnScreen();
    this._model = model;
    if (same) {
      // New saved data for the widget on screen: only the fallback changes.
      await this._fallback?.renderModel(model);
      return;
    }
    this._graceOver = false;
    this._reset();
    this._fallback?.dispose();
    this._fallback = null;
    this._forget();
    if (model.data['text/html'] !== undefined) {
      const fallback = this._source.createRenderer('text/html');
      conceal(fallback, true);
      this._fallback = fallback;
      this.addWidget(fallback);
      await fallback.renderModel(model);
      if (this.isDisposed) {
        return;
      }
    }
    window.clearTimeout(this._timer);
    this._timer = window.setTimeout(() => {
      this._graceOver = true;
      this._settle();
    }, GRACE_MS);
    await this.retry();
  }

  /** Render the live widget again unless it is on screen (e.g. the manager is there now). */
  async retry(): Promise<void> {
    const model = this._model;
    if (model === null || this.isDisposed || this._liveOnScreen()) {
      return;
    }
    this._reset();
    if (
      model.data[WIDGET_MIME_TYPE] === undefined ||
      !this._hasModel(this.modelId)
    ) {
      // No widget, or its model is not in this kernel (a new kernel, none, a copy): the
      // saved form now; tried again when the kernel changes or announces the model.
      this._graceOver = true;
      this._settle();
      return;
    }
    const live = this._source.createRenderer(WIDGET_MIME_TYPE);
    conceal(live, this.shown === 'fallback');
    this._live = live;
    this.addWidget(live);
    this._observer = new MutationObserver(() => this._settle());
    this._observer.observe(live.node, {
      childList: true,
      attributes: true,
      attributeFilter: ['class']
    });
    // The diagram/list toggle's pressed state, as ARIA (see pressed.ts).
    this._pressed = new MutationObserver(() => syncPressed(live.node));
    this._pressed.observe(live.node, {
      childList: true,
      subtree: true,
      attributes: true,
      attributeFilter: ['class']
    });
    await live.renderModel(model);
    syncPressed(live.node);
    this._settle();
  }

  /** Take the kernel's fresh fallback `data` into the output (kept when saved). */
  saveFallback(data: IRenderMime.IMimeModel['data']): void {
    const model = this._model;
    if (model === null || this.isDisposed) {
      return;
    }
    model.setData({ data: { ...model.data, ...data } });
  }

  /** The run's version when the server was last asked (`null`: not asked, or no answer). */
  get followedVersion(): number | null {
    return this._followed;
  }

  /** Bring a saved view shown as the fallback up to date from the run again. */
  async refreshFromRun(): Promise<void> {
    if (this.shown === 'fallback') {
      this._upgradedFor = null;
      await this._upgrade();
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    window.clearTimeout(this._timer);
    this._observer?.disconnect();
    this._pressed?.disconnect();
    super.dispose();
  }

  private _reset(): void {
    this._observer?.disconnect();
    this._observer = null;
    this._pressed?.disconnect();
    this._pressed = null;
    this._live?.dispose();
    this._live = null;
  }

  /** The ipywidgets renderer holds a widget view (not "Loading…", not an error). */
  private _liveOnScreen(): boolean {
    const live = this._live;
    return (
      live !== null &&
      !live.isDisposed &&
      live.node.firstElementChild !== null &&
      !live.node.classList.contains('lm-mod-hidden')
    );
  }

  /** ipywidgets gave up (it marks its node `jupyter-widgets` with an error text). */
  private _liveFailed(): boolean {
    const live = this._live;
    return (
      live === null ||
      live.isDisposed ||
      live.node.classList.contains('lm-mod-hidden') ||
      (live.node.firstElementChild === null &&
        live.node.classList.contains('jupyter-widgets'))
    );
  }

  private _settle(): void {
    if (this.isDisposed) {
      return;
    }
    if (this._liveOnScreen()) {
      this._show('live');
    } else if (this._graceOver || this._liveFailed()) {
      this._show(this._fallback === null ? 'live' : 'fallback');
    }
  }

  private _show(what: Shown): void {
    this.node.dataset.skillnbView = what;
    if (this._live !== null) {
      conceal(this._live, what === 'fallback');
    }
    if (this._fallback !== null) {
      conceal(this._fallback, what !== 'fallback');
    }
    if (this._note !== null) {
      conceal(this._note, what !== 'fallback');
    }
    if (what === 'fallback' && this._upgradedFor !== this._model) {
      void this._upgrade();
    }
  }

  /** Show the run as it is now in place of the saved view (or say why not). */
  private async _upgrade(): Promise<void> {
    const model = this._model;
    const fallback = this._fallback;
    if (model === null || fallback === null || this._runs === null) {
      return;
    }
    this._upgradedFor = model;
    const saved = parseAsOf(model.data['text/html']);
    if (saved === null || saved.kind !== 'run') {
      // Saved before views were marked, or a widget's form (marked, not a view to replace).
      return;
    }
    const live = await askRun(this._runs);
    if (
      this.isDisposed ||
      this._model !== model ||
      this._fallback !== fallback
    ) {
      return;
    }
    this._followed = live.view?.version ?? live.version ?? null;
    if (this._followed !== null) {
      this._onFollowed();
    }
    const said = verdict(saved, live);
    if (said.html !== null) {
      await fallback.renderModel({
        trusted: model.trusted,
        metadata: model.metadata,
        data: {
          ...model.data,
          'text/html': said.html,
          'text/plain': said.plain ?? ''
        },
        setData: () => undefined
      });
      if (this.isDisposed || this._fallback !== fallback) {
        return;
      }
    }
    this._say(said);
  }

  private _say(said: IVerdict): void {
    let note = this._note;
    if (note === null) {
      note = new Widget();
      note.node.setAttribute('role', 'status');
      this._note = note;
      this.insertWidget(0, note);
    }
    note.node.className = `${FRESHNESS_CLASS} ${FRESHNESS_CLASS}-${said.freshness}`;
    note.node.textContent = said.text;
    conceal(note, this.shown !== 'fallback');
    this.node.dataset.skillnbFreshness = said.freshness;
    this.node.dataset.skillnbShownVersion = String(said.version);
  }

  /** Drop what was said about the last saved view. */
  private _forget(): void {
    this._note?.dispose();
    this._note = null;
    this._upgradedFor = null;
    this._followed = null;
    delete this.node.dataset.skillnbFreshness;
    delete this.node.dataset.skillnbShownVersion;
  }

  private readonly _source: IRendererSource;
  private readonly _hasModel: (id: string) => boolean;
  private readonly _runs: IViewSource | null;
  private readonly _onFollowed: () => void;
  private _note: Widget | null = null;
  private _upgradedFor: IRenderMime.IMimeModel | null = null;
  private _followed: number | null = null;
  private _model: IRenderMime.IMimeModel | null = null;
  private _fallback: IRenderMime.IRenderer | null = null;
  private _live: IRenderMime.IRenderer | null = null;
  private _observer: MutationObserver | null = null;
  private _pressed: MutationObserver | null = null;
  private _timer = 0;
  private _graceOver = false;
}

/** The widget model id in an output's data ('' when none). */
function widgetId(model: IRenderMime.IMimeModel | null): string {
  const data = model?.data[WIDGET_MIME_TYPE] as
    { model_id?: unknown } | undefined;
  return typeof data?.model_id === 'string' ? data.model_id : '';
}

/**
 * Take `widget` out of the layout or put it back. Not lumino's `hide()`: ipywidgets hides
 * its renderer when the widget is closed, and that must stay tellable apart.
 */
function conceal(widget: Widget, concealed: boolean): void {
  widget.node.style.display = concealed ? 'none' : '';
}

/** The comm target of ipywidgets' models. */
const WIDGET_TARGET = 'jupyter.widget';

/**
 * The widget models a notebook's kernel holds: those it had when the notebook connected
 * (asked with `comm_info`), then each one it opens or closes. Nothing is guessed: a model
 * id saved in the notebook from an earlier kernel is not among them.
 */
export class WidgetModels {
  /** Whether the followed kernel holds the model `id`. */
  has(id: string): boolean {
    return id !== '' && this._ids.has(id);
  }

  /** Follow `kernel` (or none): forget the last kernel's models, learn this one's. */
  async follow(kernel: Kernel.IKernelConnection | null): Promise<void> {
    if (kernel === this._kernel) {
      return;
    }
    this._kernel?.anyMessage.disconnect(this._onMessage, this);
    this._kernel = kernel;
    this._ids.clear();
    if (kernel === null || kernel.isDisposed) {
      return;
    }
    kernel.anyMessage.connect(this._onMessage, this);
    try {
      const reply = await kernel.requestCommInfo({
        target_name: WIDGET_TARGET
      });
      if (kernel === this._kernel && reply.content.status === 'ok') {
        Object.keys(reply.content.comms).forEach(id => this._ids.add(id));
      }
    } catch {
      // A kernel that cannot answer: its widgets are learnt as they open.
    }
  }

  private _onMessage(
    _sender: Kernel.IKernelConnection,
    args: Kernel.IAnyMessageArgs
  ): void {
    const { header, content } = args.msg;
    const comm = content as { comm_id?: unknown; target_name?: unknown };
    if (typeof comm.comm_id !== 'string') {
      return;
    }
    if (header.msg_type === 'comm_open' && comm.target_name === WIDGET_TARGET) {
      this._ids.add(comm.comm_id);
    } else if (header.msg_type === 'comm_close') {
      this._ids.delete(comm.comm_id);
    }
  }

  private readonly _ids = new Set<string>();
  private _kernel: Kernel.IKernelConnection | null = null;
}

/** The hooks a notebook gives: its rendermime and when its kernel (and widgets) arrive. */
export interface ILiveViewHost {
  /** The server's routes for the notebook's run (none: saved views stay as saved). */
  runs?: IViewSource | null;
  /** Follow the run's shared watch (none: saved views are brought up to date once). */
  follow?: ((listener: VersionListener) => IDisposable) | null;
  /** Emitted when the notebook closes (ends the following of its run). */
  disposed?: { connect(slot: () => void): boolean };
  rendermime: IRendererSource & {
    addFactory(factory: IRenderMime.IRendererFactory, rank?: number): void;
  };
  sessionContext: {
    ready: Promise<void>;
    kernelChanged: { connect(slot: () => void): boolean };
    session?: { kernel?: Kernel.IKernelConnection | null } | null;
  };
}

/** Register the run view renderer on one notebook's rendermime. */
export function installLiveViews(host: ILiveViewHost): Set<LiveViewRenderer> {
  const renderers = new Set<LiveViewRenderer>();
  const models = new WidgetModels();
  const following = followRun(host, renderers);
  host.rendermime.addFactory(
    {
      safe: false,
      mimeTypes: [VIEW_MIME_TYPE],
      defaultRank: VIEW_RANK,
      createRenderer: () => {
        const renderer = new LiveViewRenderer(
          host.rendermime,
          id => models.has(id),
          host.runs ?? null,
          following.start
        );
        renderers.add(renderer);
        renderer.disposed.connect(() => renderers.delete(renderer));
        return renderer;
      }
    },
    VIEW_RANK
  );
  // ipywidgets binds its renderer to the kernel's widget manager once the session is
  // ready: outputs rendered before then get a live widget on the next try.
  const retry = (): void => {
    window.setTimeout(() => renderers.forEach(r => void r.retry()), 0);
  };
  const save = (raw: unknown): void => {
    const saved = parseSavedViews(raw);
    if (saved === null) {
      return;
    }
    for (const renderer of renderers) {
      if (saved.models.includes(renderer.modelId)) {
        renderer.saveFallback(saved.data);
      }
    }
  };
  const onCommOpen = (
    comm: Kernel.IComm,
    msg: KernelMessage.ICommOpenMsg
  ): void => {
    save(msg.content.data);
    comm.onMsg = message => save(message.content.data);
  };
  let kernel: Kernel.IKernelConnection | null = null;
  const listen = (): void => {
    const now = host.sessionContext.session?.kernel ?? null;
    if (now === kernel) {
      return;
    }
    if (kernel !== null && !kernel.isDisposed) {
      kernel.removeCommTarget(VIEW_TARGET, onCommOpen);
    }
    kernel = now;
    if (kernel !== null && !kernel.isDisposed) {
      kernel.registerCommTarget(VIEW_TARGET, onCommOpen);
    }
    void models.follow(kernel).then(retry);
  };
  host.sessionContext.ready
    .then(() => {
      listen();
      retry();
    })
    .catch(() => undefined);
  host.sessionContext.kernelChanged.connect(() => {
    listen();
    window.setTimeout(retry, GRACE_MS);
  });
  host.disposed?.connect(following.stop);
  return renderers;
}

/**
 * Bring the saved views shown in place of the run up to date when its version moves: they
 * follow the run's shared watch while at least one of them knows the run's version.
 */
function followRun(
  host: ILiveViewHost,
  renderers: Set<LiveViewRenderer>
): { start: () => void; stop: () => void } {
  let following: IDisposable | null = null;
  const stop = (): void => {
    following?.dispose();
    following = null;
  };
  const onVersion: VersionListener = answer => {
    const watched = [...renderers].filter(
      r => r.shown === 'fallback' && r.followedVersion !== null
    );
    if (!watched.length) {
      stop(); // no saved view on screen follows the run any more
      return;
    }
    if (answer === null) {
      return; // the server did not answer: the watch asks again
    }
    const now = answer.exists ? answer.version : null;
    watched
      .filter(r => r.followedVersion !== now)
      .forEach(r => void r.refreshFromRun());
  };
  const start = (): void => {
    if (following === null && host.follow) {
      following = host.follow(onVersion);
    }
  };
  return { start, stop };
}

/** Installs the run view renderer on every notebook. */
export const liveViewPlugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_IDS.liveViews,
  description:
    'Shows SKILL.nb run views live, or their saved HTML when the widget is gone.',
  autoStart: true,
  optional: [ISkillnbPanel],
  activate: (
    app: JupyterFrontEnd,
    panelService: ISkillnbPanel | null
  ): void => {
    const client = new ServerRunClient(app.serviceManager.serverSettings);
    // The panel's watches when there is a panel (one long poll per run, shared with it).
    const watches = panelService?.watches ?? new RunWatches(client);
    app.docRegistry.addWidgetExtension('Notebook', {
      createNew: widget => {
        const panel = widget as NotebookPanel;
        installLiveViews({
          rendermime: panel.content.rendermime,
          sessionContext: panel.sessionContext,
          disposed: panel.disposed,
          runs: {
            view: () => client.savedView(panel.context.path),
            version: () => client.version(panel.context.path)
          },
          follow: listener => watches.follow(panel.context.path, listener)
        });
      }
    });
  }
};
