// Interop of `sluice update` with real hg 6.3.2 on large files, with the streaming threshold
// lowered: files above it are written as a stream (a snapshot decompressed on the way, a delta
// chain folded and applied), on the main thread and on workers, and the checkout equals hg's as in
// checkout.test.ts; a corrupted delta fails the node check and leaves no file.
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectSameAsHg, refusal, update } from './checkout-support';
import { hg } from './changegroup-support';
import { verifyRepository } from '../../src/main/engine/operations/verify/verify';
import { missing, removeDir, skipNote, tempDirMaker } from '../support/env';

// test/support/env.ts's probes: locally a missing tool skips (named in the title), under CI=true it fails
const noHg = missing('hg');
const skipNoHg = skipNote('hg');

const makeTempDir = tempDirMaker('checkout');
let work: string;
beforeAll(() => {
  work = makeTempDir('streamed');
});
afterAll(() => removeDir(work));

describe.skipIf(noHg)(
  'large files are streamed into place (streamAbove lowered to 64 KiB)' + skipNoHg,
  () => {
    const streamAbove = 64 << 10;
    let src: string;
    /** deterministic incompressible bytes */
    function noise(size: number, seed: string): Buffer {
      const out = Buffer.alloc(size);
      for (let i = 0, h = Buffer.from(seed); i < size; i += 64) {
        h = createHash('sha512').update(h).update(String(i)).digest();
        h.copy(out, i);
      }
      return out;
    }
    beforeAll(() => {
      src = join(work, 'streamed');
      hg(['init', src]);
      const big = noise(1 << 20, 'big');
      writeFileSync(join(src, 'big.bin'), big);
      writeFileSync(join(src, 'run.bin'), noise(200 << 10, 'run'));
      chmodSync(join(src, 'run.bin'), 0o755);
      // data starting with \1\n: hg stores it behind an empty metadata block
      writeFileSync(
        join(src, 'meta-like.bin'),
        Buffer.concat([Buffer.from('\x01\nnot metadata\x01\n'), noise(100 << 10, 'm')]),
      );
      // more than one claim of files (16): the last large file goes to another thread than the first
      mkdirSync(join(src, 'small'));
      for (let i = 0; i < 20; i++) writeFileSync(join(src, 'small', `f${i}`), `small ${i}\n`);
      writeFileSync(join(src, 'zz-late.bin'), noise(100 << 10, 'late'));
      // compressible: one full snapshot that hg compresses (zstd, hg's default here; zlib in the zlib
      // clone), so the checkout decompresses it as a stream
      const words = Array.from(
        { length: 40000 },
        (_, i) => `line ${i} ${noise(6, `w${i % 97}`).toString('hex')}\n`,
      );
      writeFileSync(join(src, 'words.txt'), words.join(''));
      hg(['commit', '-q', '-A', '-m', 'rev 0', '-d', '0 0'], src);
      // a chain of deltas: each revision rewrites, inserts and deletes a few regions
      for (let r = 1; r <= 5; r++) {
        noise(3000, `edit${r}`).copy(big, (r * 150_000) % big.length);
        const grown = Buffer.concat([
          big.subarray(0, r * 1000),
          noise(500 * r, `ins${r}`),
          big.subarray(r * 1000 + 200),
        ]);
        writeFileSync(join(src, 'big.bin'), grown);
        if (r === 2) hg(['cp', '-q', 'big.bin', 'copy.bin'], src); // copy metadata in copy.bin's text
        hg(['commit', '-q', '-A', '-m', `rev ${r}`, '-d', `${r} 0`], src);
      }
    });

    it.skipIf(noHg)(
      'update from null and between revisions equals hg, on the main thread and on workers',
      async () => {
        for (const [name, opts] of [
          ['main', { workers: 0 }],
          ['workers', { workers: 2, mainShare: false }],
          ['zlib', { workers: 0 }],
        ] as const) {
          const ours = join(work, `streamed-ours-${name}`);
          const theirs = join(work, `streamed-hg-${name}`);
          if (name === 'zlib')
            hg(['clone', '-q', '-U', '--pull', '--config', 'format.revlog-compression=zlib', src, ours]);
          else hg(['clone', '-q', '-U', src, ours]);
          // its one chunk: in words.txt.d, or after its index entry when the revlog is inline
          const store = join(ours, '.hg', 'store', 'data');
          const split = existsSync(join(store, 'words.txt.d'));
          const head = readFileSync(join(store, split ? 'words.txt.d' : 'words.txt.i'))[split ? 0 : 64];
          expect(String.fromCharCode(head!)).toBe(name === 'zlib' ? 'x' : '('); // stored compressed
          hg(['clone', '-q', src, theirs]);
          expect(hg(['debugindex', 'big.bin'], ours).trim().split('\n').length).toBe(7);
          await update(ours, { ...opts, streamAbove });
          expectSameAsHg(ours, theirs);
          expect(readFileSync(join(ours, 'copy.bin')).subarray(0, 2)).not.toEqual(Buffer.from('\x01\n'));
          expect(readFileSync(join(ours, 'meta-like.bin')).subarray(0, 2)).toEqual(Buffer.from('\x01\n'));
          if (name === 'zlib') continue; // the other compression, from null only (time)
          for (const rev of ['2', '0']) {
            await update(ours, { ...opts, streamAbove, rev });
            hg(['update', '-q', rev], theirs);
            expectSameAsHg(ours, theirs);
          }
        }
      },
      120_000,
    );

    it.skipIf(noHg)('a corrupted delta fails the node check and leaves no file', async () => {
      const ours = join(work, 'streamed-corrupt');
      hg(['clone', '-q', '-U', src, ours]);
      // the tip's delta inserts incompressible bytes (stored uncompressed): flip its last byte
      const d = join(ours, '.hg', 'store', 'data', 'big.bin.d');
      const bytes = readFileSync(d);
      bytes[bytes.length - 1] ^= 0xff;
      writeFileSync(d, bytes);
      const e = await refusal(ours, { workers: 0, streamAbove });
      expect(e.code).toBe('REVLOG');
      expect((e.details as { problem?: string }).problem).toBe('node-mismatch');
      expect(existsSync(join(ours, 'big.bin'))).toBe(false);
      expect(readdirSync(ours)).toEqual(['.hg']);
    });
  },
);

describe.skipIf(noHg)(
  'an edited large file (a snapshot and deltas) streamed by checkout and verify (threshold lowered to 1 MiB)' +
    skipNoHg,
  () => {
    // Above the threshold, the snapshot is decompressed as a stream and the chain's folded deltas
    // applied on the way (Revlog.streamRevisions): never the whole text, nor the whole snapshot.
    const streamAbove = 1 << 20;
    let src: string;
    beforeAll(() => {
      src = join(work, 'edited-large');
      hg(['init', src]);
      let lines = Array.from(
        { length: 60_000 },
        (_, i) => `line ${i} ${createHash('md5').update(String(i)).digest('hex')}\n`,
      );
      writeFileSync(join(src, 'large.txt'), lines.join(''));
      hg(['commit', '-q', '-A', '-m', 'large', '-d', '0 0'], src);
      // edits: lines changed here and there, a block removed, lines added at the start and the end
      for (let r = 1; r <= 4; r++) {
        lines = lines.map((l, i) => (i % 7919 === r * 13 ? `edited ${r} ${l}` : l));
        if (r === 1) lines.unshift('a new first line\n');
        if (r === 2) lines.splice(20_000, 5_000);
        if (r === 3) lines.push('a new last line\n');
        if (r === 4) lines.splice(40_000, 0, ...Array.from({ length: 3000 }, (_, i) => `inserted ${i}\n`));
        writeFileSync(join(src, 'large.txt'), lines.join(''));
        hg(['commit', '-q', '-m', `edit ${r}`, '-d', `${r} 0`], src);
      }
    });

    for (const compression of ['zstd', 'zlib'] as const) {
      it.skipIf(noHg)(
        `${compression}: checkout from null and to rev 2 equals hg's, hg status clean; verify as hg`,
        async () => {
          const ours = join(work, `edited-large-${compression}`);
          const theirs = join(work, `edited-large-hg-${compression}`);
          hg([
            'clone',
            '-q',
            '-U',
            '--pull',
            '--config',
            `format.revlog-compression=${compression}`,
            src,
            ours,
          ]);
          hg(['clone', '-q', src, theirs]);
          // the tip is a delta chain on a snapshot of more than the threshold
          const chain = hg(['debugdeltachain', '-T', '{rev} {chainlen}\n', 'large.txt'], ours)
            .trim()
            .split('\n');
          expect(chain.at(-1)).toBe('4 5');
          const size = Number(hg(['debugdata', 'large.txt', '0'], ours).length);
          expect(size).toBeGreaterThan(2 * streamAbove);
          await update(ours, { workers: 0, streamAbove });
          expectSameAsHg(ours, theirs);
          await update(ours, { workers: 0, streamAbove, rev: '2' });
          hg(['update', '-q', '2'], theirs);
          expectSameAsHg(ours, theirs);
          const report = await verifyRepository(ours, {}, { streamAbove });
          expect(report.errors).toBe(0);
          expect(report.lines.filter((l) => l.stream === 'out').map((l) => l.text)).toEqual(
            hg(['verify'], ours)
              .split('\n')
              .filter((l) => l !== ''),
          );
        },
        120_000,
      );
    }
  },
);
