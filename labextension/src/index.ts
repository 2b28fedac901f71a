/**
 * The SKILL.nb JupyterLab plugins (plugin objects only; the work is in the modules they
 * call): the side panel, the commands and toolbar buttons, and the metadata mirror. The
 * output renderer is the MIME extension in `mime.ts`.
 */
import {
  ILabShell,
  ILayoutRestorer,
  type JupyterFrontEnd,
  type JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, ISessionContextDialogs } from '@jupyterlab/apputils';
import { INotebookTracker, type NotebookPanel } from '@jupyterlab/notebook';

import { approvalHandlers, keepFromPanel } from './actions';
import { registerCommands } from './commands';
import { runIcon } from './icons';
import { KeepSuggestions } from './keep';
import { liveViewPlugin } from './liveview';
import { NotebookMirror } from './mirrorconnector';
import { RunModel } from './model';
import { InboxModel } from './inbox';
import { RunPanel } from './panel';
import { RunWatches } from './runwatch';
import { ServerRunClient } from './request';
import { ISkillnbPanel, PANEL_ID, PLUGIN_IDS } from './tokens';

const panelPlugin: JupyterFrontEndPlugin<ISkillnbPanel> = {
  id: PLUGIN_IDS.panel,
  description:
    'The SKILL.nb side panel: the run of the current notebook, read from its sidecar.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ILabShell, ILayoutRestorer],
  provides: ISkillnbPanel,
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    labShell: ILabShell | null,
    restorer: ILayoutRestorer | null
  ): ISkillnbPanel => {
    const client = new ServerRunClient(app.serviceManager.serverSettings);
    const watches = new RunWatches(client);
    const model = new RunModel(client, watches);
    const inbox = new InboxModel(client);
    const suggestions = new KeepSuggestions();
    const service: ISkillnbPanel = {
      model,
      watches,
      suggestions,
      notifyActivity: path => {
        if (path === model.path) {
          void model.refresh();
        }
      },
      show: () => app.shell.activateById(panel.id)
    };
    const panel = new RunPanel(
      model,
      {
        ...approvalHandlers(model),
        refresh: () => void model.refresh(),
        keep: (path, suggestion) => {
          const notebook =
            tracker.find(widget => widget.context.path === path) ?? null;
          return keepFromPanel(notebook, suggestion, service);
        }
      },
      undefined,
      suggestions,
      inbox
    );
    panel.title.icon = runIcon;
    app.shell.add(panel, 'right', { rank: 650, type: 'SKILL.nb' });
    // The restorer saves whether the panel was open in the workspace and opens it again
    // after a reload; `follow` below then binds it to the notebook restored as current.
    restorer?.add(panel, PANEL_ID);
    const follow = (): void => {
      void model.setPath(tracker.currentWidget?.context.path ?? null);
    };
    tracker.currentChanged.connect(follow);
    tracker.widgetAdded.connect((_, notebook) =>
      notebook.context.pathChanged.connect(follow)
    );
    labShell?.restored.then(follow).catch(() => undefined);
    follow();
    return service;
  }
};

const commandsPlugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_IDS.commands,
  description:
    'SKILL.nb Milestone and Resume commands and notebook toolbar buttons.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ISkillnbPanel, ISessionContextDialogs, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    runs: ISkillnbPanel | null,
    dialogs: ISessionContextDialogs | null,
    palette: ICommandPalette | null
  ): void => {
    const client = new ServerRunClient(app.serviceManager.serverSettings);
    registerCommands({ app, tracker, client, runs, dialogs, palette });
  }
};

const mirrorPlugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_IDS.mirror,
  description:
    'Keeps metadata["skillnb"] of open notebooks in step with the kernel.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ISkillnbPanel],
  activate: (
    _app: JupyterFrontEnd,
    tracker: INotebookTracker,
    runs: ISkillnbPanel | null
  ): void => {
    const mirror = (panel: NotebookPanel): NotebookMirror =>
      new NotebookMirror(
        panel,
        path => runs?.notifyActivity(path),
        (path, found) => runs?.suggestions.replace(path, found)
      );
    tracker.forEach(mirror);
    tracker.widgetAdded.connect((_, panel) => mirror(panel));
  }
};

export default [panelPlugin, commandsPlugin, mirrorPlugin, liveViewPlugin];
