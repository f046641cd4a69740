import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { extractFixtureRepo, makeTempDir, removeDir } from '../../../support/revlog';
import type { CliIO } from '../../../../src/cli/command';
import { command } from '../../../../src/cli/commands/verify';

function fakeIO(signal = new AbortController().signal): { io: CliIO; out: () => string; err: () => string } {
  let out = '';
  let err = '';
  const stream = (append: (s: string) => void) =>
    ({
      isTTY: false,
      write: (chunk: string | Uint8Array) => {
        append(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
        return true;
      },
    }) as unknown as NodeJS.WriteStream;
  return {
    io: { stdout: stream((s) => (out += s)), stderr: stream((s) => (err += s)), signal },
    out: () => out,
    err: () => err,
  };
}

let tmp: string;
let repo: string;
beforeAll(() => {
  tmp = makeTempDir('cli-verify');
  repo = join(tmp, 'repo');
  mkdirSync(repo);
  extractFixtureRepo('default', repo);
});
afterAll(() => removeDir(tmp));

describe('sluice verify', () => {
  it('prints hg verify output and exits 0 on a clean repository', async () => {
    const f = fakeIO();
    expect(await command.run([repo], f.io)).toBe(0);
    expect(f.out()).toBe(
      'checking changesets\nchecking manifests\ncrosschecking files in changesets and manifests\nchecking files\n' +
        'checked 6 changesets with 24 changes to 20 files\n',
    );
    expect(f.err()).toBe('');
    const q = fakeIO();
    expect(await command.run([repo, '-q'], q.io)).toBe(0);
    expect(q.out()).toBe('');
  });

  it('--json: NDJSON events from start to done', async () => {
    const f = fakeIO();
    expect(await command.run([repo, '--json'], f.io)).toBe(0);
    const events = f
      .out()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; message?: string; kind?: string; phase?: string });
    expect(events[0]).toMatchObject({ type: 'phase', phase: 'verify' });
    expect(events[1]).toMatchObject({ type: 'start', kind: 'verify' });
    expect(events.at(-1)).toMatchObject({ type: 'done', result: repo });
    expect(
      events.some(
        (e) => e.type === 'log' && e.message === 'checked 6 changesets with 24 changes to 20 files',
      ),
    ).toBe(true);
  });

  it('exits 1 with the problems on stderr when the repository is damaged, and aborts on a non-repository', async () => {
    const readme = join(repo, '.hg/store/data/_r_e_a_d_m_e.txt.i');
    const good = readFileSync(readme);
    const bad = Buffer.from(good);
    bad[64 + 3] ^= 0x20;
    writeFileSync(readme, bad);
    try {
      const f = fakeIO();
      expect(await command.run([repo], f.io)).toBe(1);
      expect(f.err()).toBe(
        ' README.txt@0: unpacking 2c186c8c5bc0: integrity check failed on data/README.txt:0\n' +
          '1 integrity errors encountered!\n(first damaged changeset appears to be 0)\n',
      );
      const j = fakeIO();
      expect(await command.run([repo, '--json'], j.io)).toBe(1);
      expect(JSON.parse(j.out().trim().split('\n').at(-1)!)).toMatchObject({
        type: 'error',
        code: 'VERIFY_FAILED',
      });
    } finally {
      writeFileSync(readme, good);
    }
    const n = fakeIO();
    expect(await command.run([join(tmp, 'nothing')], n.io)).toBe(1);
    expect(n.err()).toMatch(/^abort: repository .* not found\n$/);
  });

  it('Ctrl-C: exit 130', async () => {
    const ac = new AbortController();
    ac.abort();
    const f = fakeIO(ac.signal);
    expect(await command.run([repo], f.io)).toBe(130);
    expect(f.err()).toBe('interrupted!\n');
  });
});
