// Servers that refuse with a reply that never ends (or never comes): an hg-error frame, a 5xx, a
// page that is not hg's. The clone fails with the server's own words, its first bytes read and
// the rest never, in bounded time, nothing at DEST.
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/main/engine/errors';
import type { ScriptedServer } from '../wire-faults/harness';
import { clone, serve, useHostileBackend } from './server-support';

useHostileBackend('error-replies');

/** Writes `first`, then filler as fast as the client reads, until the client goes away. */
function endless(res: ServerResponse, first: string): void {
  const filler = Buffer.alloc(64 << 10, 'x');
  res.write(first);
  const pump = (): void => {
    while (!res.destroyed && res.write(filler));
    if (!res.destroyed) res.once('drain', pump);
  };
  pump();
}

/** A server answering `cmd` with `status`/`type` and a body that starts with `first` and never ends. */
async function refusing(
  cmd: string,
  status: number,
  type: string,
  first: string | null,
): Promise<ScriptedServer> {
  return serve((_req, res, ctx) => {
    if (ctx.cmd !== cmd) return false;
    res.writeHead(status, { 'Content-Type': type });
    if (first !== null) endless(res, first);
    else res.flushHeaders(); // headers, then nothing: the body stalls
    return true;
  });
}

/** A clone that must fail, leaving nothing where it was to go. */
async function cloneError(url: string): Promise<SluiceError> {
  const { err, left } = await clone(url, {}, { idleTimeoutMs: 1000 });
  expect(err).toBeInstanceOf(SluiceError);
  expect(left).toEqual([]);
  return err!;
}

describe('refusals whose body never ends', () => {
  it('an application/hg-error reply: REMOTE_ABORT with the start of the server text', async () => {
    const s = await refusing('getbundle', 200, 'application/hg-error', 'repository is under maintenance\n');
    const err = await cloneError(s.url);
    expect(err.code).toBe('REMOTE_ABORT');
    expect(err.message).toMatch(/^remote error: repository is under maintenance\nx+$/);
    expect(err.message.length).toBeLessThanOrEqual(64 * 1024 + 20);
  });

  it('a 503: HTTP with the status and the start of the body', async () => {
    const s = await refusing('capabilities', 503, 'text/plain', 'try again in an hour ');
    const err = await cloneError(s.url);
    expect(err.code).toBe('HTTP');
    expect(err.details?.status).toBe(503);
    expect(err.message).toMatch(/^HTTP Error 503: Service Unavailable \(try again in an hour x+\)$/);
  });

  it('a page that is not hg: PROTOCOL quoting its start', async () => {
    const s = await refusing('capabilities', 200, 'text/html', '<html><title>Login portal</title> ');
    const err = await cloneError(s.url);
    expect(err.code).toBe('PROTOCOL');
    expect(err.message).toMatch(/does not appear to be an hg repository.*Login portal/);
  });
});

describe('refusals whose body never comes', () => {
  it.each([
    ['getbundle', 200, 'application/hg-error', 'REMOTE_ABORT'],
    ['capabilities', 500, 'text/plain', 'HTTP'],
    ['capabilities', 200, 'text/html', 'PROTOCOL'],
  ] as const)(
    '%s answered %i %s then silence: %s after the idle timeout',
    async (cmd, status, type, code) => {
      const s = await refusing(cmd, status, type, null);
      expect((await cloneError(s.url)).code).toBe(code);
    },
  );
});
