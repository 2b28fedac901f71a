/**
 * Registers the SKILL.nb commands: Milestone and Resume (also the notebook toolbar
 * buttons declared in `schema/plugin.json`), Show panel and Refresh panel.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import type {
  ICommandPalette,
  ISessionContextDialogs
} from '@jupyterlab/apputils';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { recordMilestone, resumeNotebook } from './actions';
import type { IRunClient } from './api';
import { milestoneIcon, resumeIcon, runIcon } from './icons';
import { COMMAND_IDS, type ISkillnbPanel } from './tokens';

/** What the commands need. */
export interface ICommandDeps {
  app: JupyterFrontEnd;
  tracker: INotebookTracker;
  client: IRunClient;
  runs: ISkillnbPanel | null;
  dialogs: ISessionContextDialogs | null;
  palette: ICommandPalette | null;
}

const CATEGORY = 'SKILL.nb';

/** The palette shows every command as "SKILL.nb: ..."; buttons keep the short label. */
const PALETTE_ARGS = { palette: true };

function labelled(
  short: string,
  plain: string = short
): (args: { palette?: unknown }) => string {
  return args => (args.palette ? `${CATEGORY}: ${short}` : plain);
}

/** Register the commands and add them to the palette. */
export function registerCommands(deps: ICommandDeps): void {
  const { app, tracker, client, runs, dialogs, palette } = deps;
  const current = (): NotebookPanel | null => tracker.currentWidget;
  const hasNotebook = (): boolean => current() !== null;

  app.commands.addCommand(COMMAND_IDS.milestone, {
    label: labelled('Milestone'),
    caption: 'Record a named checkpoint of this notebook’s SKILL.nb run',
    icon: milestoneIcon,
    isEnabled: hasNotebook,
    execute: async () => {
      const panel = current();
      if (panel !== null) {
        await recordMilestone(panel, client, runs);
      }
    }
  });

  app.commands.addCommand(COMMAND_IDS.resume, {
    label: labelled('Resume'),
    caption:
      'Run %resume in this notebook’s kernel: restore facts and show the run summary',
    icon: resumeIcon,
    isEnabled: hasNotebook,
    execute: async () => {
      const panel = current();
      if (panel !== null) {
        await resumeNotebook(panel, dialogs, runs);
      }
    }
  });

  if (runs !== null) {
    app.commands.addCommand(COMMAND_IDS.showPanel, {
      label: labelled('Show Run Panel', 'Show SKILL.nb Run Panel'),
      icon: runIcon,
      execute: () => runs.show()
    });
    app.commands.addCommand(COMMAND_IDS.refresh, {
      label: labelled('Refresh Run Panel', 'Refresh SKILL.nb Run Panel'),
      execute: () => runs.model.refresh()
    });
  }

  if (palette !== null) {
    const commands: string[] = [COMMAND_IDS.milestone, COMMAND_IDS.resume];
    if (runs !== null) {
      commands.push(COMMAND_IDS.showPanel, COMMAND_IDS.refresh);
    }
    for (const command of commands) {
      palette.addItem({ command, category: CATEGORY, args: PALETTE_ARGS });
    }
  }
}
