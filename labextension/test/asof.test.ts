import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  askRun,
  clockTime,
  parseAsOf,
  parseFreshView,
  verdict,
  type IAsOf,
  type IViewSource
} from '../src/asof';
import { COPY_OF } from './fakes';

/** A saved view's HTML as `skillnb/jupyter/views/asof.py` writes it. */
function savedHtml(run: string, version: number, at: string): string {
  return (
    `<div class="skillnb-saved-view" data-skillnb-run="${run}" data-skillnb-version="${version}">` +
    `<div class="skillnb-as-of" role="note" style="font-size:11px" data-skillnb-run="${run}" ` +
    `data-skillnb-version="${version}" data-skillnb-at="${at}">as of v${version}, ` +
    `<time datetime="${at}">14:02</time></div><div class="skillnb-run-static">…</div></div>`
  );
}

const AT = '2026-12-02T13:02:41+00:00';
const LATER = '2026-12-02T13:10:05+00:00';
const NOW = new Date('2026-12-02T15:00:00+00:00');
const SAVED: IAsOf = { run: 'run-1', version: 38, at: AT, kind: 'run' };

function fresh(version: number, run = 'run-1'): unknown {
  return {
    v: 1,
    run_id: run,
    version,
    updated_at: LATER,
    data: { 'text/html': `<div>v${version}</div>`, 'text/plain': `v${version}` }
  };
}

describe('parseAsOf', () => {
  it('reads the run, version and time of the marker', () => {
    assert.deepEqual(parseAsOf(savedHtml('run-1', 38, AT)), SAVED);
  });

  it('unescapes the attributes as the kernel escaped them', () => {
    const html = savedHtml('a&quot;b&amp;c&lt;', 3, '');
    assert.deepEqual(parseAsOf(html), {
      run: 'a"b&c<',
      version: 3,
      at: '',
      kind: 'run'
    });
  });

  it("tells a widget's saved form from a run view", () => {
    const html = savedHtml('run-1', 38, AT).replace(
      'data-skillnb-at=',
      'data-skillnb-view="form" data-skillnb-at='
    );
    assert.equal(parseAsOf(html)?.kind, 'form');
  });

  it('finds nothing in a view saved before views were marked, or in bad markers', () => {
    for (const html of [
      '<div class="skillnb-run-static">v38</div>',
      '<div class="skillnb-as-of" data-skillnb-version="38">no run</div>',
      '<div class="skillnb-as-of" data-skillnb-run="r" data-skillnb-version="x">',
      '<div class="skillnb-as-of" data-skillnb-run="r" data-skillnb-version="-1">',
      42,
      null
    ]) {
      assert.equal(parseAsOf(html), null, String(html));
    }
  });
});

describe('parseFreshView', () => {
  it('reads the view route', () => {
    assert.deepEqual(parseFreshView(fresh(43)), {
      run: 'run-1',
      version: 43,
      at: LATER,
      html: '<div>v43</div>',
      text: 'v43'
    });
  });

  it('refuses other shapes', () => {
    for (const raw of [
      null,
      { ...(fresh(43) as object), v: 2 },
      { ...(fresh(43) as object), version: '43' },
      { ...(fresh(43) as object), data: { 'text/html': 1, 'text/plain': '' } },
      { v: 1, run_id: 'r', version: 1 }
    ]) {
      assert.equal(parseFreshView(raw), null, JSON.stringify(raw));
    }
  });
});

describe('clockTime', () => {
  it('says the time today and the date on another day', () => {
    const today = new Date(AT);
    const hh = String(today.getHours()).padStart(2, '0');
    const mm = String(today.getMinutes()).padStart(2, '0');
    assert.equal(clockTime(AT, new Date(AT)), `${hh}:${mm}`);
    const nextWeek = new Date(today.getTime() + 7 * 86_400_000);
    assert.match(clockTime(AT, nextWeek), new RegExp(`^Dec \\d+ ${hh}:${mm}$`));
    assert.equal(clockTime('', NOW), '');
    assert.equal(clockTime('yesterday', NOW), '');
  });
});

describe('verdict', () => {
  const clock = (iso: string): string => clockTime(iso, NOW);

  it('a newer run replaces the saved view and says it is current', () => {
    const view = parseFreshView(fresh(43));
    const said = verdict(SAVED, { view }, NOW);
    assert.equal(said.freshness, 'current');
    assert.equal(said.html, '<div>v43</div>');
    assert.equal(said.plain, 'v43');
    assert.equal(said.version, 43);
    assert.equal(
      said.text,
      `Current: as of v43, ${clock(LATER)}, read from the run just now (saved as of v38, ${clock(AT)}).`
    );
  });

  it('an unchanged run says it is still at the saved version', () => {
    const said = verdict(SAVED, { view: parseFreshView(fresh(38)) }, NOW);
    assert.equal(said.freshness, 'current');
    assert.match(said.text, /the run is still at v38/);
  });

  it('a view route that failed falls back on the version: the run moved on', () => {
    const said = verdict(SAVED, { version: 43, error: 'boom' }, NOW);
    assert.equal(said.freshness, 'behind');
    assert.equal(said.html, null);
    assert.equal(said.version, 38);
    assert.equal(
      said.text,
      `Saved at v38, ${clock(AT)}; the run is now at v43.`
    );
    const same = verdict(SAVED, { version: 38, error: 'boom' }, NOW);
    assert.equal(same.freshness, 'current');
    assert.equal(same.html, null);
  });

  it('a run that cannot be read at all leaves the view marked as maybe stale', () => {
    const said = verdict(
      SAVED,
      { error: 'cannot reach the Jupyter server' },
      NOW
    );
    assert.equal(said.freshness, 'unknown');
    assert.equal(
      said.text,
      `Saved at v38, ${clock(AT)}; the run could not be read now (cannot reach the Jupyter server), so it may be out of date.`
    );
    const gone = verdict(SAVED, { version: null }, NOW);
    assert.match(gone.text, /this notebook has no run now/);
  });

  it("a view in a copy of the notebook says the run is the original's and the ways on", () => {
    const said = verdict(SAVED, { copy: COPY_OF }, NOW);
    assert.equal(said.freshness, 'copy');
    assert.equal(said.html, null); // the saved view stays, marked as the original's
    assert.equal(said.version, 38);
    assert.equal(
      said.text,
      "This notebook is a copy of report.ipynb; the run shown is the original's (as of v38, 13:02). " +
        'Go on with a copy of its run: %skillnb fork-from report.ipynb (or skillnb fork ' +
        'report.ipynb report-Copy1.ipynb in a terminal), or start fresh: %skillnb new-run.'
    );
  });

  it('a view of another run is kept and says so', () => {
    const said = verdict(
      SAVED,
      { view: parseFreshView(fresh(5, 'run-2')) },
      NOW
    );
    assert.equal(said.freshness, 'other');
    assert.equal(said.html, null);
    assert.match(said.text, /another run \(run-1/);
    assert.match(said.text, /run-2, now at v5/);
  });
});

describe('askRun', () => {
  function source(
    view: () => Promise<unknown>,
    version: IViewSource['version']
  ): IViewSource {
    return { view, version };
  }

  it('takes the view when the view route answers', async () => {
    let asked = 0;
    const live = await askRun(
      source(
        () => Promise.resolve(fresh(43)),
        () => {
          asked += 1;
          return Promise.resolve({ exists: true, version: 43 });
        }
      )
    );
    assert.equal(live.view?.version, 43);
    assert.equal(asked, 0);
  });

  it('asks the version when the view route fails or answers nonsense', async () => {
    for (const view of [
      () => Promise.reject(new Error('500 Internal Server Error')),
      () => Promise.resolve({ v: 9 })
    ]) {
      const live = await askRun(
        source(view, () => Promise.resolve({ exists: true, version: 43 }))
      );
      assert.equal(live.view, undefined);
      assert.equal(live.version, 43);
      assert.ok(live.error);
    }
  });

  it('tells a copy from either route', async () => {
    const byView = await askRun(
      source(
        () => Promise.resolve({ v: 1, run_id: null, copy_of: COPY_OF }),
        () => Promise.reject(new Error('not asked'))
      )
    );
    assert.deepEqual(byView, { copy: COPY_OF });
    const byVersion = await askRun(
      source(
        () => Promise.reject(new Error('500')),
        () =>
          Promise.resolve({ exists: false, version: null, copy_of: COPY_OF })
      )
    );
    assert.deepEqual(byVersion, { copy: COPY_OF });
  });

  it('says why when neither route answers, and null when the run is gone', async () => {
    const down = await askRun(
      source(
        () => Promise.reject(new Error('down')),
        () => Promise.reject(new Error('still down'))
      )
    );
    assert.deepEqual(down, { error: 'still down' });
    const gone = await askRun(
      source(
        () => Promise.reject(new Error('404')),
        () => Promise.resolve({ exists: false, version: null })
      )
    );
    assert.equal(gone.version, null);
  });
});
