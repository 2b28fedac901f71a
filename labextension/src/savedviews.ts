/**
 * The `skillnb.view` comm message: a run view's fresh fallback, sent by the kernel after
 * each change of the run, for the outputs of the listed ipywidgets models.
 */

/** A `skillnb.view` message, checked. */
export interface ISavedViews {
  models: string[];
  data: { 'text/html': string; 'text/plain': string };
}

/** Read a `skillnb.view` message; `null` when it is not one this version understands. */
export function parseSavedViews(raw: unknown): ISavedViews | null {
  if (typeof raw !== 'object' || raw === null) {
    return null;
  }
  const { v, models, data } = raw as Record<string, unknown>;
  if (
    v !== 1 ||
    !Array.isArray(models) ||
    typeof data !== 'object' ||
    data === null
  ) {
    return null;
  }
  const html = (data as Record<string, unknown>)['text/html'];
  const plain = (data as Record<string, unknown>)['text/plain'];
  if (typeof html !== 'string' || typeof plain !== 'string') {
    return null;
  }
  const ids = models.filter((m): m is string => typeof m === 'string');
  return { models: ids, data: { 'text/html': html, 'text/plain': plain } };
}
