// Decompression bombs in hg's own wire compression (application/mercurial-0.2 with zstd or zlib,
// which the client asks for; HTTP Content-Encoding is refused outright, see server.test.ts): a
// getbundle reply of a few KiB that inflates to hundreds of MiB. The inflated bytes are handed on
// at the reader's pace and never held: memory stays bounded, the pull ends, nothing added.
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/main/engine/errors';
import { JobContext } from '../../src/main/engine/context/job-context';
import { createEmptyRepository } from '../../src/main/engine/changegroup';
import { pullFromUrl } from '../../src/main/engine/operations/pull/pull';
import { treeHash } from '../interop/changegroup-support';
import { scriptedServer } from '../wire-faults/harness';
import { i32, partHead, zstdFrame } from './craft';
import { backend, open, useHostileBackend, work } from './server-support';

const INFLATED = 512 << 20;
/** zlib's bomb is made by deflating real zeros (no RLE blocks by hand): smaller, to keep the test quick */
const INFLATED_ZLIB = 128 << 20;
/** RSS growth a bomb may cost: far below what it inflates to */
const MEMORY_BOUND_MIB = 128;

useHostileBackend('wire-bombs');

/** HG20 with one advisory part whose payload is `size` zero bytes, in chunks of at most 256 MiB. */
function bombPieces(size: number): (Buffer | { zeros: number })[] {
  const chunk = Math.min(size, 256 << 20);
  const out: (Buffer | { zeros: number })[] = [
    Buffer.concat([Buffer.from('HG20'), i32(0), partHead('x-padding', [], chunk)]),
  ];
  for (let left = size; left > 0; left -= chunk) {
    out.push({ zeros: chunk });
    out.push(i32(left > chunk ? chunk : 0)); // the next chunk's size, or the part's end
  }
  out.push(i32(0)); // end of the bundle
  return out;
}

function zlibBomb(): Buffer {
  const parts = bombPieces(INFLATED_ZLIB).map((p) => (Buffer.isBuffer(p) ? p : Buffer.alloc(p.zeros)));
  return deflateSync(Buffer.concat(parts), { level: 9 });
}

async function peakGrowth<T>(fn: () => Promise<T>): Promise<{ result: T; grownMiB: number }> {
  const base = process.memoryUsage().rss;
  let peak = base;
  const t = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
  try {
    const result = await fn();
    peak = Math.max(peak, process.memoryUsage().rss);
    return { result, grownMiB: (peak - base) / 2 ** 20 };
  } finally {
    clearInterval(t);
  }
}

describe('a getbundle reply that inflates a thousandfold and more', () => {
  it.each([
    ['zstd', INFLATED, () => zstdFrame(bombPieces(INFLATED))],
    ['zlib', INFLATED_ZLIB, zlibBomb],
  ] as const)(
    '%s: bounded memory, the pull ends, nothing added',
    async (engine, size, make) => {
      const body = Buffer.concat([Buffer.from([engine.length]), Buffer.from(engine), make()]);
      expect(body.length).toBeLessThan(size / 500);
      const s = await scriptedServer(backend.url, (_req, res, ctx) => {
        if (ctx.cmd !== 'getbundle') return false;
        res.writeHead(200, { 'Content-Type': 'application/mercurial-0.2' });
        res.end(body);
        return true;
      });
      open.push(s);
      const repo = join(work, `pulled-${engine}`);
      await createEmptyRepository(repo);
      const before = treeHash(repo, /^undo/);
      const { result, grownMiB } = await peakGrowth(() =>
        pullFromUrl(
          { kind: 'pull', repo, source: s.url, idleTimeoutMs: 5000 },
          new JobContext({ fileEvents: false }),
        ).then(
          () => null,
          (e: unknown) => e,
        ),
      );
      // nothing to add (the part is skipped as hg skips an unknown advisory part), or a typed refusal
      if (result !== null) expect(result).toBeInstanceOf(SluiceError);
      expect(grownMiB).toBeLessThan(MEMORY_BOUND_MIB);
      expect(treeHash(repo, /^undo/)).toBe(before); // a pull that adds nothing leaves undo files, as hg's
    },
    60_000,
  );
});
