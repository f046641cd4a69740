// applyStream writes the same repository whatever the input split: one big chunk (every entry
// through the synchronous fast path) and 1-byte chunks (every entry through the awaiting path).
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ByteSource } from '../../../../src/main/engine/format/byte-source';
import { openStreamBundle } from '../../../../src/main/engine/format/stream-bundle-file';
import { SHAPES, fixture } from '../../../support/format';
import { JobContext } from '../../../../src/main/engine/context/job-context';
import { applyStream } from '../../../../src/main/engine/streamclone/consume';

let work: string;
beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'sluice-apply-split-'));
});
afterEach(() => {
  rmSync(work, { recursive: true, force: true });
});

/** Every file under `root` (relative path → contents, hex). */
function tree(root: string, rel = ''): Map<string, string> {
  const out = new Map<string, string>();
  for (const name of readdirSync(join(root, rel)).sort()) {
    const path = rel ? `${rel}/${name}` : name;
    if (statSync(join(root, path)).isDirectory()) for (const [k, v] of tree(root, path)) out.set(k, v);
    else out.set(path, readFileSync(join(root, path)).toString('hex'));
  }
  return out;
}

async function applyPieces(pieces: Uint8Array[], dest: string): Promise<Map<string, string>> {
  const reader = await openStreamBundle(new ByteSource(pieces));
  const stats = await applyStream(reader, dest, {}, new JobContext({ sink: () => undefined }));
  expect(stats.files).toBeGreaterThan(10);
  return tree(dest);
}

describe.each(SHAPES)('applyStream, any split (%s fixtures)', (shape) => {
  it.each(['packed1.hg', 'stream-v2.hg'])(
    '%s: 1-byte chunks and one chunk write the same tree',
    async (name) => {
      const bundle = fixture(shape, name);
      const whole = await applyPieces([bundle], join(work, 'whole'));
      const ones = Array.from({ length: bundle.length }, (_, i) => bundle.subarray(i, i + 1));
      const bytewise = await applyPieces(ones, join(work, 'bytewise'));
      expect(bytewise).toEqual(whole);
      expect([...whole.keys()].filter((k) => k.startsWith('.hg/store/data/')).length).toBeGreaterThan(5);
    },
  );
});
