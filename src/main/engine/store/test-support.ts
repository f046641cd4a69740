// Test-only helpers shared by the store tests (not imported by engine code): finding hg and its
// Python, running Mercurial's own functions over a batch of byte strings, temp dirs, fixtures.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The Python that has the `mercurial` module (common.md: /usr/bin/python3, not PATH's python3). */
export const HG_PYTHON = '/usr/bin/python3';

function probe(cmd: string, args: string[]): boolean {
  try {
    return spawnSync(cmd, args, { stdio: 'ignore', timeout: 30_000 }).status === 0;
  } catch {
    return false;
  }
}

/** hg on PATH (for CLI interop). */
export const hasHg = probe('hg', ['--version', '-q']);
/** hg's Python modules importable (for library-level differential tests). */
export const hasHgPython = probe(HG_PYTHON, ['-c', 'import mercurial.store']);

export const FIXTURES = resolve(dirname(fileURLToPath(import.meta.url)), '../../../../test/fixtures/hg');

/** Runs `python` (a script reading hex lines on stdin) with hg's Python; returns stdout lines. */
export function runHgPython(script: string, input: string[]): string[] {
  const res = spawnSync(HG_PYTHON, ['-c', script], {
    input: input.join('\n') + (input.length ? '\n' : ''),
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    env: { ...process.env, HGPLAIN: '1' },
  });
  if (res.status !== 0) throw new Error(`hg python failed: ${res.stderr}`);
  return res.stdout.split('\n').filter((l) => l.length > 0);
}

/** Runs hg with HGPLAIN and a fixed user; throws with stderr on a non-zero exit unless allowed. */
export function hg(args: string[], opts: { cwd?: string; allowFail?: boolean } = {}): { status: number; stdout: string; stderr: string } {
  const res = spawnSync('hg', args, {
    cwd: opts.cwd,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, HGPLAIN: '1', HGUSER: 'Test <test@example.com>', HGRCPATH: '' },
  });
  const out = { status: res.status ?? -1, stdout: res.stdout ?? '', stderr: res.stderr ?? '' };
  if (out.status !== 0 && !opts.allowFail) throw new Error(`hg ${args.join(' ')} failed (${out.status}): ${out.stderr}`);
  return out;
}

export function makeTempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `sluice-store-${prefix}-`));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export const hex = (s: string): string => Buffer.from(s, 'latin1').toString('hex');
export const unhex = (h: string): string => Buffer.from(h, 'hex').toString('latin1');

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
