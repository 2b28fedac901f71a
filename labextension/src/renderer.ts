/**
 * The MIME renderer for `application/vnd.skillnb.v1+json`: a compact badge with the
 * bundle's `badge` text, styled by its `status`, and the output's plain text folded
 * underneath (open for outcomes that need attention). Text goes into the DOM as text
 * nodes only; nothing from the bundle is parsed as HTML.
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { parseBundle } from './parse';
import { MIME_TYPE } from './tokens';
import type { BundleStatus } from './types';

/** CSS class of the renderer's node. */
export const BADGE_OUTPUT_CLASS = 'jp-skillnb-output';

/** Statuses whose details are shown unfolded. */
const ATTENTION: ReadonlySet<BundleStatus> = new Set<BundleStatus>([
  'blocked',
  'waiting',
  'warning',
  'error'
]);

/** Renders one skillnb output. */
export class BadgeRenderer extends Widget implements IRenderMime.IRenderer {
  constructor() {
    super();
    this.addClass(BADGE_OUTPUT_CLASS);
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const node = this.node;
    node.replaceChildren();
    const bundle = parseBundle(model.data[MIME_TYPE]);
    const plain = model.data['text/plain'];
    const text = typeof plain === 'string' ? plain : '';
    const badge = document.createElement('span');
    badge.className = 'jp-skillnb-badge';
    if (bundle === null) {
      badge.classList.add('jp-skillnb-status-error');
      badge.textContent = 'skillnb output of an unknown format';
      node.appendChild(badge);
      return Promise.resolve();
    }
    badge.classList.add(`jp-skillnb-status-${bundle.status}`);
    badge.dataset.status = bundle.status;
    badge.dataset.kind = bundle.kind;
    badge.textContent = bundle.badge;
    badge.title = `SKILL.nb ${bundle.kind}: ${bundle.status}`;
    node.appendChild(badge);
    if (text.trim() && text.trim() !== bundle.badge.trim()) {
      const details = document.createElement('details');
      details.className = 'jp-skillnb-details';
      details.open = ATTENTION.has(bundle.status);
      const summary = document.createElement('summary');
      summary.textContent = 'details';
      const pre = document.createElement('pre');
      pre.textContent = text;
      details.append(summary, pre);
      node.appendChild(details);
    }
    return Promise.resolve();
  }
}

/** The factory registered for `application/vnd.skillnb.v1+json`. */
export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  defaultRank: 10, // ahead of text/html (50) so the badge replaces the fallback bundle
  createRenderer: () => new BadgeRenderer()
};
