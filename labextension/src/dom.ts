/**
 * A tiny element builder for the views. Text is always set through `textContent`, so
 * values from facts (which can hold LLM output) are never parsed as HTML.
 */

/** Options of `h`. */
export interface IElementOptions {
  className?: string;
  text?: string;
  title?: string;
  data?: { [key: string]: string };
}

/** Create an element with optional class, text, title, `data-*` attributes and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  options: IElementOptions = {},
  children: ReadonlyArray<Node | null> = []
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (options.className) {
    node.className = options.className;
  }
  if (options.text !== undefined) {
    node.textContent = options.text;
  }
  if (options.title !== undefined) {
    node.title = options.title;
  }
  for (const [key, value] of Object.entries(options.data ?? {})) {
    node.dataset[key] = value;
  }
  for (const child of children) {
    if (child !== null) {
      node.appendChild(child);
    }
  }
  return node;
}

/** Clip `text` to `max` characters, with an ellipsis. */
export function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, Math.max(0, max - 1))}…` : text;
}

/** A readable local time for an ISO timestamp (the raw text when it cannot be read). */
export function when(iso: string | null): string {
  if (!iso) {
    return '';
  }
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}
