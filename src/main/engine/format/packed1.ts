// packed1 stream clone bundles, `HGS1` (streamclone.py generatebundlev1 / readbundle1header /
// applybundlev1):
//
//   "HGS1" "UN" | u64 files | u64 bytes | u16 len(requirements)+1 | requirements "\0" | v1 entries

import { SluiceError } from '../errors';
import type { ByteSource } from './byte-source';
import { MAX_FILES, MAX_TOTAL_BYTES, limitError } from './limits';
import { V1EntryReader } from './stream-v1';
import { checkAnnouncedCounts, latin1, latin1Bytes, malformed, parseRequirements } from './stream-reader';

export const PACKED1_MAGIC = 'HGS1';

/** Reads the header of a packed1 bundle (magic included) and returns a reader of its entries. */
export async function readPacked1(src: ByteSource): Promise<V1EntryReader> {
  const magic = latin1(await src.readExact(4));
  if (magic !== PACKED1_MAGIC) {
    throw new SluiceError('BAD_MAGIC', `not a packed1 stream clone bundle (magic ${JSON.stringify(magic)})`);
  }
  const compression = latin1(await src.readExact(2));
  if (compression !== 'UN') {
    throw new SluiceError(
      'UNSUPPORTED_COMPRESSION',
      `only uncompressed stream clone bundles are supported; got ${JSON.stringify(compression)}`,
      { compression },
    );
  }
  const fixed = await src.readExact(18);
  const view = new DataView(fixed.buffer, fixed.byteOffset, 18);
  const files = u64(view, 0, 'file count', MAX_FILES);
  const bytes = u64(view, 8, 'byte count', MAX_TOTAL_BYTES);
  checkAnnouncedCounts(files, bytes);
  const requiresLength = view.getUint16(16);
  const requires = requiresLength ? await src.readExact(requiresLength) : new Uint8Array(0);
  if (requires.length === 0 || requires[requires.length - 1] !== 0) {
    throw malformed('malformed stream clone bundle: requirements not properly encoded');
  }
  // hg: requires.rstrip(b'\0').split(b',')
  let end = requires.length;
  while (end > 0 && requires[end - 1] === 0) end--;
  const requirements = parseRequirements(latin1(requires.subarray(0, end)));
  return new V1EntryReader({ format: 'packed1', files, bytes, requirements, compression: 'UN' }, src);
}

/** The packed1 header for `files` entries of `bytes` total; requirements are sorted like hg. */
export function packed1Header(files: number, bytes: number, requirements: readonly string[]): Buffer {
  const requires = latin1Bytes([...requirements].sort().join(','));
  const out = Buffer.alloc(24 + requires.length + 1);
  out.write(PACKED1_MAGIC + 'UN', 0, 'latin1');
  out.writeBigUInt64BE(BigInt(files), 6);
  out.writeBigUInt64BE(BigInt(bytes), 14);
  out.writeUInt16BE(requires.length + 1, 22);
  requires.copy(out, 24);
  return out;
}

function u64(view: DataView, at: number, what: string, max: number): number {
  const value = view.getBigUint64(at);
  if (value > BigInt(max)) throw limitError(what, value.toString(), max);
  return Number(value);
}
