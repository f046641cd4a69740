// runJob: the one entry point that turns a JobRequest into work and events, for every host (CLI,
// the app's engine process, the web host, tests). It owns the job's frame: the done event (wall
// and CPU time, bytes, files, close stats, peak RSS) or the error event; the jobs themselves emit
// start/phase/progress/files/log.

import type { CloseStats } from '../../../shared/events';
import type {
  ApplyRequest,
  BundleRequest,
  CloneRequest,
  JobRequest,
  PullRequest,
  UpdateRequest,
  VerifyRequest,
} from '../../../shared/jobs';
import { resolve } from 'node:path';
import { SluiceError, toSluiceError } from '../errors';
import type { JobContext } from '../context/job-context';
import { ProgressTracker } from '../context/progress';

/** What a job reports for its done event (the frame adds time, CPU and RSS). */
export interface JobResult {
  bytes: number;
  files: number;
  close?: CloseStats;
  /** final path: the repository or the bundle */
  result?: string;
  /** pull --incoming: the changesets a pull would add */
  incoming?: number;
}

/**
 * Runs one job. Resolves with its result after emitting `done`; on failure emits `error` (code and
 * message) and rejects with the SluiceError, so a CLI can pick its exit code and an app its state.
 */
export async function runJob(request: JobRequest, ctx: JobContext): Promise<JobResult> {
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  try {
    const result = await dispatch(request, ctx);
    const cpu = process.cpuUsage(cpu0);
    ctx.emit({
      type: 'done',
      wallMs: Math.round(performance.now() - t0),
      userCpuMs: Math.round(cpu.user / 1000),
      systemCpuMs: Math.round(cpu.system / 1000),
      bytes: result.bytes,
      files: result.files,
      ...(result.close ? { close: result.close } : {}),
      // process-wide high-water mark (getrusage): exact for the CLI's one job per process
      peakRssBytes: process.resourceUsage().maxRSS * 1024,
      ...(result.result !== undefined ? { result: result.result } : {}),
      ...(result.incoming !== undefined ? { incoming: result.incoming } : {}),
    });
    return result;
  } catch (e) {
    const err = toSluiceError(e);
    const hint = err.details?.hint;
    ctx.emit({
      type: 'error',
      code: err.code,
      message: err.message,
      ...(typeof hint === 'string' ? { hint } : {}),
    });
    throw err;
  }
}

// Each job kind's module loads when a job of that kind runs: `sluice update` does not load the
// HTTP client (importing node:http from an ES module evaluates its lazy getters, which load undici:
// ~50-100 ms), the apply or the bundle writer.
async function dispatch(request: JobRequest, ctx: JobContext): Promise<JobResult> {
  switch (request.kind) {
    case 'apply':
      return runApply(request, ctx);
    case 'bundle':
      return runBundle(request, ctx);
    case 'clone':
      return runClone(request, ctx);
    case 'pull':
      return runPull(request, ctx);
    case 'verify':
      return runVerify(request, ctx);
    case 'update':
      return runUpdate(request, ctx);
    default:
      throw new SluiceError(
        'USAGE',
        `unknown job kind ${JSON.stringify((request as { kind?: unknown }).kind)}`,
      );
  }
}

async function runApply(request: ApplyRequest, ctx: JobContext): Promise<JobResult> {
  const { applyChangegroupBundleFile, bundleKindOf, isRepository } =
    await import('../operations/apply/apply-changegroup-bundle');
  const { applyBundleFile } = await import('../operations/apply/apply-stream-bundle');
  const kind = await bundleKindOf(request.bundlePath);
  if (kind === 'bundle1' || kind === 'bundle2') {
    const cg = await applyChangegroupBundleFile(request.bundlePath, request.dest, ctx);
    if (request.verify) await verifyAfter(cg.dest, ctx);
    return { bytes: cg.bytes, files: cg.files, result: cg.dest };
  }
  if (await isRepository(resolve(request.dest))) {
    throw new SluiceError(
      'DEST_EXISTS',
      `destination '${resolve(request.dest)}' is not empty: ${request.bundlePath} is a stream clone bundle, which makes a new repository and cannot be added to an existing one (apply a changegroup bundle, from 'hg bundle', instead)`,
      { dest: request.dest },
    );
  }
  const stats = await applyBundleFile(
    request.bundlePath,
    request.dest,
    {
      ...(request.closer ? { closer: request.closer } : {}),
      ...(request.update || request.updateRev !== undefined
        ? { checkout: request.updateRev !== undefined ? { rev: request.updateRev } : {} }
        : {}),
    },
    ctx,
  );
  if (request.verify) await verifyAfter(stats.dest, ctx);
  return { bytes: stats.bytes, files: stats.files, close: stats.close, result: stats.dest };
}

async function runBundle(request: BundleRequest, ctx: JobContext): Promise<JobResult> {
  const type = request.type ?? 'v2';
  const { writeStreamBundle } = await import('../streamclone/generate');
  let progress: ProgressTracker | undefined;
  const out = await writeStreamBundle(request.repo, request.out, {
    type,
    compression: request.compression ?? 'none',
    ...(request.chunkSize !== undefined ? { chunkSize: request.chunkSize } : {}),
    signal: ctx.signal,
    onListed: (listing) => {
      ctx.emit({
        type: 'start',
        kind: 'bundle',
        format: type === 'packed1' ? 'packed1' : 'stream-v2',
        files: listing.files.length,
        bytes: listing.bytes,
        requirements: [...listing.requirements],
        source: resolve(request.repo),
        dest: resolve(request.out),
      });
      ctx.phase('generate');
      progress = new ProgressTracker(ctx, { files: listing.files.length, bytes: listing.bytes });
    },
    onProgress: (files, bytes) => progress?.update(files, bytes),
  });
  progress?.finish();
  return { bytes: out.bytes, files: out.files, result: out.path };
}

async function runClone(request: CloneRequest, ctx: JobContext): Promise<JobResult> {
  const { cloneFromUrl } = await import('../operations/clone/clone');
  // hg clone checks out unless -U: a clone job does too unless `update: false`
  // (cloneFromUrl itself, the engine API, checks out only when asked with `update: true`)
  const stats = await cloneFromUrl({ ...request, update: request.update ?? true }, ctx);
  if (request.verify) await verifyAfter(stats?.dest ?? request.dest, ctx);
  return {
    bytes: stats?.bytes ?? 0,
    files: stats?.files ?? 0,
    ...(stats?.close ? { close: stats.close } : {}),
    result: stats?.dest ?? request.dest,
  };
}

async function runPull(request: PullRequest, ctx: JobContext): Promise<JobResult> {
  const { pullFromUrl } = await import('../operations/pull/pull');
  const out = await pullFromUrl(request, ctx);
  return {
    bytes: out.bytes,
    files: out.files,
    result: out.repo,
    ...(request.incoming ? { incoming: out.incoming } : {}),
  };
}

async function runVerify(request: VerifyRequest, ctx: JobContext): Promise<JobResult> {
  const { verifyRepository } = await import('../operations/verify/verify');
  // a standalone verify emits its own start event (inside apply/clone the job's start is enough)
  const report = await verifyRepository(request.repo, ctx, { emitStart: true });
  return {
    bytes: report?.bytes ?? 0,
    files: report?.revlogFiles ?? report?.files ?? 0,
    result: request.repo,
  };
}

async function runUpdate(request: UpdateRequest, ctx: JobContext): Promise<JobResult> {
  const { updateWorkingCopy } = await import('../operations/update/update');
  const stats = await updateWorkingCopy(
    request.repo,
    {
      emitStart: true,
      ...(request.rev !== undefined ? { rev: request.rev } : {}),
      ...(request.hidden ? { hidden: true } : {}),
      ...(request.closer ? { closer: request.closer } : {}),
    },
    ctx,
  );
  return { bytes: stats.bytes, files: stats.files, close: stats.close, result: resolve(request.repo) };
}

async function verifyAfter(repo: string, ctx: JobContext): Promise<void> {
  const { verifyRepository } = await import('../operations/verify/verify');
  ctx.phase('verify');
  await verifyRepository(repo, ctx);
}
