import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { IToggleNode, syncPressed } from '../src/pressed';

function button(
  classes: string[]
): IToggleNode & { attrs: Map<string, string> } {
  const attrs = new Map<string, string>();
  return {
    attrs,
    classList: { contains: (name: string) => classes.includes(name) },
    getAttribute: (name: string) => attrs.get(name) ?? null,
    setAttribute: (name: string, value: string) => {
      attrs.set(name, value);
    }
  };
}

describe('syncPressed', () => {
  it('marks the pressed toggle button true and the other false', () => {
    const diagram = button(['skillnb-toggle', 'skillnb-pressed']);
    const list = button(['skillnb-toggle']);
    const asked: string[] = [];
    syncPressed({
      querySelectorAll: (selector: string) => {
        asked.push(selector);
        return [diagram, list];
      }
    });
    assert.deepEqual(asked, ['.skillnb-toggle']);
    assert.equal(diagram.attrs.get('aria-pressed'), 'true');
    assert.equal(list.attrs.get('aria-pressed'), 'false');
  });

  it('writes only what changed (no endless mutation loop)', () => {
    const list = button(['skillnb-toggle']);
    list.attrs.set('aria-pressed', 'false');
    let writes = 0;
    const counted = { ...list, setAttribute: () => (writes += 1) };
    syncPressed({ querySelectorAll: () => [counted] });
    assert.equal(writes, 0);
  });
});
