import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { coded, when } from '../src/dom';
import { FakeElement, installFakeDocument } from './fakes';

describe('when', () => {
  const now = new Date(2026, 11, 1, 18, 39, 36);

  it('says only the time for today, without seconds', () => {
    const text = when(new Date(2026, 11, 1, 9, 5, 59).toISOString(), now);
    assert.match(text, /09[:.]05/);
    assert.doesNotMatch(text, /59|2026/);
  });

  it('adds the day this year and the year before it', () => {
    const thisYear = when(new Date(2026, 2, 4, 12, 3).toISOString(), now);
    assert.match(thisYear, /Mar/);
    assert.doesNotMatch(thisYear, /2026/);
    const earlier = when(new Date(2025, 2, 4, 12, 3).toISOString(), now);
    assert.match(earlier, /2025/);
  });

  it('keeps text it cannot read and says nothing for none', () => {
    assert.equal(when('not a time', now), 'not a time');
    assert.equal(when(null, now), '');
  });
});

describe('coded', () => {
  it('shows backticked commands as code, the rest as text, nothing as HTML', () => {
    installFakeDocument();
    const parts = coded(
      'waiting for approval (<b>ok?</b>); approve with `%skillnb approve a` or `skillnb approve NB a`'
    ) as unknown as FakeElement[];
    assert.deepEqual(
      parts.map(p => [p.tagName.toLowerCase(), p.textContent]),
      [
        ['span', 'waiting for approval (<b>ok?</b>); approve with '],
        ['code', '%skillnb approve a'],
        ['span', ' or '],
        ['code', 'skillnb approve NB a']
      ]
    );
    assert.deepEqual(
      (coded('a lone ` tick') as unknown as FakeElement[]).map(
        p => p.textContent
      ),
      ['a lone ` tick']
    );
  });
});
