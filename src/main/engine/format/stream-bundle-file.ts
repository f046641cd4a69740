// Stream clone bundle files: sniffing (exchange.py readbundle / bundle2.getunbundler dispatch on
// the first 4 bytes) and the one reader the apply path uses for both kinds.
//   HGS1 → packed1; HG20 → bundle2 with exactly one stream2 part (advisory parts ignored);
//   HG10 → a changegroup bundle, not a stream clone.

import { open, stat } from 'node:fs/promises';
import type { BundleInfo } from '../../../shared/jobs';
import { SluiceError, toSluiceError } from '../errors';
import { Bundle2Reader, BUNDLE2_MAGIC } from './bundle2';
import { ByteSource, type ChunkWriter } from './byte-source';
import { PACKED1_MAGIC, readPacked1 } from './packed1';
import { unsupportedRequirements } from '../store/requirements';
import { STREAM2_PARAMS, STREAM2_PART, readStream2Part, type Stream2Reader } from './stream2';
import type { StreamEntry, StreamHeader, StreamReader } from './stream-reader';

const FILE_CHUNK = 256 * 1024;

/**
 * The bytes of a file as fresh buffers of up to `chunkSize` (never reused, so views of them stay
 * valid). Closes the file when the iteration ends, early or not.
 */
export async function* readFileChunks(path: string, chunkSize = FILE_CHUNK): AsyncGenerator<Uint8Array> {
  let fh;
  try {
    fh = await open(path, 'r');
  } catch (e) {
    throw toSluiceError(e);
  }
  try {
    for (;;) {
      const buf = Buffer.allocUnsafe(chunkSize);
      const { bytesRead } = await fh.read(buf, 0, chunkSize, null);
      if (bytesRead === 0) return;
      yield bytesRead === chunkSize ? buf : buf.subarray(0, bytesRead);
    }
  } finally {
    await fh.close();
  }
}

/** Sniffs the bundle kind and returns a reader positioned before the first entry. */
export async function openStreamBundle(src: ByteSource): Promise<StreamReader> {
  try {
    const head = await src.peek(4);
    if (head.length < 4) {
      throw new SluiceError('TRUNCATED', `bundle is only ${head.length} bytes long`);
    }
    const magic = Buffer.from(head).toString('latin1');
    if (magic === PACKED1_MAGIC) return await readPacked1(src);
    if (magic === BUNDLE2_MAGIC) return await openStream2Bundle(src);
    if (magic === 'HG10') throw notStreamBundle('changegroup bundle, HG10');
    throw new SluiceError('BAD_MAGIC', `not a stream clone bundle: starts with ${describeMagic(head)}`, {
      magic: Buffer.from(head).toString('hex'),
    });
  } catch (e) {
    await src.close();
    throw toSluiceError(e);
  }
}

async function openStream2Bundle(src: ByteSource): Promise<StreamReader> {
  const bundle = await Bundle2Reader.open(src, {
    // changegroup is "known" only to report it clearly
    knownParts: {
      [STREAM2_PART]: STREAM2_PARAMS,
      changegroup: ['version', 'nbchanges', 'treemanifest', 'targetphase'],
    },
  });
  const part = await bundle.nextPart();
  if (part === null) throw notStreamBundle('bundle2 without a stream2 part');
  if (part.type !== STREAM2_PART) throw notStreamBundle(`changegroup bundle, bundle2 ${part.type} part`);
  return new StreamBundleReader(bundle, readStream2Part(part, bundle.compression));
}

/** A stream2 part inside a bundle file: at the end, the rest of the container is checked too. */
class StreamBundleReader implements StreamReader {
  constructor(
    private readonly bundle: Bundle2Reader,
    private readonly entries: Stream2Reader,
  ) {}

  get header(): StreamHeader {
    return this.entries.header;
  }

  async nextEntry(): Promise<StreamEntry | null> {
    const entry = await this.entries.nextEntry();
    if (entry) return entry;
    if (!this.bundle.atEnd) {
      const extra = await this.bundle.nextPart();
      if (extra) throw new SluiceError('MALFORMED', `stream bundle has a second ${extra.type} part`);
      // whatever follows the end marker is ignored, as hg does; release the file now
      await this.bundle.close();
    }
    return null;
  }

  copyData(write: ChunkWriter): Promise<void> {
    return this.entries.copyData(write);
  }

  tryNextEntry(): StreamEntry | undefined {
    return this.entries.tryNextEntry(); // undefined at the end too: nextEntry() checks the container
  }

  tryCopyData(write: (chunk: Uint8Array) => void): boolean {
    return this.entries.tryCopyData(write);
  }

  close(): Promise<void> {
    return this.bundle.close();
  }
}

/** Opens a bundle file (packed1 or stream v2) and returns its reader. */
export async function openStreamBundleFile(path: string): Promise<StreamReader> {
  return openStreamBundle(new ByteSource(readFileChunks(path)));
}

/** What the drop dialog shows: the header only, nothing applied. */
export async function inspectBundleFile(path: string): Promise<BundleInfo> {
  const st = await stat(path).catch((e: unknown) => {
    throw toSluiceError(e);
  });
  const reader = await openStreamBundleFile(path);
  try {
    const h = reader.header;
    return {
      path,
      type: h.format === 'packed1' ? 'packed1' : 'v2',
      compression: h.compression,
      requirements: h.requirements,
      files: h.files,
      bytes: h.bytes,
      unsupported: unsupportedRequirements(h.requirements),
      sizeOnDisk: st.size,
    };
  } finally {
    await reader.close();
  }
}

function notStreamBundle(what: string): SluiceError {
  return new SluiceError('BAD_MAGIC', `not a stream clone bundle (${what}); apply it with hg unbundle`);
}

function describeMagic(head: Uint8Array): string {
  const printable = [...head].every((b) => b >= 0x20 && b < 0x7f);
  const hex = Buffer.from(head)
    .toString('hex')
    .replace(/(..)(?!$)/g, '$1 ');
  return printable ? `"${Buffer.from(head).toString('latin1')}" (${hex})` : hex;
}
