import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runJob } from '../../../src/main/host/engine-api';
import { JobLogStore } from '../../../src/main/host/job-log-store';
import { decodeChunk, encodeLog } from '../../../src/main/host/job-log-file';
import { chunkLines, JobLogLines } from '../../../src/shared/job-log-lines';
import {
  debugLine,
  formatHgBytes,
  transferredLine,
  type FileEntry,
  type SluiceEvent,
} from '../../../src/shared/events';

const sampleBundle = new URL('../../../build/sample/sample.hg', import.meta.url).pathname;

/**
 * The log's lines as they were formatted eagerly, one string per event as it came, before the log
 * kept compact entries: the oracle the lazily formatted lines must equal.
 */
function eagerLines(events: readonly SluiceEvent[]): string[] {
  const lines: string[] = [];
  let announced = false;
  let kind: string | undefined;
  let phase: string | undefined;
  const announce = (files: number, bytes: number) => {
    if (!announced) lines.push(`${files} files to transfer, ${formatHgBytes(bytes)} of data`);
    announced = true;
  };
  for (const e of events) {
    if (e.type === 'start') {
      kind = e.kind;
      if (e.kind === 'clone') lines.push('streaming all changes');
      if (e.files > 0) announce(e.files, e.bytes);
    } else if (e.type === 'phase' && e.phase !== phase) lines.push(`phase: ${(phase = e.phase)}`);
    else if (e.type === 'progress' && e.totalFiles > 0) announce(e.totalFiles, e.totalBytes);
    else if (e.type === 'files') for (const f of e.entries) lines.push(debugLine(f));
    else if (e.type === 'log') lines.push(e.level === 'warn' ? `warning: ${e.message}` : e.message);
    else if (e.type === 'done' && (kind === 'clone' || kind === 'apply'))
      lines.push(transferredLine(e.bytes, e.wallMs));
    else if (e.type === 'error') lines.push(`abort: ${e.message}`);
  }
  return lines;
}

const base = { jobId: 'j', time: 1 };

/** A clone's events with what a real one has and more: every size unit, names outside latin1. */
function cloneMix(): SluiceEvent[] {
  const sizes = [
    0,
    1,
    1023,
    1024,
    10239,
    10240,
    102400,
    1 << 20,
    15 << 20,
    300 << 20,
    1.5 * 2 ** 30,
    2 ** 40,
  ];
  const entries = (vfs: FileEntry['vfs'], n: number, offset: number): FileEntry[] =>
    Array.from({ length: n }, (_, i) => ({
      vfs,
      name: `${vfs === 'w' ? '' : 'data/'}${i % 7 === 0 ? 'größe-文件-😀' : 'src/f'}${offset + i}.${vfs === 'w' ? 'c' : 'i'}`,
      size: sizes[(offset + i) % sizes.length]!,
    }));
  const progress = (files: number): SluiceEvent => ({
    ...base,
    type: 'progress',
    bytes: files * 10,
    files,
    totalBytes: 123_456_789,
    totalFiles: 2500,
    bytesPerSec: 1e6,
    elapsedMs: files,
  });
  return [
    { ...base, type: 'start', kind: 'clone', files: 0, bytes: 0, requirements: [], source: 'http://x/r' },
    { ...base, type: 'phase', phase: 'write' },
    progress(0),
    { ...base, type: 'files', entries: entries('s', 900, 0) },
    { ...base, type: 'log', level: 'info', message: 'adding [s] data/not-a-file-line.i (1 bytes)' },
    { ...base, type: 'files', entries: entries('c', 3, 900) },
    progress(903),
    { ...base, type: 'phase', phase: 'write' },
    { ...base, type: 'phase', phase: 'checkout' },
    { ...base, type: 'files', entries: entries('w', 1200, 1000) },
    { ...base, type: 'log', level: 'warn', message: 'slow disk' },
    { ...base, type: 'done', wallMs: 4321, userCpuMs: 1, systemCpuMs: 1, bytes: 123_456_789, files: 2103 },
    { ...base, type: 'error', code: 'IO', message: 'disk full' },
  ];
}

/** A real apply's events (the engine on the sample bundle), as the app's engine worker gets them. */
async function realApply(dest: string): Promise<SluiceEvent[]> {
  const events: SluiceEvent[] = [];
  await runJob(
    { kind: 'apply', bundlePath: sampleBundle, dest },
    { jobId: 'j', emit: (e) => events.push(e), signal: new AbortController().signal },
  );
  return events;
}

describe('the debug log, kept compact and formatted when read', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-log-file-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  /** The events through JobLogLines in batches, as the worker takes them, into a store. */
  function logged(store: JobLogStore, jobId: string, events: readonly SluiceEvent[], batch: number) {
    const lines = new JobLogLines();
    events.forEach((e, i) => {
      lines.add(e);
      const chunk = (i + 1) % batch === 0 ? lines.take() : undefined;
      if (chunk) store.appendChunk(jobId, chunk);
    });
    const rest = lines.take();
    if (rest) store.appendChunk(jobId, rest);
  }

  it('shows, filters and exports the same lines as the eager format, in memory and after a restart', async () => {
    const jobs = { apply: await realApply(join(dir, 'repo')), clone: cloneMix() };
    expect(jobs.apply.filter((e) => e.type === 'files').length).toBeGreaterThan(0);
    const store = new JobLogStore(join(dir, 'logs'));
    for (const [jobId, events] of Object.entries(jobs)) logged(store, jobId, events, 3);
    for (const [jobId, events] of Object.entries(jobs)) {
      const want = eagerLines(events);
      const shown = async (s: JobLogStore) => {
        expect((await s.page(jobId, 0, 0)).total).toBe(want.length);
        const pages: string[] = [];
        for (let from = 0; from < want.length; from += 37)
          pages.push(...(await s.page(jobId, from, 37)).lines);
        expect(pages).toEqual(want);
        const filtered = await s.page(jobId, 0, 2000, 'GRÖßE-文件');
        const numbered = want.flatMap((l, i) => (l.toLowerCase().includes('größe-文件') ? [i + 1] : []));
        expect(filtered.lineNumbers).toEqual(numbered);
        expect(filtered.lines).toEqual(numbered.map((n) => want[n - 1]));
        expect(await s.text(jobId, '# h')).toBe(`# h\n${want.join('\n')}\n`);
      };
      await shown(store);
      await store.finish(jobId);
      await shown(new JobLogStore(join(dir, 'logs')));
    }
  });

  it('reads back each chunk exactly, and refuses a damaged one', () => {
    const lines = new JobLogLines();
    for (const e of cloneMix()) lines.add(e);
    const chunk = lines.take()!;
    const { data, index } = encodeLog([chunk, chunk], 7);
    expect(index).toMatchObject({ version: 2, dropped: 7, lines: 2 * chunk.lines });
    const [first, second] = index.chunks;
    expect(second![1]).toBe(data.length / 2);
    const back = decodeChunk(data.subarray(first![1], second![1]), chunk.lines, first![3] === 1);
    expect(chunkLines(back!)).toEqual(chunkLines(chunk));
    expect(decodeChunk(data.subarray(first![1], second![1] - 2), chunk.lines, true)).toBeNull();
  });

  it('still reads a log written as text (version 1)', async () => {
    const logs = join(dir, 'logs');
    await mkdir(logs);
    await writeFile(join(logs, 'old.log'), 'a\nb\nc\nd\n');
    const index = {
      version: 1,
      dropped: 3,
      lines: 4,
      chunks: [
        [0, 0],
        [2, 4],
      ],
    };
    await writeFile(join(logs, 'old.json'), JSON.stringify(index));
    const store = new JobLogStore(logs);
    expect(await store.page('old', 1, 2)).toEqual({ from: 1, lines: ['b', 'c'], total: 4, dropped: 3 });
    expect(await store.text('old')).toMatch(/dropped .*\na\nb\nc\nd\n$/);
  });
});
