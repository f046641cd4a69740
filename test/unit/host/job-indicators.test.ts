import { describe, expect, it } from 'vitest';
import { JobIndicators, type EndedJob, type IndicatorState } from '../../../src/main/host/job-indicators';
import type { PushMessage } from '../../../src/main/host/job-registry';
import type { JobSummary } from '../../../src/shared/ipc';
import type { JobRequest } from '../../../src/shared/jobs';

const summary = (
  jobId: string,
  state: JobSummary['state'],
  request: JobRequest,
  startedAt = 0,
  endedAt?: number,
): PushMessage => ({
  channel: 'job:state',
  payload: { jobId, request, state, startedAt, ...(endedAt !== undefined && { endedAt }) },
});
const progress = (jobId: string, bytes: number, totalBytes: number): PushMessage => ({
  channel: 'job:events',
  payload: {
    jobId,
    events: [
      {
        type: 'progress',
        jobId,
        time: 0,
        bytes,
        files: 0,
        totalBytes,
        totalFiles: 1,
        bytesPerSec: 1,
        elapsedMs: 1,
      },
    ],
  },
});
const apply: JobRequest = { kind: 'apply', bundlePath: '/b.hg', dest: '/r' };
const verify: JobRequest = { kind: 'verify', repo: '/r' };

describe('JobIndicators', () => {
  it('shows one bar for all running jobs, a transfer flag, and reports ended jobs', () => {
    const states: IndicatorState[] = [];
    const ended: EndedJob[] = [];
    const ind = new JobIndicators(
      (s) => states.push(s),
      (j) => ended.push(j),
    );
    ind.observe(summary('a', 'queued', apply));
    expect(states).toEqual([]);
    ind.observe(summary('a', 'running', apply));
    expect(states.at(-1)).toEqual({ progress: 'indeterminate', transferring: true });
    ind.observe(progress('a', 50, 100));
    expect(states.at(-1)).toEqual({ progress: 0.5, transferring: true });
    const n = states.length;
    ind.observe(progress('a', 50.1, 100)); // below 0.5 %: no call
    expect(states).toHaveLength(n);
    ind.observe(summary('v', 'running', verify));
    ind.observe(progress('v', 0, 300));
    expect(states.at(-1)).toEqual({ progress: 50.1 / 400, transferring: true });
    ind.observe(summary('a', 'done', apply, 0, 20_000));
    expect(states.at(-1)).toEqual({ progress: 0, transferring: false });
    expect(ended).toEqual([
      { summary: expect.objectContaining({ jobId: 'a', state: 'done' }), durationMs: 20_000 },
    ]);
    ind.observe({
      channel: 'job:events',
      payload: {
        jobId: 'v',
        events: [{ type: 'error', jobId: 'v', time: 0, code: 'REVLOG', message: 'bad' }],
      },
    });
    ind.observe(summary('v', 'failed', verify, 0, 5));
    expect(states.at(-1)).toEqual({ progress: null, transferring: false });
    expect(ended[1]).toMatchObject({ durationMs: 5, error: { code: 'REVLOG' } });
  });

  it('does not report a job cancelled while queued as ended', () => {
    const ended: EndedJob[] = [];
    const ind = new JobIndicators(
      () => {},
      (j) => ended.push(j),
    );
    ind.observe(summary('q', 'queued', apply));
    ind.observe(summary('q', 'cancelled', apply, 0, 1));
    expect(ended).toEqual([]);
  });
});
