import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { coded, when } from '../src/dom';
import { FakeElement, installFakeDocument } from './fakes';

describe('when', () => {
  const now = new Date(2026, 11, 1, 18, 39, 36);

  it('says only the time for today, on a 24-hour clock, without seconds', () => {
    assert.equal(
      when(new Date(2026, 11, 1, 9, 5, 59).toISOString(), now),
      '09:05'
    );
    assert.equal(
      when(new Date(2026, 11, 1, 18, 39, 36).toISOString(), now),
      '18:39'
    );
  });

  it('adds the day this year and the year before it, like the kernel views', () => {
    const thisYear = when(new Date(2026, 2, 4, 12, 3).toISOString(), now);
    assert.equal(thisYear, 'Mar 4 12:03');
    const earlier = when(new Date(2025, 2, 4, 0, 3).toISOString(), now);
    assert.equal(earlier, 'Mar 4 2025 00:03');
  });

  it('never says seconds, AM/PM or a numeric date', () => {
    const text = when(new Date(2026, 10, 30, 18, 39, 36).toISOString(), now);
    assert.doesNotMatch(text, /36|PM|AM|\/|,/);
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
