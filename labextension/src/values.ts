/**
 * Fact values as the panel shows them: a JSON object preview becomes `key: value` lines.
 * Previews are clipped by the Python codec (about 80 characters, ending in "…"), so the
 * reader also takes the complete entries of a clipped object and keeps its clipped tail.
 */

/** One `key: value` line of an object preview. */
export interface IValueLine {
  key: string;
  value: string;
}

function show(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** `"text"` as the string it spells, anything else trimmed as it is. */
function unquote(text: string): string {
  const trimmed = text.trim();
  if (trimmed.startsWith('"')) {
    try {
      const value: unknown = JSON.parse(trimmed);
      if (typeof value === 'string') {
        return value;
      }
    } catch {
      return trimmed.slice(1); // a clipped string: drop the opening quote only
    }
  }
  return trimmed;
}

/** One character inside a JSON string: whether the string goes on, and whether `c` escapes. */
function stringStep(c: string, escaped: boolean): [boolean, boolean] {
  if (escaped) {
    return [true, false];
  }
  return c === '\\' ? [true, true] : [c !== '"', false];
}

/** The top-level entries of `{...}` text, split at commas outside strings and brackets. */
function entries(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let inString = false;
  let escaped = false;
  let start = 1;
  for (let i = 1; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      [inString, escaped] = stringStep(c, escaped);
      continue;
    }
    if (c === '"') {
      inString = true;
    } else if (c === '{' || c === '[') {
      depth++;
    } else if ((c === '}' || c === ']') && depth > 0) {
      depth--;
    } else if (c === '}' || (c === ',' && depth === 0)) {
      parts.push(text.slice(start, i));
      start = c === '}' ? text.length : i + 1;
    }
  }
  if (start < text.length) {
    parts.push(text.slice(start)); // a clipped last entry
  }
  return parts.filter(part => part.trim() !== '');
}

/** Where the `:` after an entry's key is (outside its quoted key), or -1. */
function colonAt(entry: string): number {
  let inString = false;
  let escaped = false;
  for (let i = 0; i < entry.length; i++) {
    const c = entry[i];
    if (inString) {
      [inString, escaped] = stringStep(c, escaped);
    } else if (c === '"') {
      inString = true;
    } else if (c === ':') {
      return i;
    }
  }
  return -1;
}

/**
 * The `key: value` lines of a preview that is a JSON object (whole or clipped), or null
 * for any other preview (text, numbers, lists), which the panel shows as it is.
 */
export function objectLines(preview: string): IValueLine[] | null {
  const text = preview.trim();
  if (!text.startsWith('{')) {
    return null;
  }
  try {
    const value: unknown = JSON.parse(text);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      return null;
    }
    return Object.entries(value).map(([key, item]) => ({
      key,
      value: show(item)
    }));
  } catch {
    // clipped: read what is there
  }
  const lines: IValueLine[] = [];
  for (const entry of entries(text)) {
    const colon = colonAt(entry);
    if (colon < 0) {
      lines.push({ key: unquote(entry), value: '' });
    } else {
      lines.push({
        key: unquote(entry.slice(0, colon)),
        value: unquote(entry.slice(colon + 1))
      });
    }
  }
  return lines.length ? lines : null;
}
