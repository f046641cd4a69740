// Reading a reply ahead of its consumer, up to a bound. A pull's consumer (the changegroup apply)
// is CPU-bound and runs in bursts (each manifest of the medium corpus is rebuilt and hashed,
// 1.6 MB, while its delta is 3 KB on the wire); meanwhile the server, on a machine with few cores,
// is the other half of the critical path. Without a buffer of its own the client leaves the reply
// in the socket: the kernel holds ~5 MB on loopback, then the server blocks in send() until the
// client reads again (sampled during a pull clone of the medium corpus from hg serve: the server
// asleep on a full socket for seconds through the client's manifest group). Pumped from the
// event loop whenever the consumer yields to it, the reply's bytes wait here instead, and the
// server keeps producing.

import { SluiceError } from '../errors';

/**
 * `src`, read ahead of the consumer into at most `maxBytes` of queued chunks (one chunk beyond
 * the bound may be held). Reading starts at once. An error of `src` reaches the consumer after
 * the chunks queued before it; ending the iteration early stops the pump and closes `src`.
 */
export function readAhead(src: AsyncIterable<Uint8Array>, maxBytes: number): AsyncIterable<Uint8Array> {
  const it = src[Symbol.asyncIterator]();
  const queue: Uint8Array[] = [];
  let head = 0;
  let queued = 0;
  let ended = false;
  let failure: { error: unknown } | undefined;
  let stopped = false;
  let wakeConsumer: (() => void) | undefined;
  let wakePump: (() => void) | undefined;

  const pump = async (): Promise<void> => {
    try {
      while (!stopped) {
        if (queued >= maxBytes) {
          await new Promise<void>((resolve) => (wakePump = resolve));
          continue;
        }
        const r = await it.next();
        if (r.done) break;
        if (r.value.length === 0) continue;
        queue.push(r.value);
        queued += r.value.length;
        wakeConsumer?.();
      }
    } catch (e) {
      failure = { error: e };
    } finally {
      ended = true;
      wakeConsumer?.();
    }
  };
  void pump();

  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    wakePump?.();
    queue.length = 0;
    queued = 0;
    // not awaited: an async generator runs return() only after the pump's pending next()
    it.return?.().catch(() => undefined);
  };

  return {
    [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
      return {
        async next(): Promise<IteratorResult<Uint8Array>> {
          for (;;) {
            if (stopped) return { done: true, value: undefined };
            if (head < queue.length) {
              const chunk = queue[head]!;
              queue[head++] = EMPTY;
              if (head > 1024 && head * 2 > queue.length) {
                queue.splice(0, head);
                head = 0;
              }
              queued -= chunk.length;
              if (wakePump) {
                const w = wakePump;
                wakePump = undefined;
                w();
              }
              return { done: false, value: chunk };
            }
            if (ended) {
              if (failure) {
                const e = failure.error;
                failure = undefined;
                throw e instanceof Error ? e : new SluiceError('NETWORK', String(e));
              }
              return { done: true, value: undefined };
            }
            await new Promise<void>((resolve) => (wakeConsumer = resolve));
            wakeConsumer = undefined;
          }
        },
        async return(): Promise<IteratorResult<Uint8Array>> {
          stop();
          return { done: true, value: undefined };
        },
      };
    },
  };
}

const EMPTY = new Uint8Array(0);
