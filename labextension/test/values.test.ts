import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { parseApprover } from '../src/request';
import { factSection, factValue } from '../src/sections';
import { objectLines } from '../src/values';
import { FakeElement, installFakeDocument } from './fakes';

describe('fact values', () => {
  it('shows a JSON object as key: value lines', () => {
    assert.deepEqual(
      objectLines(
        '{"site": "He at pump station 4", "n": 3, "tags": ["a", "b"]}'
      ),
      [
        { key: 'site', value: 'He at pump station 4' },
        { key: 'n', value: '3' },
        { key: 'tags', value: '["a","b"]' }
      ]
    );
  });

  it('reads the complete entries of a clipped object and keeps its clipped tail', () => {
    assert.deepEqual(
      objectLines(
        '{"a": "x, \\"y\\": z", "nested": {"k": [1, 2]}, "note": "He at pump stat…'
      ),
      [
        { key: 'a', value: 'x, "y": z' },
        { key: 'nested', value: '{"k": [1, 2]}' },
        { key: 'note', value: 'He at pump stat…' }
      ]
    );
    assert.deepEqual(objectLines('{"first": 1, "seco…'), [
      { key: 'first', value: '1' },
      { key: 'seco…', value: '' }
    ]);
  });

  it('leaves text, numbers and lists as they are', () => {
    for (const preview of [
      '"Q3 revenue"',
      '1200',
      '[1, 2]',
      '{}x',
      'plain {'
    ]) {
      assert.equal(objectLines(preview), null, preview);
    }
  });

  it('lets compact JSON wrap between its entries, never inside a word', () => {
    installFakeDocument();
    const preview =
      '[{"title":"Heat pump sales by country, Q3","publisher":"EHPA","kind":"statistic…';
    const value = factValue(preview) as unknown as FakeElement;
    assert.equal(value.textContent, preview); // copying the value adds nothing
    const texts = value.children.map(child =>
      child.tagName.toLowerCase() === 'wbr' ? '|' : child.textContent
    );
    assert.equal(
      texts.join(''),
      '[{"title":|"Heat pump sales by country, Q3",|"publisher":|"EHPA",|"kind":|"statistic…'
    );
    const object = factValue(
      '{"tags": ["night","day"], "crew": 3}'
    ) as unknown as FakeElement;
    const wraps = object.findAll(el => el.tagName.toLowerCase() === 'wbr');
    assert.equal(wraps.length, 1); // after the comma in ["night","day"]
  });

  it('renders lines for objects and one text block otherwise', () => {
    installFakeDocument();
    const object = factValue(
      '{"city": "Porto", "n": 2}'
    ) as unknown as FakeElement;
    const lines = object.findAll(el => el.className === 'jp-skillnb-kv');
    assert.deepEqual(
      lines.map(line => line.textContent),
      ['city: Porto', 'n: 2']
    );
    const text = factValue('"Q3"', false) as unknown as FakeElement;
    assert.equal(text.textContent, '"Q3" (not restorable)');
    const table = factSection([
      {
        key: 'site',
        kind: 'data',
        version: 2,
        preview: '{"where": "north"}',
        restorable: true,
        cell_id: null,
        at: null
      }
    ]) as unknown as FakeElement;
    const keyCell = table.findAll(
      el => el.className === 'jp-skillnb-fact-name'
    );
    assert.equal(keyCell[0].textContent, 'sitedata v2');
  });
});

describe('parseApprover', () => {
  it('reads the identity route and refuses an answer without a name', () => {
    assert.deepEqual(
      parseApprover({ name: 'ada', display_name: 'Ada', source: 'server' }),
      { name: 'ada', display_name: 'Ada', source: 'server' }
    );
    assert.deepEqual(parseApprover({ name: 'root', source: 'run' }), {
      name: 'root',
      display_name: 'root',
      source: 'run'
    });
    assert.throws(() => parseApprover({ display_name: 'x' }), /who decisions/);
  });
});
