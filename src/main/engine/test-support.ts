// Test-only helpers shared by the per-area test-support files (format, revlog, store), the fuzz
// suite and the interop tests (not imported by engine code): the golden fixtures, hg on PATH,
// temp dirs, a PRNG. One definition here so the copies cannot drift apart.

import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const FIXTURES = resolve(dirname(fileURLToPath(import.meta.url)), '../../../test/fixtures/hg');
export const SHAPES = ['default', 'legacy'] as const;
export type Shape = (typeof SHAPES)[number];

/** The stream bundles scripts/make-fixtures.sh writes for each shape. */
export const FIXTURE_BUNDLES = [
  'packed1.hg',
  'stream-v2.hg',
  'stream-v2-zstd.hg',
  'stream-v2-gzip.hg',
  'stream-v2-bzip2.hg',
  'stream-v2-phases.hg',
] as const;

export function fixture(shape: Shape, name: string): Buffer {
  return readFileSync(join(FIXTURES, shape, name));
}

/** True when `cmd args` runs and exits 0 (false when it is missing). */
export function probe(cmd: string, args: string[]): boolean {
  try {
    return spawnSync(cmd, args, { stdio: 'ignore', timeout: 30_000 }).status === 0;
  } catch {
    return false;
  }
}
export const hasHg = probe('hg', ['--version', '-q']);

export const HG_ENV = { ...process.env, HGPLAIN: '1', HGUSER: 'Test <test@example.com>', HGRCPATH: '' };

export interface RunResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs hg (HGPLAIN, no user config); never throws on a non-zero exit. */
export function hgSync(args: string[], cwd?: string): RunResult {
  const r = spawnSync('hg', args, { cwd, env: HG_ENV, encoding: 'utf8', maxBuffer: 256 << 20 });
  return { status: r.status ?? -1, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

/** makeTempDir of one test area: a new dir `sluice-<area>-<label>-XXXXXX` under os.tmpdir(). */
export function tempDirMaker(area: string): (label: string) => string {
  return (label) => mkdtempSync(join(tmpdir(), `sluice-${area}-${label}-`));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** Extracts test/fixtures/hg/<shape>/repo.tar.gz (a repo's .hg: requires, store, cache) into `dir`. */
export function extractFixtureRepo(shape: Shape, dir: string): string {
  const res = spawnSync('tar', ['-xzf', join(FIXTURES, shape, 'repo.tar.gz'), '-C', dir]);
  if (res.status !== 0) throw new Error(`tar failed: ${res.stderr}`);
  return dir;
}

/** Extracts the fixture repo of `shape` into a new dir `<parent>/<shape>`; returns that dir. */
export function extractFixture(shape: Shape, parent: string): string {
  const dest = join(parent, shape);
  mkdirSync(dest, { recursive: true });
  return extractFixtureRepo(shape, dest);
}

/** Async chunks with an await between them (like a socket or a file read loop). */
export async function* chunked(pieces: readonly Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const p of pieces) {
    await Promise.resolve();
    yield p;
  }
}

/** Small deterministic PRNG (mulberry32) so a failing random case can be replayed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
