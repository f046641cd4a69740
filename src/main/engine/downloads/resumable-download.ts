// A download that survives a cut connection and a stopped process: `Range: bytes=N-` guarded by
// `If-Range` (a strong ETag, else Last-Modified), so a file that changed on the server restarts
// from zero instead of mixing two versions; a cut connection is retried with exponential backoff,
// each wait announced so a UI can count it down.

import { open, type FileHandle } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type http from 'node:http';
import { FreeSpaceGuard, checkFreeSpace, type FreeSpacePolicy } from '../repo/free-space';
import { SluiceError, cancelled } from '../errors';
import type { HttpResponse, HttpSession } from '../client/http-client';
import { redactUrl } from '../client/http-client';
import type { ResumeState } from './partial-store';

export interface RetryWait {
  /** the attempt the wait precedes, 1-based, of maxAttempts */
  attempt: number;
  maxAttempts: number;
  waitMs: number;
  /** why the last attempt failed */
  reason: string;
  have: number;
  total: number | null;
}

export interface DownloadOptions {
  signal?: AbortSignal;
  /** attempts after a failure without progress in between (default 8) */
  retries?: number;
  /** the first wait before a retry in ms (default 500), doubled each time up to maxRetryDelayMs */
  retryDelayMs?: number;
  /** default 30 s */
  maxRetryDelayMs?: number;
  onProgress?: (received: number, total: number | null) => void;
  onRetryWait?: (wait: RetryWait) => void;
  log?: (m: string) => void;
  /**
   * Sees the file's first START_BYTES bytes (fewer if it is shorter) as soon as they are in, and
   * throws to give up: a body that is not what was asked for is not downloaded to its end.
   */
  checkStart?: (start: Buffer) => void;
  /** how the writes watch the free space (a body without Content-Length may never end) */
  freeSpace?: FreeSpacePolicy;
  /** what an earlier run left in the file at `path`: continued instead of truncated */
  resume?: ResumeState | null;
  /** where the download stands, after each response's headers and as bytes arrive */
  onState?: (state: ResumeState) => Promise<void>;
}

export const CHANGED_ON_SERVER =
  'the bundle changed on the server since the partial download: starting again';

const START_BYTES = 4;
const RETRYABLE = new Set(['TRUNCATED', 'NETWORK', 'TIMEOUT']);

/** A strong ETag (a weak one may not guard a range, RFC 9110 13.1.5), else Last-Modified. */
export function validatorOf(headers: http.IncomingHttpHeaders): string | null {
  const etag = headers.etag;
  if (typeof etag === 'string' && etag.startsWith('"')) return etag;
  const modified = headers['last-modified'];
  return typeof modified === 'string' && modified ? modified : null;
}

/** Downloads `url` to `path`; resolves to the size, which is the announced one when there was one. */
export async function downloadWithResume(
  session: HttpSession,
  url: string,
  path: string,
  opts: DownloadOptions = {},
): Promise<number> {
  const resume = opts.resume && opts.resume.have > 0 ? opts.resume : null;
  // a file of the partial store (or a scratch file), never a repository's: no vfs link breaking
  const fh = await open(path, resume ? 'r+' : 'w');
  try {
    return await new ResumableDownload(session, url, path, fh, opts, resume).run();
  } finally {
    await fh.close();
  }
}

class ResumableDownload {
  private have = 0;
  private total: number | null = null;
  private validator: string | null = null;
  private start = Buffer.alloc(0);
  private space: FreeSpaceGuard;
  private readonly name: string;

  constructor(
    private readonly session: HttpSession,
    private readonly url: string,
    private readonly path: string,
    private readonly fh: FileHandle,
    private readonly opts: DownloadOptions,
    resume: ResumeState | null,
  ) {
    this.name = redactUrl(url);
    this.space = this.guard();
    if (resume) {
      this.have = resume.have;
      this.total = resume.total;
      this.validator = resume.validator;
    }
  }

  private guard(): FreeSpaceGuard {
    return new FreeSpaceGuard(this.path, `the download of ${this.name}`, this.opts.freeSpace);
  }

  async run(): Promise<number> {
    const retries = this.opts.retries ?? 8;
    const firstDelay = this.opts.retryDelayMs ?? 500;
    let delay = firstDelay;
    let failures = 0;
    if (this.have > 0) await this.readStart();
    for (;;) {
      if (this.opts.signal?.aborted) throw cancelled();
      const before = this.have;
      try {
        return await this.attempt();
      } catch (e) {
        const se = e instanceof SluiceError ? e : new SluiceError('NETWORK', String(e));
        const retryable =
          (RETRYABLE.has(se.code) && se.details?.trickle !== true) || se.details?.retryable === true;
        if (!retryable || this.opts.signal?.aborted) throw se;
        // progress was made: the budget and the backoff are per stall, not per file
        if (this.have > before) {
          failures = 0;
          delay = firstDelay;
        }
        if (++failures > retries) throw se;
        this.opts.onRetryWait?.({
          attempt: failures,
          maxAttempts: retries,
          waitMs: delay,
          reason: se.message,
          have: this.have,
          total: this.total,
        });
        this.opts.log?.(
          `download of ${this.name} interrupted after ${this.have} bytes (${se.message}); ` +
            `retrying in ${Math.ceil(delay / 1000)} s (attempt ${failures} of ${retries})`,
        );
        try {
          await sleep(delay, undefined, this.opts.signal ? { signal: this.opts.signal } : {});
        } catch {
          throw cancelled();
        }
        delay = Math.min(delay * 2, this.opts.maxRetryDelayMs ?? 30_000);
      }
    }
  }

  /** One request: the rest of the file (or all of it), written from `have` on. */
  private async attempt(): Promise<number> {
    // a complete file asks for its last byte: a 206 proves it unchanged, a 200 brings the new one
    const from =
      this.total !== null && this.total > 0 && this.have >= this.total ? this.total - 1 : this.have;
    const headers: Record<string, string> = { Accept: '*/*' };
    if (from > 0) {
      headers.Range = `bytes=${from}-`;
      if (this.validator) headers['If-Range'] = this.validator;
    }
    const res = await this.session.request(this.url, { headers });
    try {
      await this.accept(res, from);
    } catch (e) {
      res.discard();
      throw e;
    }
    await this.opts.onState?.(this.state());
    for await (const chunk of res.body)
      await this.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length));
    if (this.total !== null && this.have !== this.total)
      throw new SluiceError('TRUNCATED', `${this.name} ended after ${this.have} of ${this.total} bytes`);
    if (this.have < START_BYTES) this.opts.checkStart?.(this.start.subarray(0, this.have));
    await this.opts.onState?.(this.state());
    return this.have;
  }

  /** Takes a response's status and headers: continue at `from`, restart at zero, or fail. */
  private async accept(res: HttpResponse, from: number): Promise<void> {
    const theirs = validatorOf(res.headers);
    if (res.status === 200) {
      if (from > 0)
        this.opts.log?.(
          this.validator && theirs !== this.validator
            ? CHANGED_ON_SERVER
            : `${this.name}: the server ignored the range request; downloading again from the start`,
        );
      await this.restart();
      const len = res.headers['content-length'];
      this.total = len !== undefined && /^\d+$/.test(len) ? Number(len) : null;
      this.validator = theirs;
    } else if (res.status === 206) {
      if (this.validator && theirs && theirs !== this.validator) {
        // a server that does not honour If-Range: its range is of another file
        this.opts.log?.(CHANGED_ON_SERVER);
        await this.restart();
        this.total = null;
        throw new SluiceError('TRUNCATED', `${this.name} changed on the server`, { retryable: true });
      }
      this.acceptRange(String(res.headers['content-range'] ?? ''), from);
      this.validator = theirs ?? this.validator;
    } else {
      const retryable = res.status >= 500;
      throw new SluiceError('HTTP', `HTTP error fetching bundle: ${res.status} ${res.statusMessage}`, {
        status: res.status,
        ...(retryable ? { retryable } : {}),
      });
    }
    // a declared size must fit in the free space before a byte is written (not ENOSPC mid-way)
    if (this.total !== null)
      checkFreeSpace(this.path, this.total - this.have, `${this.name} announces`, this.opts.freeSpace);
  }

  private acceptRange(contentRange: string, from: number): void {
    const cr = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(contentRange);
    if (!cr || Number(cr[1]) !== from)
      throw new SluiceError(
        'HTTP',
        `bad Content-Range in the resumed download of ${this.name}: ${contentRange || 'none'}`,
      );
    if (cr[3] !== '*') {
      const t = Number(cr[3]);
      if (this.total !== null && t !== this.total)
        throw new SluiceError('SIZE_MISMATCH', `${this.name} changed size during the download`);
      this.total = t;
    }
    this.have = from;
  }

  private async restart(): Promise<void> {
    this.have = 0;
    this.start = Buffer.alloc(0);
    this.space = this.guard();
    await this.fh.truncate(0);
  }

  private async write(chunk: Buffer): Promise<void> {
    if (this.total !== null && this.have + chunk.length > this.total)
      throw new SluiceError(
        'SIZE_MISMATCH',
        `${this.name} sent more than the ${this.total} bytes it announced`,
      );
    if (this.opts.checkStart && this.have < START_BYTES) {
      this.start = Buffer.concat([this.start.subarray(0, this.have), chunk]).subarray(0, START_BYTES);
      if (this.start.length === START_BYTES) this.opts.checkStart(this.start);
    }
    this.space.take(chunk.length);
    await this.fh.write(chunk, 0, chunk.length, this.have);
    this.have += chunk.length;
    this.opts.onProgress?.(this.have, this.total);
    await this.opts.onState?.(this.state());
  }

  /** An earlier run's first bytes, for checkStart. */
  private async readStart(): Promise<void> {
    const buf = Buffer.alloc(Math.min(START_BYTES, this.have));
    const { bytesRead } = await this.fh.read(buf, 0, buf.length, 0);
    this.start = buf.subarray(0, bytesRead);
    if (this.start.length === START_BYTES) this.opts.checkStart?.(this.start);
  }

  private state(): ResumeState {
    return { have: this.have, validator: this.validator, total: this.total };
  }
}
