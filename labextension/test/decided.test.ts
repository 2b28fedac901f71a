import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { decidedNotice } from '../src/decided';

describe('decidedNotice', () => {
  it('shows an approval as a success', () => {
    assert.deepEqual(decidedNotice('Approve', 'publish_ok', 'Ada'), {
      type: 'success',
      message: 'Approved "publish_ok" as Ada.'
    });
  });

  it('never shows a rejection in the success colour', () => {
    assert.deepEqual(decidedNotice('Reject', 'publish_ok', null), {
      type: 'info',
      message: 'Rejected "publish_ok".'
    });
  });

  it('says how a LangGraph thread goes on, either way', () => {
    for (const verb of ['Approve', 'Reject'] as const) {
      assert.match(
        decidedNotice(verb, 'langgraph:trip-1:tools', null).message,
        /resume_approved\(graph, run, "trip-1"\)/
      );
    }
  });
});
