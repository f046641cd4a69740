// Wire compression engines of application/mercurial-0.1/0.2 responses (utils/compression.py
// `wireprotosupport`): zstd, zlib, none. hg clients also list bzip2 but servers never choose it
// (server priority 0), so Sluice neither asks for nor offers it. The codecs are FORMAT's
// (bundle2 keys: zlib = GZ, a raw zlib stream; zstd = ZS).

import { SluiceError } from '../errors';
import { compressStream, decompressStream } from '../codec/compression';

export type WireEngine = 'none' | 'zlib' | 'zstd';

/** Engines this side can decode, in client priority order (what goes in `comp=`). */
export const CLIENT_WIRE_ENGINES: WireEngine[] = ['zstd', 'zlib', 'none'];
/** Engines a server offers, server priority order (`compression=zstd,zlib`). */
export const SERVER_WIRE_ENGINES: WireEngine[] = ['zstd', 'zlib'];

const KEY = { none: 'UN', zlib: 'GZ', zstd: 'ZS' } as const;

export function decompressWire(engine: string, src: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  if (engine !== 'none' && engine !== 'zlib' && engine !== 'zstd') {
    throw new SluiceError(
      'UNSUPPORTED_COMPRESSION',
      `the server used a compression engine Sluice does not know: ${JSON.stringify(engine)}`,
    );
  }
  return decompressStream(KEY[engine], src);
}

/** `consumed`: see compressStream (input pieces the compressor is done with). */
export function compressWire(
  engine: WireEngine,
  src: AsyncIterable<Uint8Array>,
  consumed?: (piece: Uint8Array) => void,
): AsyncIterable<Uint8Array> {
  return compressStream(KEY[engine], src, consumed);
}
