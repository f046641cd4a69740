import { afterEach, describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import { revisionNode } from '../../../../src/main/engine/revlog/index';
import { NULL_NODE } from '../../../../src/main/engine/revlog/constants';
import { WORKER_AFTER, checkParts, defaultWorkerAfter } from '../../../../src/main/engine/revlog/node-checks';

const saved = process.env.SLUICE_CHECK_WORKER_AFTER;
afterEach(() => {
  if (saved === undefined) delete process.env.SLUICE_CHECK_WORKER_AFTER;
  else process.env.SLUICE_CHECK_WORKER_AFTER = saved;
});

describe('node checks', () => {
  it('no worker on two cores or fewer, unless the environment asks for one', () => {
    delete process.env.SLUICE_CHECK_WORKER_AFTER;
    expect(defaultWorkerAfter(1)).toBe(Infinity);
    expect(defaultWorkerAfter(2)).toBe(Infinity);
    expect(defaultWorkerAfter(4)).toBe(WORKER_AFTER);
    process.env.SLUICE_CHECK_WORKER_AFTER = '0';
    expect(defaultWorkerAfter(2)).toBe(0);
    process.env.SLUICE_CHECK_WORKER_AFTER = 'x';
    expect(defaultWorkerAfter(2)).toBe(Infinity);
  });

  it('checkParts hashes sorted parents and a text lying apart as one (hashrevisionsha1)', () => {
    const text = Buffer.from('some file text\n');
    const p1 = Buffer.alloc(20, 0xee);
    const p2 = Buffer.alloc(20, 0x11);
    const node = revisionNode(text, p1, p2);
    const mismatch = (c: Uint8Array) => new SluiceError('REVLOG', Buffer.from(c).toString('hex'));
    expect(checkParts(p2, p1, text, node, mismatch)).toBeNull();
    expect(checkParts(p1, p2, text, node, mismatch)).toBeInstanceOf(SluiceError); // unsorted
    const n0 = revisionNode(text, NULL_NODE, NULL_NODE);
    expect(checkParts(NULL_NODE, NULL_NODE, text, n0, mismatch)).toBeNull();
    expect(checkParts(NULL_NODE, NULL_NODE, Buffer.from('other\n'), n0, mismatch)).toBeInstanceOf(
      SluiceError,
    );
  });
});
