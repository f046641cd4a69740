// Hand-made changegroups for hostile-input tests: one changeset adding the given files, built
// byte by byte (no hg needed), so a test can give a filelog any name, lie in any length, or
// append anything. Nodes are real (storageutil.hashrevisionsha1), so an honest one applies.
import { createHash } from 'node:crypto';
import { Bundle2Writer, type Bundle2OutPart } from '../../src/main/engine/format/bundle2';
import type { CompressionKey } from '../../src/main/engine/format/stream-reader';

export const NULL = Buffer.alloc(20);

export function nodeOf(text: Uint8Array, p1: Uint8Array = NULL, p2: Uint8Array = NULL): Buffer {
  const [a, b] = Buffer.compare(p1, p2) <= 0 ? [p1, p2] : [p2, p1];
  return createHash('sha1').update(a).update(b).update(text).digest();
}

const i32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};

/** A full-text delta against the null revision: one hunk replacing [0, 0). */
export function fullTextDelta(text: Buffer): Buffer {
  return Buffer.concat([i32(0), i32(0), i32(text.length), text]);
}

/** One cg2 delta chunk (length prefix included). */
export function cg2Chunk(
  node: Uint8Array,
  linkNode: Uint8Array,
  delta: Uint8Array,
  p1: Uint8Array = NULL,
  base: Uint8Array = NULL,
): Buffer {
  return Buffer.concat([i32(4 + 100 + delta.length), node, p1, NULL, base, linkNode, delta]);
}

export function nameChunk(name: string): Buffer {
  const b = Buffer.from(name, 'latin1');
  return Buffer.concat([i32(4 + b.length), b]);
}

export const END = i32(0);

export interface CraftedFile {
  name: string;
  content: string;
}

export interface Crafted {
  /** the cg2 stream */
  cg: Buffer;
  changeset: Buffer;
  manifest: Buffer;
  fileNodes: Buffer[];
}

/** One root changeset adding `files`, as cg2. */
export function craftCg2(files: readonly CraftedFile[], desc = 'crafted'): Crafted {
  const sorted = [...files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const fileNodes = sorted.map((f) => nodeOf(Buffer.from(f.content, 'latin1')));
  const manifestText = Buffer.from(
    sorted.map((f, i) => `${f.name}\0${fileNodes[i]!.toString('hex')}\n`).join(''),
    'latin1',
  );
  const manifest = nodeOf(manifestText);
  const clText = Buffer.from(
    `${manifest.toString('hex')}\nTest <test@example.com>\n0 0\n${sorted.map((f) => f.name).join('\n')}\n\n${desc}`,
    'latin1',
  );
  const changeset = nodeOf(clText);
  const cg = Buffer.concat([
    cg2Chunk(changeset, changeset, fullTextDelta(clText)),
    END,
    cg2Chunk(manifest, changeset, fullTextDelta(manifestText)),
    END,
    ...sorted.flatMap((f, i) => [
      nameChunk(f.name),
      cg2Chunk(fileNodes[i]!, changeset, fullTextDelta(Buffer.from(f.content, 'latin1'))),
      END,
    ]),
    END,
  ]);
  return { cg, changeset, manifest, fileNodes };
}

/** A bundle2 container (HG20) holding `cg` as a changegroup part, then `extra` parts. */
export async function bundle2Of(
  cg: Buffer | null,
  opts: { extra?: Bundle2OutPart[]; compression?: CompressionKey; version?: string } = {},
): Promise<Buffer> {
  const w = new Bundle2Writer({ ...(opts.compression ? { compression: opts.compression } : {}) });
  if (cg) w.addPart({ type: 'changegroup', mandatoryParams: [['version', opts.version ?? '02']], data: cg });
  for (const p of opts.extra ?? []) w.addPart(p);
  const out: Uint8Array[] = [];
  for await (const c of w.chunks()) out.push(c);
  return Buffer.concat(out);
}

export async function* pieces(b: Uint8Array, size = 997): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < b.length; i += size) yield b.subarray(i, i + size);
}

/**
 * A zstd frame built by hand (RFC 8878): `raw` pieces as raw blocks, `{ zeros: n }` as RLE
 * blocks of 128 KiB — a decompression bomb of n bytes costs ~n/32768 bytes. 1 MiB window.
 */
export function zstdFrame(content: readonly (Buffer | { zeros: number })[]): Buffer {
  const MAX_BLOCK = 128 * 1024;
  const blocks: [type: 0 | 1, size: number, body: Buffer][] = [];
  for (const c of content) {
    if (Buffer.isBuffer(c)) {
      for (let i = 0; i < c.length; i += MAX_BLOCK) {
        const body = c.subarray(i, i + MAX_BLOCK);
        blocks.push([0, body.length, body]);
      }
    } else {
      for (let left = c.zeros; left > 0; left -= MAX_BLOCK)
        blocks.push([1, Math.min(left, MAX_BLOCK), Buffer.alloc(1)]);
    }
  }
  if (!blocks.length) blocks.push([0, 0, Buffer.alloc(0)]);
  const out: Buffer[] = [Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x50])];
  blocks.forEach(([type, size, body], i) => {
    const h = (i === blocks.length - 1 ? 1 : 0) | (type << 1) | (size << 3);
    out.push(Buffer.from([h & 0xff, (h >> 8) & 0xff, (h >> 16) & 0xff]), body);
  });
  return Buffer.concat(out);
}

/** bundle2 part framing by hand: header block, then the payload as one chunk of `payloadSize` bytes. */
export function partHead(type: string, params: [string, string][], payloadSize: number): Buffer {
  const kv = params.flatMap(([k, v]) => [Buffer.from(k), Buffer.from(v)]);
  const header = Buffer.concat([
    Buffer.from([type.length]),
    Buffer.from(type),
    Buffer.alloc(4),
    Buffer.from([params.length, 0]),
    Buffer.from(params.flatMap(([k, v]) => [k.length, v.length])),
    ...kv,
  ]);
  return Buffer.concat([i32(header.length), header, i32(payloadSize)]);
}

export { i32 };
