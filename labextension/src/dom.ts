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
  /** Other attributes, e.g. `aria-label`, `aria-pressed`, `tabindex`. */
  attrs?: { [name: string]: string };
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
  for (const [name, value] of Object.entries(options.attrs ?? {})) {
    node.setAttribute(name, value);
  }
  for (const child of children) {
    if (child !== null) {
      node.appendChild(child);
    }
  }
  return node;
}

/**
 * `text` as spans, with each `backticked` part (a command in a gate's reason) a `<code>`
 * element: still text only, never parsed as HTML.
 */
export function coded(text: string): HTMLElement[] {
  return text
    .split(/(`[^`\n]+`)/)
    .filter(part => part !== '')
    .map(part =>
      part.length > 2 && part.startsWith('`') && part.endsWith('`')
        ? h('code', { text: part.slice(1, -1) })
        : h('span', { text: part })
    );
}

const JSON_JOINT = /(?<=[,:])(?=\S)/;

/**
 * `text` as spans with a line-break opportunity (`<wbr>`) after each `,` or `:` that no
 * space follows: compact JSON (`[{"title":"…","kind":"report"}]`) then wraps between its
 * entries instead of mid-word. The text itself is unchanged (copying it adds nothing).
 */
export function breakable(text: string): HTMLElement[] {
  const parts = text.split(JSON_JOINT);
  return parts.flatMap((part, i) =>
    i === 0
      ? [h('span', { text: part })]
      : [h('wbr'), h('span', { text: part })]
  );
}

/** Clip `text` to `max` characters, with an ellipsis. */
export function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, Math.max(0, max - 1))}…` : text;
}

/**
 * A short local time for an ISO timestamp, on a 24-hour clock as the kernel's views write it:
 * "14:03" today, "Dec 1 14:03" this year, "Dec 1 2025 14:03" before (the raw text when it
 * cannot be read).
 */
export function when(iso: string | null, now: Date = new Date()): string {
  if (!iso) {
    return '';
  }
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) {
    return iso;
  }
  const pad = (n: number): string => String(n).padStart(2, '0');
  const clock = `${pad(date.getHours())}:${pad(date.getMinutes())}`;
  if (date.toDateString() === now.toDateString()) {
    return clock;
  }
  const month = date.toLocaleString('en-US', { month: 'short' });
  const year =
    date.getFullYear() === now.getFullYear() ? '' : ` ${date.getFullYear()}`;
  return `${month} ${date.getDate()}${year} ${clock}`;
}
