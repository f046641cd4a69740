// Hand-made changegroups for hostile-input tests: one changeset adding the given files, built
// byte by byte (no hg needed), so a test can give a filelog any name, lie in any length, or
// append anything. Nodes are real (storageutil.hashrevisionsha1), so an honest one applies.
import { createHash, randomBytes } from 'node:crypto';
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

/**
 * A one-hunk delta from base to text (common prefix and suffix kept), as a cg2 delta carries it;
 * `lines`: cut at line boundaries, as hg's bdiff does (a manifest delta hg's readdelta can read).
 */
export function simpleDelta(base: Buffer, text: Buffer, lines = false): Buffer {
  let start = 0;
  while (start < base.length && start < text.length && base[start] === text[start]) start++;
  while (lines && start > 0 && base[start - 1] !== 0x0a) start--;
  let endB = base.length;
  let endT = text.length;
  while (endB > start && endT > start && base[endB - 1] === text[endT - 1]) {
    endB--;
    endT--;
  }
  while (lines && endB < base.length && base[endB - 1] !== 0x0a) {
    endB++;
    endT++;
  }
  return Buffer.concat([i32(start), i32(endB), i32(endT - start), text.subarray(start, endT)]);
}

export interface CraftedGroups {
  changelog: Buffer[];
  manifest: Buffer[];
  files: { name: string; chunks: Buffer[] }[];
}

/** A cg2 stream of the given groups (chunks with their length prefix). */
export function assembleCg2(g: CraftedGroups): Buffer {
  return Buffer.concat([
    ...g.changelog,
    END,
    ...g.manifest,
    END,
    ...g.files.flatMap((f) => [nameChunk(f.name), ...f.chunks, END]),
    END,
  ]);
}

export interface CraftedHistory extends CraftedGroups {
  cg: Buffer;
  changesets: Buffer[];
  manifests: Buffer[];
  manifestTexts: Buffer[];
  /** file name → its nodes, oldest first */
  fileNodes: Map<string, Buffer[]>;
}

/**
 * A linear history as cg2: commit i sets the files of `commits[i]` (later commits keep the
 * others). Manifests and file revisions are deltas against their previous revision (p1), as hg
 * sends them (manifest deltas on line boundaries unless `byteManifestDeltas`: valid, but not
 * what hg sends); a file revision's p1 is its previous one.
 */
export function craftHistory(
  commits: readonly (readonly CraftedFile[])[],
  opts: { byteManifestDeltas?: boolean } = {},
): CraftedHistory {
  const state = new Map<string, Buffer>(); // name -> current node
  const texts = new Map<string, Buffer>();
  const h: CraftedHistory = {
    cg: Buffer.alloc(0),
    changelog: [],
    manifest: [],
    files: [],
    changesets: [],
    manifests: [],
    manifestTexts: [],
    fileNodes: new Map(),
  };
  const fileChunks = new Map<string, Buffer[]>();
  let prevCl: Buffer = NULL;
  let prevMf: Buffer = NULL;
  let prevMfText = Buffer.alloc(0);
  commits.forEach((files, i) => {
    const pending: [string, Buffer, Buffer, Buffer, Buffer][] = []; // name, node, p1, base text, text
    for (const f of files) {
      const text = Buffer.from(f.content, 'latin1');
      const p1 = state.get(f.name) ?? NULL;
      const node = nodeOf(text, p1);
      pending.push([f.name, node, p1, texts.get(f.name) ?? Buffer.alloc(0), text]);
      state.set(f.name, node);
      texts.set(f.name, text);
    }
    const names = [...state.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const mfText = Buffer.from(
      names.map((n) => `${n}\0${state.get(n)!.toString('hex')}\n`).join(''),
      'latin1',
    );
    const mf = nodeOf(mfText, prevMf);
    const changed = files.map((f) => f.name).sort();
    const clText = Buffer.from(
      `${mf.toString('hex')}\nTest <test@example.com>\n${i} 0\n${changed.join('\n')}\n\ncommit ${i}`,
      'latin1',
    );
    const cl = nodeOf(clText, prevCl);
    h.changelog.push(cg2Chunk(cl, cl, simpleDelta(Buffer.alloc(0), clText), prevCl, NULL));
    h.manifest.push(
      cg2Chunk(mf, cl, simpleDelta(prevMfText, mfText, !opts.byteManifestDeltas), prevMf, prevMf),
    );
    for (const [name, node, p1, base, text] of pending) {
      if (!fileChunks.has(name)) fileChunks.set(name, []);
      fileChunks.get(name)!.push(cg2Chunk(node, cl, simpleDelta(base, text), p1, p1));
      h.fileNodes.set(name, [...(h.fileNodes.get(name) ?? []), node]);
    }
    h.changesets.push(cl);
    h.manifests.push(mf);
    h.manifestTexts.push(mfText);
    prevCl = cl;
    prevMf = mf;
    prevMfText = mfText;
  });
  h.files = [...fileChunks.keys()].sort().map((name) => ({ name, chunks: fileChunks.get(name)! }));
  h.cg = assembleCg2(h);
  return h;
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

/**
 * cg2 changelog chunks without end: a linear history of valid changesets (each hashes to its
 * node, its parent the one before), each carrying `descBytes` of incompressible description.
 */
export function* endlessChangesets(descBytes = 32 << 10): Generator<Buffer> {
  let p1: Buffer = NULL;
  for (let i = 0; ; i++) {
    const desc = randomBytes(descBytes / 2).toString('hex');
    const text = Buffer.from(`${'0'.repeat(40)}\nTest <test@example.com>\n${i} 0\n\n${desc}`, 'latin1');
    const node = nodeOf(text, p1);
    yield cg2Chunk(node, node, fullTextDelta(text), p1);
    p1 = node;
  }
}
