/**
 * The metadata mirror, pure part: merge what the kernel emits (a `skillnb.mirror` comm
 * message, or the `mirror` a skillnb output carries in its metadata) into
 * `metadata["skillnb"]` of the notebook and of a cell. It works on a small interface so it runs in unit tests without a
 * notebook model; `mirrorconnector.ts` wires it to open notebooks.
 */
import {
  JSONExt,
  type PartialJSONValue,
  type ReadonlyPartialJSONObject
} from '@lumino/coreutils';

import {
  isObject,
  parseBundle,
  parseMirrorMessage,
  parseOutputVolatile
} from './parse';
import { METADATA_KEY, MIME_TYPE } from './tokens';

/** Anything with JupyterLab-4-style metadata accessors (notebook and cell models). */
export interface IMetadataHolder {
  getMetadata(key: string): unknown;
  setMetadata(key: string, value: PartialJSONValue): void;
}

/** The notebook seen by the mirror: its metadata and a way to find a cell by id. */
export interface IMirrorTarget {
  readonly notebook: IMetadataHolder;
  findCell(cellId: string): IMetadataHolder | null;
}

/** What one application of the mirror changed. */
export interface IMirrorChange {
  notebook: boolean;
  cell: boolean;
}

/**
 * Write `notebook` into the notebook's metadata unless it would move an equal or newer
 * mirror of the same run backwards, or change nothing.
 */
export function applyNotebookMirror(
  holder: IMetadataHolder,
  notebook: ReadonlyPartialJSONObject
): boolean {
  const current = holder.getMetadata(METADATA_KEY);
  if (isObject(current)) {
    if (JSONExt.deepEqual(current as ReadonlyPartialJSONObject, notebook)) {
      return false;
    }
    const sameRun = current.run_id === notebook.run_id;
    const oldVersion = current.version;
    const newVersion = notebook.version;
    if (
      sameRun &&
      typeof oldVersion === 'number' &&
      typeof newVersion === 'number' &&
      newVersion < oldVersion
    ) {
      return false; // an older message arrived late
    }
  }
  holder.setMetadata(
    METADATA_KEY,
    JSONExt.deepCopy(notebook) as PartialJSONValue
  );
  return true;
}

/** Write `cell` into a cell's metadata unless it changes nothing. */
export function applyCellMirror(
  holder: IMetadataHolder,
  cell: ReadonlyPartialJSONObject
): boolean {
  const current = holder.getMetadata(METADATA_KEY);
  if (
    isObject(current) &&
    JSONExt.deepEqual(current as ReadonlyPartialJSONObject, cell)
  ) {
    return false;
  }
  holder.setMetadata(METADATA_KEY, JSONExt.deepCopy(cell) as PartialJSONValue);
  return true;
}

/** Apply a `skillnb.mirror` comm message; the cell is found by the message's `cell_id`. */
export function applyMirrorMessage(
  target: IMirrorTarget,
  data: unknown
): IMirrorChange | null {
  const message = parseMirrorMessage(data);
  if (message === null) {
    return null;
  }
  const change: IMirrorChange = { notebook: false, cell: false };
  if (message.notebook !== null) {
    change.notebook = applyNotebookMirror(target.notebook, message.notebook);
  }
  if (message.cell !== null && message.cell_id !== null) {
    const holder = target.findCell(message.cell_id);
    if (holder !== null) {
      change.cell = applyCellMirror(holder, message.cell);
    }
  }
  return change;
}

/**
 * Apply the `mirror` of a skillnb output that appeared in `cell`.
 *
 * The mirror is read from the output's metadata (`metadata[MIME_TYPE].mirror`); for an
 * output saved before it moved there, from the bundle's data.
 *
 * @param data the output's MIME bundle (only `application/vnd.skillnb.v1+json` is read)
 * @param metadata the output's metadata
 * @returns null when the output is not a skillnb output with a mirror
 */
export function applyOutputMirror(
  notebook: IMetadataHolder,
  cell: IMetadataHolder | null,
  data: { readonly [mime: string]: unknown },
  metadata: { readonly [key: string]: unknown } = {}
): IMirrorChange | null {
  const raw = data[MIME_TYPE];
  if (parseBundle(raw) === null) {
    return null;
  }
  const mirror = parseOutputVolatile(metadata, raw)?.mirror ?? null;
  if (mirror === null) {
    return null;
  }
  const change: IMirrorChange = { notebook: false, cell: false };
  if (mirror.notebook !== null) {
    change.notebook = applyNotebookMirror(notebook, mirror.notebook);
  }
  if (mirror.cell !== null && cell !== null) {
    change.cell = applyCellMirror(cell, mirror.cell);
  }
  return change;
}
