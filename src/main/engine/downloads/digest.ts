// The digests a clone bundle manifest entry may give (`DIGEST=sha256:HEX`, several joined by
// commas), and the check of a downloaded file against them.

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { SluiceError } from '../errors';

export interface Digest {
  algorithm: 'sha1' | 'sha256' | 'sha512';
  /** lower-case hex */
  hex: string;
}

const HEX_LENGTH: Record<Digest['algorithm'], number> = { sha1: 40, sha256: 64, sha512: 128 };

/** `sha256:HEX[,sha512:HEX]`; MALFORMED for an unknown algorithm or a hex of the wrong length. */
export function parseDigests(text: string): Digest[] {
  const out: Digest[] = [];
  for (const item of text.split(',')) {
    const m = /^(sha1|sha256|sha512):([0-9a-fA-F]+)$/.exec(item.trim());
    const algorithm = m?.[1] as Digest['algorithm'] | undefined;
    if (!m || !algorithm || m[2]!.length !== HEX_LENGTH[algorithm])
      throw new SluiceError('MALFORMED', `unsupported digest: ${item.slice(0, 80)}`);
    out.push({ algorithm, hex: m[2]!.toLowerCase() });
  }
  return out;
}

/** Reads `path` once through every digest; DIGEST_MISMATCH names the first that differs. */
export async function checkDigests(
  path: string,
  digests: readonly Digest[],
  what: string,
  signal?: AbortSignal,
): Promise<void> {
  if (!digests.length) return;
  const hashes = digests.map((d) => createHash(d.algorithm));
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20, ...(signal ? { signal } : {}) }))
    for (const h of hashes) h.update(chunk as Buffer);
  digests.forEach((d, i) => {
    const got = hashes[i]!.digest('hex');
    if (got !== d.hex)
      throw new SluiceError(
        'DIGEST_MISMATCH',
        `${what} does not match its manifest: ${d.algorithm} ${got}, expected ${d.hex}`,
        { algorithm: d.algorithm, expected: d.hex, actual: got },
      );
  });
}
