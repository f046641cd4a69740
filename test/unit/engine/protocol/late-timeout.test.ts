// The reader's own stall (its event loop held up past the idle timeout while the peer's bytes
// arrive) must not fail a read: libuv runs the due timer before it polls for those bytes. Each
// test writes to a real socket (the bytes reach the kernel at once) and then blocks this process
// for longer than the idle timeout, as a busy machine or a laptop's sleep does.
import { once } from 'node:events';
import net, { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import { HttpSession } from '../../../../src/main/engine/client/http-client';
import { PipeReader } from '../../../../src/main/engine/protocol/pipe-reader';

const IDLE = 100;
const STALL = 400;

/** Blocks the event loop, as a stalled process. */
function stall(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until);
}

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** A connected pair of sockets on 127.0.0.1. */
async function socketPair(): Promise<{ near: net.Socket; far: net.Socket }> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const accepted = new Promise<net.Socket>((r) => server.once('connection', r));
  const near = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
  const [far] = await Promise.all([accepted, once(near, 'connect')]);
  cleanups.push(() => {
    near.destroy();
    far.destroy();
    server.close();
  });
  return { near, far };
}

const outcome = (p: Promise<Buffer | string>) =>
  p.then(
    (b) => b.toString(),
    (e: unknown) => (e instanceof SluiceError ? `${e.code}: ${e.message}` : String(e)),
  );

describe('an idle timeout after the reader itself stalled', () => {
  it('PipeReader (ssh): the bytes that arrived during the stall are read, no TIMEOUT', async () => {
    const { near, far } = await socketPair();
    const reader = new PipeReader(near, { idleTimeoutMs: IDLE });
    const read = outcome(reader.readExact(2));
    far.write('ok');
    stall(STALL);
    expect(await read).toBe('ok');
  });

  it('PipeReader (ssh): a peer that really sends nothing is still timed out', async () => {
    const { near } = await socketPair();
    const reader = new PipeReader(near, { idleTimeoutMs: IDLE });
    const read = outcome(reader.readExact(2));
    stall(STALL);
    expect(await read).toBe(`TIMEOUT: the peer sent nothing for ${IDLE} ms`);
  });

  it('HttpSession: a response that arrived during the stall is taken, no TIMEOUT', async () => {
    const server = net.createServer((s) => {
      s.on('error', () => {});
      s.once('data', () => {
        s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok');
        stall(STALL); // the whole process: the client's idle timer is due when it wakes
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const session = new HttpSession({ idleTimeoutMs: IDLE });
    cleanups.push(() => {
      session.close();
      server.close();
    });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    expect(await outcome(session.request(url).then(async (res) => (await res.readAll()).toString()))).toBe(
      'ok',
    );
  });
});
