/**
 * The MIME extension object (the package's `jupyterlab.mimeExtension` entry): registers
 * the skillnb output renderer everywhere JupyterLab renders outputs.
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { rendererFactory } from './renderer';
import { PLUGIN_IDS } from './tokens';

const extension: IRenderMime.IExtension = {
  id: PLUGIN_IDS.mime,
  description: 'Renders SKILL.nb outputs as compact badges.',
  rendererFactory,
  rank: 10,
  dataType: 'json'
};

export default extension;
