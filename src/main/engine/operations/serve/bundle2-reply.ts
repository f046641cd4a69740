// The bundle2 container of a getbundle reply, framed without copying payload bytes.
//
// FORMAT's default framer (copyFrames) re-buffers generator payloads into fresh 32 KiB frames (a
// copy of every byte and one new ArrayBuffer per frame), which suits files. A server streaming a
// 60 MB store to many clients pays that in memcpy and, mostly, in garbage collection. Framing is only "a 4-byte size every
// chunkSize bytes", so here the payload's own buffers are passed through as views and only the
// 4-byte headers are new. Part framing and hg's interrupt on a producer failure come from FORMAT's
// partChunks, so the bytes on the wire are identical to Bundle2Writer's.

import { encodePartHeader, int32, partChunks, type Bundle2OutPart } from '../../format/bundle2';

/**
 * A part whose generator payload length may be known up front (for a Content-Length reply), or
 * whose generator yields its frames already (`framed`: written so by its producer, with the
 * reply's chunk size).
 */
export type ReplyPart = Bundle2OutPart & { payloadLength?: number; framed?: boolean };

const HEAD = Buffer.from('HG20\0\0\0\0', 'latin1');

/** Payload frames: size header, then views covering exactly that many payload bytes. */
async function* frames(src: AsyncIterable<Uint8Array>, chunkSize: number): AsyncGenerator<Uint8Array> {
  const pending: Uint8Array[] = [];
  let have = 0;
  const take = function* (n: number): Generator<Uint8Array> {
    yield int32(n);
    have -= n;
    while (n > 0) {
      const head = pending[0]!;
      if (head.length <= n) {
        pending.shift();
        n -= head.length;
        yield head;
      } else {
        yield head.subarray(0, n);
        pending[0] = head.subarray(n);
        n = 0;
      }
    }
  };
  for await (const piece of src) {
    if (!piece.length) continue;
    pending.push(piece);
    have += piece.length;
    while (have >= chunkSize) yield* take(chunkSize);
  }
  if (have) yield* take(have);
}

/** A payload whose producer framed it: passed through as it is. */
const asFramed = (src: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> => src;

/**
 * The reply bundle: HG20, no stream parameters, the parts, the end marker. Returns normally after
 * an interrupt (the error is reported through onError).
 */
export async function* bundle2Reply(
  parts: readonly ReplyPart[],
  chunkSize: number,
  onError?: (e: unknown) => void,
): AsyncGenerator<Uint8Array> {
  yield HEAD;
  const onInterrupt = (e: unknown): void => onError?.(e);
  for (const [id, part] of parts.entries()) {
    const framer = part.framed ? asFramed : frames;
    if (!(yield* partChunks(part, id, chunkSize, { framer, onInterrupt }))) return;
  }
  yield int32(0);
}

/**
 * The exact size of bundle2Reply(parts) when nothing fails, or null when a generator payload has
 * no known length. Lets a server send Content-Length instead of chunked transfer encoding.
 */
export function bundle2ReplyLength(parts: readonly ReplyPart[], chunkSize: number): number | null {
  let n = HEAD.length + 4;
  for (const [id, part] of parts.entries()) {
    n += encodePartHeader(part, id).length + 4;
    const data = part.data;
    if (data instanceof Uint8Array) n += data.length ? 4 + data.length : 0;
    else if (data) {
      if (part.payloadLength === undefined) return null;
      n += part.payloadLength + 4 * Math.ceil(part.payloadLength / chunkSize);
    }
  }
  return n;
}
