/**
 * Names shared by the SKILL.nb JupyterLab extension: plugin and command ids, the comm
 * target, the MIME type, the metadata key and the server routes. Nothing else lives here,
 * so a rename happens in one place.
 */
import { Token } from '@lumino/coreutils';

import type { KeepSuggestions } from './keep';
import type { RunModel } from './model';
import type { RunWatches } from './runwatch';

/** The npm package name; plugin ids are `<package>:<plugin>`. */
export const PACKAGE_NAME = 'skillnb';

/** Plugin ids (`skillnb:plugin` owns `schema/plugin.json`). */
export const PLUGIN_IDS = {
  commands: 'skillnb:plugin',
  panel: 'skillnb:panel',
  mirror: 'skillnb:mirror',
  mime: 'skillnb:mime',
  liveViews: 'skillnb:live-views'
} as const;

/** Command ids, also listed in the command palette and the notebook toolbar. */
export const COMMAND_IDS = {
  milestone: 'skillnb:milestone',
  resume: 'skillnb:resume',
  refresh: 'skillnb:refresh-panel',
  showPanel: 'skillnb:show-panel'
} as const;

/** Toolbar item names declared in `schema/plugin.json` (`data-jp-item-name`). */
export const TOOLBAR_ITEMS = {
  milestone: 'skillnb-milestone',
  resume: 'skillnb-resume'
} as const;

/** The comm target the kernel opens after each change of the run. */
export const COMM_TARGET = 'skillnb.mirror';

/** The MIME type every skillnb magic output carries. */
export const MIME_TYPE = 'application/vnd.skillnb.v1+json';

/** The one metadata key SKILL.nb writes, on the notebook and on cells. */
export const METADATA_KEY = 'skillnb';

/** The format version of the describe payload, bundles and mirrors this code reads. */
export const FORMAT_VERSION = 1;

/** Routes of the jupyter_server extension, relative to the server's base URL. */
export const API_ROUTES = {
  run: 'skillnb/api/run',
  view: 'skillnb/api/view',
  version: 'skillnb/api/version',
  identity: 'skillnb/api/identity',
  approve: 'skillnb/api/approve',
  reject: 'skillnb/api/reject',
  milestone: 'skillnb/api/milestone',
  inbox: 'skillnb/api/inbox',
  inboxDecide: 'skillnb/api/inbox/decide'
} as const;

/** Id of the side panel widget in the right area. */
export const PANEL_ID = 'skillnb-run-panel';

/** How often the visible panel asks the server whether the run changed. */
export const POLL_INTERVAL_MS = 2000;

/** What the panel plugin offers the other plugins. */
export interface ISkillnbPanel {
  /** The model of the run of the current notebook. */
  readonly model: RunModel;
  /** The shared version checks of runs (one per run: the panel's and the saved views'). */
  readonly watches: RunWatches;
  /** Something happened to the run of `path` (a comm message, an output): refresh now. */
  notifyActivity(path: string): void;
  /** Show the panel in the right area. */
  show(): void;
  /** The kernel's keep-suggestions per open notebook (the panel's "Keep?" section). */
  readonly suggestions: KeepSuggestions;
}

/** The token of the panel plugin's service. */
export const ISkillnbPanel = new Token<ISkillnbPanel>(
  'skillnb:ISkillnbPanel',
  'The SKILL.nb side panel and the model of the current run.'
);
