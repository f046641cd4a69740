// Checking that each received revision hashes to its node (storageutil.hashrevisionsha1), for the
// revlog writer. Texts are built with room for the sorted parents in front so a node costs one
// SHA-1 call. Large texts (manifests: 1.6 MB per revision of the medium corpus, 1.3 GB hashed in a
// pull clone) are hashed on libuv's threadpool (WebCrypto digest copies its input when called,
// so the buffer may be reused at once) while the main thread goes on; the results are awaited
// before the transaction commits, and before any later error is reported (the earliest problem
// in the stream is the one the user sees). A mismatch is never accepted: it only surfaces a
// little later, and the transaction rolls back.

import { hash, webcrypto } from 'node:crypto';
import { SluiceError } from '../errors';
import { NODE_SIZE } from './constants';

/** Room in front of a text for min(p1, p2) + max(p1, p2). */
export const PARENTS = 2 * NODE_SIZE;
/** Texts from this size up are hashed off the main thread. */
export const ASYNC_HASH_MIN = 256 << 10;
/** Digests in flight at most (each holds a copy of its text). */
const MAX_PENDING = 8;

/** Writes the sorted parents into the PARENTS bytes in front of a text. */
export function putParents(whole: Uint8Array, p1: Uint8Array, p2: Uint8Array): void {
  const swap = Buffer.compare(p1, p2) > 0;
  whole.set(swap ? p2 : p1, 0);
  whole.set(swap ? p1 : p2, NODE_SIZE);
}

function mismatch(radix: string, node: Uint8Array, computed: Uint8Array): SluiceError {
  const short = (n: Uint8Array) => Buffer.from(n).toString('hex').slice(0, 12);
  const reason = `integrity check failed on ${short(node)}: content hashes to ${short(computed)}`;
  return new SluiceError('REVLOG', `${radix}: ${reason}`, {
    revlog: radix,
    problem: 'node-mismatch',
    reason,
  });
}

/** Node checks of one write session, shared by its revlog writers. */
export class NodeChecks {
  private pending: Promise<void>[] = [];

  /**
   * Checks that `whole` (parents then text, see putParents) hashes to `node`: now for small texts
   * (throwing on a mismatch), on the threadpool for large ones (awaited when too many are in flight).
   */
  async check(radix: string, whole: Uint8Array, node: Uint8Array): Promise<void> {
    if (whole.length < ASYNC_HASH_MIN) {
      const computed = hash('sha1', whole, 'buffer');
      if (Buffer.compare(computed, node) !== 0) throw mismatch(radix, node, computed);
      return;
    }
    const expected = Buffer.from(node);
    const p = webcrypto.subtle.digest('SHA-1', whole).then((ab) => {
      const computed = new Uint8Array(ab);
      if (Buffer.compare(computed, expected) !== 0) throw mismatch(radix, expected, computed);
    });
    p.catch(() => undefined); // reported by settle(), in order
    this.pending.push(p);
    if (this.pending.length > MAX_PENDING) await this.pending.shift();
  }

  /** Waits for every check in flight; throws the first mismatch (in stream order). */
  async settle(): Promise<void> {
    while (this.pending.length) await this.pending.shift();
  }
}
