import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { hgSync, missing, skipNote } from '../../support/env';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EngineWorkerHost } from '../../../src/main/host/engine-worker-host';
import { SOURCE_WORKER } from '../../../src/main/host/source-worker';
import type { WorkerToHost } from '../../../src/main/host/worker-protocol';
import type { JobRequest } from '../../../src/shared/jobs';
import { chunkLines } from '../../../src/shared/job-log-lines';

const script = new URL('../../support/host/scripted-worker.mjs', import.meta.url);
const sampleBundle = new URL('../../../build/sample/sample.hg', import.meta.url).pathname;

function run(repo: string, options: { maxOldGenerationSizeMb?: number } = {}) {
  const request: JobRequest = { kind: 'verify', repo };
  const host = new EngineWorkerHost({ batchIntervalMs: 10 }, { script, ...options });
  const messages: WorkerToHost[] = [];
  const crashes: Error[] = [];
  host.on('message', (m) => messages.push(m));
  host.on('crash', (e) => crashes.push(e));
  const exited = new Promise<number>((resolve) => host.on('exit', resolve));
  host.send({ type: 'start', jobId: 'j', request });
  return { host, messages, crashes, exited };
}

describe('EngineWorkerHost', () => {
  it('types messages; the worker stays for the next job until terminated', async () => {
    const { host, messages, crashes, exited } = run('/ok');
    await expect.poll(() => messages.map((m) => m.type)).toEqual(['events', 'finished']);
    host.send({ type: 'start', jobId: 'k', request: { kind: 'verify', repo: '/ok' } });
    await expect.poll(() => messages.length).toBe(4);
    expect(messages[3]).toEqual({ type: 'finished', jobId: 'k', ok: true });
    expect(crashes).toEqual([]);
    await host.terminate();
    expect(await exited).toBe(1);
  });

  it('delivers host messages to the worker', async () => {
    const { host, messages, exited } = run('/echo');
    host.send({ type: 'cancel', jobId: 'j' });
    await expect.poll(() => messages.length).toBe(1);
    expect(messages[0]).toMatchObject({
      type: 'events',
      jobId: 'j',
      events: [{ message: '{"type":"cancel","jobId":"j"}' }],
    });
    await host.terminate();
    expect(await exited).toBe(1);
    host.send({ type: 'cancel', jobId: 'j' }); // after exit: ignored, no throw
  });

  it('reports an uncaught error as crash then exit', async () => {
    const { crashes, exited } = run('/throw');
    expect(await exited).toBe(1);
    expect(crashes.map((e) => e.message)).toEqual(['boom in the engine']);
  });

  it('terminates a worker stuck in a loop', async () => {
    const { host, messages, exited } = run('/spin');
    await expect.poll(() => messages.length).toBe(1);
    await host.terminate();
    await exited;
  });

  it('ends a worker that exceeds its heap cap without taking the host down', async () => {
    const { crashes, exited } = run('/alloc', { maxOldGenerationSizeMb: 64 });
    expect(await exited).toBe(1);
    expect(crashes[0]?.message).toMatch(/memory/i);
  });
});

describe('engine-worker.ts (the real worker entry, run from source)', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-worker-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  let host: EngineWorkerHost;
  beforeEach(() => {
    host = new EngineWorkerHost({ batchIntervalMs: 10 }, SOURCE_WORKER);
  });
  afterEach(() => host.terminate());

  async function runReal(request: JobRequest, jobId = 'real') {
    const messages: WorkerToHost[] = [];
    const finished = new Promise<WorkerToHost>((resolve) =>
      host.on('message', (m) => {
        if (m.type === 'answer' || m.jobId !== jobId) return;
        messages.push(m);
        if (m.type === 'finished') resolve(m);
      }),
    );
    host.send({ type: 'start', jobId, request });
    const result = await finished;
    return {
      finished: result,
      events: messages.flatMap((m) => (m.type === 'events' ? m.events : [])),
      log: messages.flatMap((m) => (m.type === 'events' && m.log ? chunkLines(m.log) : [])),
      lines: messages.reduce((n, m) => n + (m.type === 'events' && m.log ? m.log.lines : 0), 0),
    };
  }

  it('applies a bundle through the engine and posts its events, its log as compact chunks, then finished', async () => {
    const dest = join(dir, 'repo');
    const { finished, events, log, lines } = await runReal({ kind: 'apply', bundlePath: sampleBundle, dest });
    expect(finished).toEqual({ type: 'finished', jobId: 'real', ok: true });
    expect(events[0]).toMatchObject({ type: 'start', jobId: 'real', kind: 'apply', files: 28 });
    expect(events.at(-1)).toMatchObject({ type: 'done', jobId: 'real', files: 28, result: dest });
    // per-file entries travel as log chunks only
    expect(events.some((e) => e.type === 'files')).toBe(false);
    const text = log;
    expect(text).toHaveLength(lines);
    expect(text[0]).toBe('28 files to transfer, ' + text[0]!.split(', ')[1]);
    expect(text.filter((l) => /^adding \[[sc]\] /.test(l))).toHaveLength(28);
    expect(text.at(-1)).toMatch(/^transferred .* seconds/);
    expect(await readFile(join(dest, '.hg', 'requires'), 'utf8')).toMatch(/share-safe/);
  });

  it('runs two jobs at once on one worker', async () => {
    const [a, b] = await Promise.all([
      runReal({ kind: 'apply', bundlePath: sampleBundle, dest: join(dir, 'a') }, 'a'),
      runReal({ kind: 'apply', bundlePath: sampleBundle, dest: join(dir, 'b') }, 'b'),
    ]);
    expect(a.finished).toEqual({ type: 'finished', jobId: 'a', ok: true });
    expect(b.finished).toEqual({ type: 'finished', jobId: 'b', ok: true });
    expect(a.events.every((e) => e.jobId === 'a') && b.events.every((e) => e.jobId === 'b')).toBe(true);
    expect(await readFile(join(dir, 'b', '.hg', 'requires'), 'utf8')).toMatch(/share-safe/);
  });

  it('reports an engine failure as an error event with its code, then finished with the error', async () => {
    const notABundle = join(dir, 'not-a-bundle.hg');
    await writeFile(notABundle, 'hello, not a bundle');
    const { finished, events } = await runReal({
      kind: 'apply',
      bundlePath: notABundle,
      dest: join(dir, 'r'),
    });
    expect(finished).toMatchObject({ type: 'finished', ok: false, error: { code: 'BAD_MAGIC' } });
    expect(events.at(-1)).toMatchObject({ type: 'error', jobId: 'real', code: 'BAD_MAGIC' });
    expect(events.filter((e) => e.type === 'error')).toHaveLength(1);
  });

  it.skipIf(missing('hg'))(
    `answers a summary query with hg status's counts, branch and bookmark${skipNote('hg')}`,
    async () => {
      const repo = join(dir, 'wc');
      const hg = (args: string[]) => expect(hgSync(args, repo).status).toBe(0);
      await mkdir(repo);
      hg(['init']);
      await writeFile(join(repo, 'a.txt'), 'a\n');
      await writeFile(join(repo, 'b.txt'), 'b\n');
      hg(['commit', '-q', '-A', '-m', 'one']);
      hg(['branch', '-q', 'feature']);
      hg(['bookmark', '-q', 'work']);
      await writeFile(join(repo, 'a.txt'), 'changed\n');
      await rm(join(repo, 'b.txt'));
      await writeFile(join(repo, 'new.txt'), 'new\n');
      const answers: WorkerToHost[] = [];
      host.on('message', (m) => answers.push(m));
      host.send({ type: 'query', queryId: 'q1', query: { kind: 'summary', repo } });
      host.send({ type: 'query', queryId: 'q2', query: { kind: 'summary', repo: join(dir, 'nothing') } });
      await expect.poll(() => answers.length).toBe(2);
      expect(answers.find((a) => a.type === 'answer' && a.queryId === 'q1')).toEqual({
        type: 'answer',
        queryId: 'q1',
        ok: true,
        result: {
          modified: 1,
          added: 0,
          removed: 0,
          deleted: 1,
          unknown: 1,
          branch: 'feature',
          bookmark: 'work',
        },
      });
      expect(answers.find((a) => a.type === 'answer' && a.queryId === 'q2')).toMatchObject({
        ok: false,
        error: { code: 'NOT_A_REPO' },
      });
    },
  );
});
