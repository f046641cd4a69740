import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { SluiceEvent } from '../../../../src/shared/events';
import type { JobRequest } from '../../../../src/shared/jobs';
import { inspectBundle } from '../../../../src/main/engine/operations/apply/inspect';
import { JobContext } from '../../../../src/main/engine/context/job-context';
import { runJob } from '../../../../src/main/engine/job/run-job';

const FIXTURES = fileURLToPath(new URL('../../../fixtures/hg/', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'sluice-runjob-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function run(request: JobRequest) {
  const events: SluiceEvent[] = [];
  const ctx = new JobContext({ sink: (e) => events.push(e), fileEvents: false });
  const result = await runJob(request, ctx).catch((e: unknown) => e);
  return { events, result, types: events.map((e) => e.type) };
}

describe('inspectBundle', () => {
  it('says how many bytes a truncated uncompressed bundle is missing, and nothing for a whole one', async () => {
    const whole = join(FIXTURES, 'default', 'packed1.hg');
    expect((await inspectBundle(whole)).missingBytes).toBeUndefined();
    const bytes = readFileSync(whole);
    const cut = join(work, 'cut.hg');
    writeFileSync(cut, bytes.subarray(0, Math.floor(bytes.length / 2)));
    const info = await inspectBundle(cut);
    expect(info.missingBytes).toBeGreaterThanOrEqual(info.bytes - info.sizeOnDisk);
    expect(info.missingBytes).toBeGreaterThan(bytes.length / 2 - 1000);
  });
});

describe('runJob', () => {
  it("apply and inspect: a missing bundle or a folder is the source's problem (SOURCE_UNREADABLE), nothing written", async () => {
    const dest = join(work, 'never');
    for (const bundlePath of [join(work, 'missing.hg'), work]) {
      const { result, events } = await run({ kind: 'apply', bundlePath, dest });
      expect(result).toMatchObject({
        code: 'SOURCE_UNREADABLE',
        message: expect.stringContaining(bundlePath),
      });
      expect(events.at(-1)).toMatchObject({ type: 'error', code: 'SOURCE_UNREADABLE' });
      await expect(inspectBundle(bundlePath)).rejects.toMatchObject({ code: 'SOURCE_UNREADABLE' });
    }
    expect(existsSync(dest)).toBe(false);
  });

  it('apply: start, phases, progress, done with time, CPU, bytes, files, close stats and peak RSS', async () => {
    const dest = join(work, 'applied');
    const { events, result } = await run({
      kind: 'apply',
      bundlePath: join(FIXTURES, 'default', 'stream-v2-zstd.hg'),
      dest,
    });
    expect(result).toMatchObject({ files: 28, result: dest });
    expect(events[0]).toMatchObject({ type: 'start', kind: 'apply', format: 'stream-v2', files: 28 });
    const done = events.at(-1)!;
    expect(done).toMatchObject({
      type: 'done',
      files: 28,
      bytes: 145019,
      result: dest,
      close: { background: false },
    });
    if (done.type !== 'done') throw new Error('no done event');
    expect(done.wallMs).toBeGreaterThanOrEqual(0);
    expect(done.userCpuMs + done.systemCpuMs).toBeGreaterThanOrEqual(0);
    expect(done.peakRssBytes).toBeGreaterThan(10 << 20);
    for (const e of events) expect(e.jobId).toBe(events[0]!.jobId);
  });

  it('apply with verify runs the verifier on the result', async () => {
    const { events, types } = await run({
      kind: 'apply',
      bundlePath: join(FIXTURES, 'legacy', 'packed1.hg'),
      dest: join(work, 'verified'),
      verify: true,
    });
    expect(events.some((e) => e.type === 'phase' && e.phase === 'verify')).toBe(true);
    expect(types.at(-1)).toBe('done');
  });

  it('a failure is an error event with a code, and rejects with the SluiceError', async () => {
    const { events, result } = await run({
      kind: 'apply',
      bundlePath: join(work, 'missing.hg'),
      dest: join(work, 'x'),
    });
    expect(result).toMatchObject({ code: 'SOURCE_UNREADABLE' });
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'SOURCE_UNREADABLE' });
  });

  it('an unknown kind is USAGE', async () => {
    const { result } = await run({ kind: 'teleport' } as unknown as JobRequest);
    expect(result).toMatchObject({ code: 'USAGE' });
  });

  it('bundle: start with the listing, done with the bundle path; the bundle applies', async () => {
    const repo = join(work, 'applied');
    const out = join(work, 'made.hg');
    const { events, result } = await run({ kind: 'bundle', repo, out, type: 'packed1' });
    expect(result).toMatchObject({ result: out });
    expect(events[0]).toMatchObject({ type: 'start', kind: 'bundle', format: 'packed1' });
    expect(events.at(-1)).toMatchObject({ type: 'done', result: out });
    expect(await inspectBundle(out)).toMatchObject({ type: 'packed1', unsupported: [] });
  });

  it('verify: a standalone verify job', async () => {
    const { types } = await run({ kind: 'verify', repo: join(work, 'applied') });
    expect(types[0]).toBe('start');
    expect(types.at(-1)).toBe('done');
  });
});
