// Changegroup bundle files as `hg bundle` writes them (exchange.readbundle, changegroup.cg1unpacker,
// bundle2.getunbundler):
//   HG10UN / HG10GZ / HG10BZ + a cg1 stream (GZ: a zlib stream; BZ: bzip2 without its `BZ` magic,
//   which the header already holds — hg's _truncatedbz2engine puts it back);
//   HG20 + bundle2 parts (changegroup cg1/cg2/cg3, phase-heads, bookmarks, obsmarkers, caches);
//   HGS1 / HG20 with a stream2 part: stream clone bundles, applied by operations/apply/apply-stream-bundle.ts.

import { SluiceError, toSluiceError } from '../errors';
import { Bundle2Reader, BUNDLE2_MAGIC } from '../format/bundle2';
import { ByteSource } from '../format/byte-source';
import { decompressStream } from '../codec/compression';
import { PACKED1_MAGIC } from '../format/packed1';
import type { CompressionKey } from '../format/stream-reader';
import { STREAM2_PARAMS, STREAM2_PART } from '../format/stream2';
import { APPLY_PARTS } from './add-changegroup';
import { ChangegroupReader, changegroupVersion, type ChangegroupVersion } from './reader';

export type BundleKind = 'packed1' | 'stream-v2' | 'bundle1' | 'bundle2';

export interface BundleSummary {
  kind: BundleKind;
  compression: CompressionKey;
  /** changegroup version of the first changegroup (bundle1: '01') */
  cgVersion?: ChangegroupVersion;
  /** the changegroup part's nbchanges, when announced */
  changesets?: number;
  /** the bundle2 part types, in order (bundle2 only; read up to the first changegroup) */
  parts?: string[];
}

async function* rest(src: ByteSource, prefix?: Uint8Array): AsyncGenerator<Uint8Array> {
  if (prefix) yield prefix;
  for (;;) {
    const piece = await src.readSome(1 << 20);
    if (!piece) return;
    yield piece;
  }
}

export type OpenedBundle =
  | { kind: 'bundle1'; compression: CompressionKey; cg: ChangegroupReader; close(): Promise<void> }
  | { kind: 'bundle2'; compression: CompressionKey; bundle: Bundle2Reader; close(): Promise<void> };

/** Reads the 4-byte magic without consuming it. */
async function magicOf(src: ByteSource): Promise<string> {
  const head = await src.peek(4);
  if (head.length < 4) throw new SluiceError('TRUNCATED', `bundle is only ${head.length} bytes long`);
  return Buffer.from(head).toString('latin1');
}

/** Opens a changegroup bundle (HG10xx or HG20); BAD_MAGIC for anything else. */
export async function openChangegroupBundle(src: ByteSource): Promise<OpenedBundle> {
  try {
    const magic = await magicOf(src);
    if (magic === 'HG10') {
      const head = Buffer.from(await src.readExact(6)).toString('latin1');
      const alg = head.slice(4);
      if (alg === 'UN') {
        return {
          kind: 'bundle1',
          compression: 'UN',
          cg: new ChangegroupReader(src, '01'),
          close: () => src.close(),
        };
      }
      if (alg !== 'GZ' && alg !== 'BZ')
        throw new SluiceError('UNSUPPORTED_COMPRESSION', `unknown bundle compression ${JSON.stringify(alg)}`);
      const body = decompressStream(alg, rest(src, alg === 'BZ' ? Buffer.from('BZ', 'latin1') : undefined));
      const inner = new ByteSource(body);
      return {
        kind: 'bundle1',
        compression: alg,
        cg: new ChangegroupReader(inner, '01'),
        close: async () => {
          await inner.close();
          await src.close();
        },
      };
    }
    if (magic === BUNDLE2_MAGIC) {
      const bundle = await Bundle2Reader.open(src, {
        knownParts: { ...APPLY_PARTS, [STREAM2_PART]: STREAM2_PARAMS },
      });
      return { kind: 'bundle2', compression: bundle.compression, bundle, close: () => bundle.close() };
    }
    if (magic === PACKED1_MAGIC)
      throw new SluiceError('BAD_MAGIC', 'a packed1 stream clone bundle is not a changegroup');
    throw new SluiceError('BAD_MAGIC', `not a Mercurial bundle: starts with ${JSON.stringify(magic)}`, {
      magic: Buffer.from(magic, 'latin1').toString('hex'),
    });
  } catch (e) {
    await src.close();
    throw toSluiceError(e);
  }
}

/** What kind of bundle this is, from its header and first parts (nothing is applied). */
export async function summarizeBundle(
  src: ByteSource,
  opts: { countChangesets?: boolean } = {},
): Promise<BundleSummary> {
  const count = async (cg: ChangegroupReader): Promise<number> => cg.readGroup(() => undefined);
  try {
    const magic = await magicOf(src);
    if (magic === PACKED1_MAGIC) return { kind: 'packed1', compression: 'UN' };
    const opened = await openChangegroupBundle(src);
    try {
      if (opened.kind === 'bundle1') {
        return {
          kind: 'bundle1',
          compression: opened.compression,
          cgVersion: '01',
          ...(opts.countChangesets ? { changesets: await count(opened.cg) } : {}),
        };
      }
      const parts: string[] = [];
      for (;;) {
        const part = await opened.bundle.nextPart();
        if (!part) break;
        parts.push(part.type);
        if (part.type === STREAM2_PART) return { kind: 'stream-v2', compression: opened.compression, parts };
        if (part.type === 'changegroup') {
          const nb = part.params.get('nbchanges');
          const cgVersion = changegroupVersion(part.params.get('version'));
          let changesets = nb !== undefined && /^\d+$/.test(nb) ? Number(nb) : undefined;
          if (opts.countChangesets && changesets === undefined)
            changesets = await count(new ChangegroupReader(part.payload, cgVersion));
          return {
            kind: 'bundle2',
            compression: opened.compression,
            cgVersion,
            ...(changesets !== undefined ? { changesets } : {}),
            parts,
          };
        }
      }
      return { kind: 'bundle2', compression: opened.compression, parts };
    } finally {
      await opened.close();
    }
  } finally {
    await src.close();
  }
}
