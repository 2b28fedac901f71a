/**
 * The MIME renderer for `application/vnd.skillnb.v1+json`: a compact badge with the
 * bundle's `badge` text, styled by its `status`, and the output's plain text folded
 * underneath (open for outcomes that need attention); the badge's tooltip says when the
 * output was shown (from the output's metadata). What to show is decided in `badge.ts`.
 * Text goes into the DOM as text nodes only; nothing from the bundle is parsed as HTML.
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { describeOutput } from './badge';
import { MIME_TYPE } from './tokens';
import type { IFoldedReport } from './types';

/** CSS class of the renderer's node. */
export const BADGE_OUTPUT_CLASS = 'jp-skillnb-output';

/** Renders one skillnb output. */
export class BadgeRenderer extends Widget implements IRenderMime.IRenderer {
  constructor() {
    super();
    this.addClass(BADGE_OUTPUT_CLASS);
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const node = this.node;
    node.replaceChildren();
    const view = describeOutput(model.data, model.metadata);
    const badge = document.createElement('span');
    badge.className = 'jp-skillnb-badge';
    if (view === null) {
      badge.classList.add('jp-skillnb-status-error');
      badge.textContent = 'skillnb output of an unknown format';
      node.appendChild(badge);
      return Promise.resolve();
    }
    badge.classList.add(`jp-skillnb-status-${view.status}`);
    badge.dataset.status = view.status;
    badge.dataset.kind = view.kind;
    badge.textContent = view.badge;
    badge.title = view.title;
    node.appendChild(badge);
    if (view.lines.length) {
      const list = document.createElement('ul');
      list.className = 'jp-skillnb-lines';
      for (const line of view.lines) {
        const item = document.createElement('li');
        item.textContent = line;
        list.appendChild(item);
      }
      node.appendChild(list);
    }
    if (view.report !== null) {
      node.appendChild(foldedReport(view.report));
    }
    if (view.details !== null) {
      const details = document.createElement('details');
      details.className = 'jp-skillnb-details';
      details.open = view.open;
      const summary = document.createElement('summary');
      summary.textContent = 'details';
      const pre = document.createElement('pre');
      pre.textContent = view.details;
      details.append(summary, pre);
      node.appendChild(details);
    }
    return Promise.resolve();
  }
}

/** The word beside a gate's mark (the glyph alone says nothing to a screen reader). */
const MARK_WORDS: Readonly<Record<string, string>> = {
  '✓': 'passed',
  '✗': 'failed',
  '⚠': 'warning'
};

/** A gate report folded in a `<details>` (closed; its summary takes focus and toggles it). */
function foldedReport(report: IFoldedReport): HTMLElement {
  const details = document.createElement('details');
  details.className = 'jp-skillnb-gate-report';
  const summary = document.createElement('summary');
  summary.textContent = report.summary;
  const table = document.createElement('table');
  const head = table.createTHead().insertRow();
  for (const name of ['result', 'gate', 'kind', 'severity', 'message']) {
    const cell = document.createElement('th');
    cell.scope = 'col';
    cell.textContent = name;
    head.appendChild(cell);
  }
  const body = table.createTBody();
  for (const row of report.rows) {
    const tr = body.insertRow();
    const result = `${row.mark} ${MARK_WORDS[row.mark] ?? ''}`.trim();
    for (const text of [
      result,
      row.gate,
      row.kind,
      row.severity,
      row.message
    ]) {
      tr.insertCell().textContent = text;
    }
  }
  details.append(summary, table);
  return details;
}

/** The factory registered for `application/vnd.skillnb.v1+json`. */
export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  defaultRank: 10, // ahead of text/html (50) so the badge replaces the fallback bundle
  createRenderer: () => new BadgeRenderer()
};
