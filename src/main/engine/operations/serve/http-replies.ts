// Writing the HTTP replies of `sluice serve`: a small body whole, a streamed body with
// backpressure (bounded memory per client), and a served file with byte ranges (clone bundles).

import http from 'node:http';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { ReaderFloor } from '../../protocol/throughput-floor';

/** corked bytes before a flush */
const FLUSH_BYTES = 256 * 1024;

/** A whole reply; hg's status text for 200. Returns the body size. */
export async function sendBody(
  res: http.ServerResponse,
  status: number,
  contentType: string,
  body: string | Buffer,
  extra: Record<string, string> = {},
): Promise<number> {
  const buf = typeof body === 'string' ? Buffer.from(body, 'latin1') : body;
  res.writeHead(status, status === 200 ? 'Script output follows' : http.STATUS_CODES[status], {
    'Content-Type': contentType,
    'Content-Length': String(buf.length),
    ...extra,
  });
  res.end(buf);
  return buf.length;
}

/**
 * A streamed 200 reply with backpressure. Writes are corked and flushed every ~256 KiB so the
 * many small pieces of a framed payload (4-byte headers, views) leave in few writev calls. A
 * client reading too slowly (ReaderFloor, `idleMs` the server's idle timeout) is a TIMEOUT
 * thrown after the connection is cut. Returns the bytes sent.
 */
export async function sendStream(
  res: http.ServerResponse,
  contentType: string,
  body: AsyncIterable<Uint8Array>,
  contentLength: number | undefined,
  idleMs: number,
): Promise<number> {
  const floor = new ReaderFloor(res, idleMs);
  res.writeHead(200, 'Script output follows', {
    'Content-Type': contentType,
    ...(contentLength !== undefined ? { 'Content-Length': String(contentLength) } : {}),
  });
  let sent = 0;
  let batched = 0;
  res.cork();
  try {
    for await (const chunk of body) {
      if (res.destroyed) break;
      sent += chunk.length;
      batched += chunk.length;
      const ok = res.write(chunk);
      if (batched >= FLUSH_BYTES || !ok) {
        res.uncork();
        batched = 0;
        await floor.drained(sent);
        res.cork();
      }
    }
    res.uncork();
    res.end();
  } catch (e) {
    // a producer failure that is not framed in-band: cut the connection so the client sees it
    res.destroy(e as Error);
    throw e;
  }
  return sent;
}

/**
 * A file with `Range: bytes=a-b` support (resumable clone bundle downloads); a client reading too
 * slowly is a TIMEOUT as in sendStream. Returns bytes sent.
 */
export async function sendFile(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  path: string,
  idleMs: number,
): Promise<number> {
  const st = await stat(path);
  const range = /^bytes=(\d+)-(\d*)$/.exec(String(req.headers.range ?? ''));
  let start = 0;
  let end = st.size - 1;
  let status = 200;
  const headers: Record<string, string> = {
    'Content-Type': 'application/octet-stream',
    'Accept-Ranges': 'bytes',
  };
  if (range) {
    start = Number(range[1]);
    if (range[2]) end = Math.min(end, Number(range[2]));
    if (start >= st.size || start > end) {
      res.writeHead(416, { 'Content-Range': `bytes */${st.size}` });
      res.end();
      return 0;
    }
    status = 206;
    headers['Content-Range'] = `bytes ${start}-${end}/${st.size}`;
  }
  headers['Content-Length'] = String(end - start + 1);
  res.writeHead(status, headers);
  if (req.method === 'HEAD' || st.size === 0) {
    res.end();
    return 0;
  }
  const floor = new ReaderFloor(res, idleMs);
  let sent = 0;
  try {
    for await (const chunk of createReadStream(path, { start, end }) as AsyncIterable<Buffer>) {
      if (res.destroyed) break;
      sent += chunk.length;
      if (!res.write(chunk)) await floor.drained(sent);
    }
  } catch (e) {
    res.destroy(e as Error);
    throw e;
  }
  res.end();
  return sent;
}
