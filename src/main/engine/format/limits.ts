// Bounds on everything an untrusted stream can announce. hg itself trusts its peer (a 2^60-byte
// entry or a 1 GB part header is just read); Sluice refuses such values up front with
// SluiceError('LIMIT') so hostile input can never make us allocate, loop or write without end.
// The values are far above anything a real repository produces (a 20k-file, 58 MB store uses
// names < 300 bytes and entries < 2^32).

import { SluiceError } from '../errors';

/** Longest entry name (store path or cache name) in any format. */
export const MAX_NAME_LENGTH = 4096;
/** Most entries a stream may announce. */
export const MAX_FILES = 50_000_000;
/** Largest single entry. */
export const MAX_ENTRY_SIZE = 2 ** 48;
/** Largest announced total; keeps every sum exact in a JS number. */
export const MAX_TOTAL_BYTES = Number.MAX_SAFE_INTEGER;
/** packed1 requirements field (u16 length already caps it at 65535) and stream2 requirements. */
export const MAX_REQUIREMENTS_FIELD = 64 * 1024;
/** bundle2 part header (hg writes ~130 bytes for stream2). */
export const MAX_PART_HEADER = 64 * 1024;
/** bundle2 stream-level parameters blob. */
export const MAX_STREAM_PARAMS_SIZE = 64 * 1024;
/** bundle2 stream-level parameter count (hg defines one: Compression). */
export const MAX_STREAM_PARAMS = 64;
/** Nested out-of-band parts inside an interrupted payload (hg emits depth 1). */
export const MAX_INTERRUPT_DEPTH = 4;
/** Parts in one bundle2 container (a getbundle reply has ~4). */
export const MAX_PARTS = 10_000;
/** uvarint bytes: 8 × 7 bits = 56 bits, above the 2^53 value bound. */
export const MAX_UVARINT_BYTES = 8;
/** Decimal numbers in text headers: 2^53 has 16 digits. */
export const MAX_DECIMAL_DIGITS = 16;
/** One readExact() assembly; callers never need more (largest: a 64 KiB header). */
export const MAX_CONTIGUOUS_READ = 16 * 1024 * 1024;

/** hg's revlog text limit (_maxentrysize, a signed 32-bit length). */
const MAX_REVLOG_TEXT = 0x7fffffff;
/** maxRevisionSize()'s default: 1 GiB (real repositories carry files of hundreds of MB; a bomb costs at most this). */
export const DEFAULT_MAX_REVISION_SIZE = 1024 * 1024 * 1024;

/**
 * Largest revision a changegroup may bring: its delta chunk and its full text. hg's format allows
 * 2 GiB, but a revision is held whole while its node is checked (and hg holds it too), and a
 * compressed transport (an HTTP body, a bundle's core) turns a few KiB into that much; a bound of
 * the plausible keeps a pull's memory to a few times this. SLUICE_MAX_REVISION_SIZE (bytes) moves
 * it, up to hg's limit. Read by the callers once per group or revlog, not per revision.
 */
export function maxRevisionSize(): number {
  const env = process.env.SLUICE_MAX_REVISION_SIZE;
  if (env === undefined || env === '') return DEFAULT_MAX_REVISION_SIZE;
  const n = /^[0-9]{1,10}$/.test(env) ? Number(env) : NaN;
  if (!(n > 0))
    throw new SluiceError(
      'USAGE',
      `SLUICE_MAX_REVISION_SIZE must be a byte count (got ${JSON.stringify(env)})`,
    );
  return Math.min(n, MAX_REVLOG_TEXT);
}

export function limitError(what: string, value: number | string, max: number): SluiceError {
  return new SluiceError('LIMIT', `${what} ${value} exceeds the limit of ${max}`, { what, value, max });
}
