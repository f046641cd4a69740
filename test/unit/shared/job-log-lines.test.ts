import { describe, expect, it } from 'vitest';
import { chunkLines, JobLogLines } from '../../../src/shared/job-log-lines';
import type { SluiceEvent } from '../../../src/shared/events';

const base = { jobId: 'a', time: 1 };

describe('JobLogLines', () => {
  it("writes a job's events as hg's --debug lines, once each", () => {
    const log = new JobLogLines();
    const events: SluiceEvent[] = [
      {
        ...base,
        type: 'start',
        kind: 'clone',
        files: 3,
        bytes: 1500,
        requirements: [],
        source: 'http://x/r',
      },
      { ...base, type: 'phase', phase: 'write' },
      {
        ...base,
        type: 'progress',
        bytes: 10,
        files: 1,
        totalBytes: 1500,
        totalFiles: 3,
        bytesPerSec: 1,
        elapsedMs: 1,
      },
      {
        ...base,
        type: 'files',
        entries: [
          { vfs: 's', name: 'data/foo.i', size: 66 },
          { vfs: 'c', name: 'branch2-served', size: 2048 },
        ],
      },
      { ...base, type: 'phase', phase: 'write' },
      { ...base, type: 'log', level: 'warn', message: 'slow disk' },
      { ...base, type: 'done', wallMs: 500, userCpuMs: 1, systemCpuMs: 1, bytes: 1500, files: 3 },
    ];
    for (const e of events) log.add(e);
    expect(log.pending).toBe(7);
    const chunk = log.take()!;
    expect(chunk.lines).toBe(7);
    expect(chunkLines(chunk)).toEqual([
      'streaming all changes',
      '3 files to transfer, 1.46 KB of data',
      'phase: write',
      'adding [s] data/foo.i (66 bytes)',
      'adding [c] branch2-served (2.00 KB)',
      'warning: slow disk',
      'transferred 1.46 KB in 0.5 seconds (2.93 KB/sec)',
    ]);
    expect(log.take()).toBeUndefined();
    log.add({ ...base, type: 'error', code: 'IO', message: 'disk full' });
    expect(log.takeLines()).toEqual(['abort: disk full']);
  });

  it('announces the totals from the first progress when the start did not know them', () => {
    const log = new JobLogLines();
    log.add({ ...base, type: 'start', kind: 'apply', files: 0, bytes: 0, requirements: [], source: '/b.hg' });
    const totals: SluiceEvent = {
      ...base,
      type: 'progress',
      bytes: 0,
      files: 0,
      totalBytes: 2048,
      totalFiles: 2,
      bytesPerSec: 0,
      elapsedMs: 0,
    };
    log.add(totals);
    log.add(totals);
    expect(log.takeLines()).toEqual(['2 files to transfer, 2.00 KB of data']);
  });
});
