/**
 * What the output renderer shows for a skillnb output, as plain data: the badge text and
 * style, its tooltip, and the folded details. Pure, so it is tested without a DOM; the
 * renderer (`renderer.ts`) only turns it into elements.
 *
 * The deterministic fields come from the output's data; the time the output was shown comes
 * from the output's metadata (`metadata[MIME_TYPE].at`), where volatile fields live.
 */
import { parseBundle, parseOutputVolatile } from './parse';
import { MIME_TYPE } from './tokens';
import type { BundleStatus, IFoldedReport } from './types';

/** Statuses whose details are shown unfolded. */
const ATTENTION: ReadonlySet<BundleStatus> = new Set<BundleStatus>([
  'blocked',
  'waiting',
  'warning',
  'error'
]);

/** A skillnb output, ready to render. */
export interface IBadgeView {
  kind: string;
  status: BundleStatus;
  badge: string;
  /** The tooltip: kind, status and, when known, when the output was shown. */
  title: string;
  /** The output's plain text under the badge, or null when it only repeats the badge. */
  details: string | null;
  /** Whether the details start unfolded (outcomes that need attention). */
  open: boolean;
  /**
   * A blocked cell's gate report, shown folded (closed) under its lines; the lines are
   * then shown as they are (`lines`), not folded.
   */
  report: IFoldedReport | null;
  /** The lines under the badge, shown unfolded (with `report`; else empty). */
  lines: string[];
}

/**
 * Describe a skillnb output for the renderer.
 *
 * @param data the output's MIME bundle
 * @param metadata the output's metadata
 * @returns null when the bundle is not of a format this extension reads
 */
export function describeOutput(
  data: { readonly [mime: string]: unknown },
  metadata: { readonly [key: string]: unknown } = {}
): IBadgeView | null {
  const bundle = parseBundle(data[MIME_TYPE]);
  if (bundle === null) {
    return null;
  }
  const plain = data['text/plain'];
  const text = typeof plain === 'string' ? plain : '';
  const shown = parseOutputVolatile(metadata)?.at ?? null;
  const title =
    `SKILL.nb ${bundle.kind}: ${bundle.status}` +
    (shown !== null ? ` · shown ${shown}` : '');
  const repeats = !text.trim() || text.trim() === bundle.badge.trim();
  const report = bundle.report ?? null;
  // With a folded report the lines are what the cell says: shown once, under the badge
  // (the plain text starts with the badge itself, not repeated).
  const lines =
    report === null
      ? []
      : text
          .split('\n')
          .filter(
            (line, i) => line.trim() && !(i === 0 && line === bundle.badge)
          );
  return {
    kind: bundle.kind,
    status: bundle.status,
    badge: bundle.badge,
    title,
    details: repeats || report !== null ? null : text,
    open: ATTENTION.has(bundle.status),
    report,
    lines
  };
}
