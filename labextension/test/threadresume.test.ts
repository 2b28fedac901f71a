import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { threadResume } from '../src/threadresume';

describe('threadResume', () => {
  it('names the call that resumes a LangGraph thread after its decision', () => {
    assert.equal(
      threadResume('langgraph:trip-1:tools'),
      ' The thread resumes when its kernel runs resume_approved(graph, run, "trip-1")' +
        ' (at once where resume_on_approval(graph, run) is on).'
    );
    assert.match(
      threadResume('langgraph:a:b:review'),
      /resume_approved\(graph, run, "a:b"\)/
    );
    assert.match(
      threadResume('langgraph:solo'),
      /resume_approved\(graph, run, "solo"\)/
    );
  });

  it('says nothing for a workflow gate', () => {
    assert.equal(threadResume('publish_ok'), '');
  });
});
