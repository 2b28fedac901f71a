import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import type { KernelMessage } from '@jupyterlab/services';

import {
  OutputCollector,
  RESUME_CODE,
  resumeInKernel,
  type IExecutingKernel
} from '../src/resume';
import { MIME_TYPE } from '../src/tokens';

function iopub(msgType: string, content: object): KernelMessage.IIOPubMessage {
  return {
    header: { msg_type: msgType },
    content
  } as unknown as KernelMessage.IIOPubMessage;
}

describe('Resume', () => {
  it('loads the extension only when needed, then runs %resume', () => {
    assert.match(
      RESUME_CODE,
      /'skillnb' not in get_ipython\(\)\.extension_manager\.loaded/
    );
    assert.match(RESUME_CODE, /run_line_magic\('resume', ''\)$/);
  });

  it('collects streams, plain text and skillnb badges', () => {
    const collector = new OutputCollector();
    collector.add(
      iopub('stream', { name: 'stdout', text: 'SKILL.nb: run r1\n' })
    );
    const metadata = {
      [MIME_TYPE]: {
        v: 1,
        run_id: 'r1',
        mirror: { notebook: null, cell: null }
      }
    };
    collector.add(
      iopub('display_data', {
        data: {
          'text/plain': 'resumed: state review',
          [MIME_TYPE]: { v: 1, kind: 'resume', badge: '↻ review', status: 'ok' }
        },
        metadata
      })
    );
    collector.add(
      iopub('display_data', { data: { 'text/plain': 'plain' }, metadata: {} })
    );
    collector.add(iopub('status', { execution_state: 'idle' }));
    const result = collector.result();
    assert.equal(result.status, 'ok');
    assert.equal(result.text, 'SKILL.nb: run r1\nresumed: state review\nplain');
    assert.deepEqual(result.badges, ['↻ review']);
    assert.equal(result.outputs.length, 1);
    assert.deepEqual(result.outputs[0].metadata, metadata);
  });

  it('reports an error from the kernel', async () => {
    const kernel: IExecutingKernel = {
      requestExecute: (
        content: KernelMessage.IExecuteRequestMsg['content']
      ) => {
        assert.equal(content.store_history, false);
        const future: {
          onIOPub: (msg: KernelMessage.IIOPubMessage) => void;
          done: Promise<{ content: { status: string } }>;
        } = {
          onIOPub: () => undefined,
          done: Promise.resolve().then(() => {
            future.onIOPub(
              iopub('error', {
                ename: 'UsageError',
                evalue: 'Line magic function `%resume` not found.'
              })
            );
            return { content: { status: 'error' } };
          })
        };
        return future as unknown as ReturnType<
          IExecutingKernel['requestExecute']
        >;
      }
    };
    const result = await resumeInKernel(kernel);
    assert.equal(result.status, 'error');
    assert.equal(
      result.text,
      'UsageError: Line magic function `%resume` not found.'
    );
  });
});
