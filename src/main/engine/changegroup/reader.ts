// Reading changegroups cg1/cg2/cg3 (helptext/internals/changegroups.txt, changegroup.py
// `cg1unpacker`/`cg2unpacker`/`cg3unpacker`): a changelog group, a manifest group, (cg3) directory
// manifest groups, then one group per file. A chunk is `i32 length` (the 4 bytes included) and
// data; length 0 ends a group, 1..4 is invalid. A delta chunk starts with a fixed header:
//   cg1: node p1 p2 linknode                        (80 bytes; base = previous node, or p1 first)
//   cg2: node p1 p2 deltabase linknode              (100 bytes)
//   cg3: node p1 p2 deltabase linknode u16 flags    (102 bytes)
// Every length is bounded; bytes may arrive in any split (ByteSource).

import { SluiceError } from '../errors';
import { ByteSource } from '../format/byte-source';
import { MAX_NAME_LENGTH, limitError, maxRevisionSize } from '../format/limits';

export type ChangegroupVersion = '01' | '02' | '03';

export const CHANGEGROUP_VERSIONS: readonly ChangegroupVersion[] = ['01', '02', '03'];

const HEADER_SIZE: Record<ChangegroupVersion, number> = { '01': 80, '02': 100, '03': 102 };
/** A full text sent as a delta: one 12-byte hunk header, then the text. */
const HUNK_HEADER = 12;

export interface DeltaChunk {
  node: Uint8Array;
  p1: Uint8Array;
  p2: Uint8Array;
  /** the node the delta applies to; the null node for a full text */
  deltaBase: Uint8Array;
  /** the changeset this revision belongs to */
  linkNode: Uint8Array;
  flags: number;
  delta: Uint8Array;
}

function malformed(message: string): SluiceError {
  return new SluiceError('MALFORMED', message);
}

export class ChangegroupReader {
  private maxRevision: number | undefined;
  /** bytes read so far (progress) */
  get offset(): number {
    return this.src.offset;
  }

  constructor(
    private readonly src: ByteSource,
    readonly version: ChangegroupVersion,
  ) {
    if (!(version in HEADER_SIZE))
      throw new SluiceError('UNSUPPORTED_COMPRESSION', `unknown changegroup version ${version}`);
  }

  /** The next chunk's payload length; 0 at the end of a group. */
  private async chunkLength(): Promise<number> {
    const b = this.src.tryReadExact(4) ?? (await this.src.readExact(4));
    const l = (b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!;
    if (l <= 4) {
      if (l !== 0) throw malformed(`invalid chunk length ${l}`);
      return 0;
    }
    return l - 4;
  }

  /**
   * Reads n payload bytes: a view of the upstream chunk when it holds them all (ByteSource's
   * upstream chunks are never reused, so the view stays valid while the writer keeps it), else
   * the pieces as they arrive, joined once.
   */
  private async readPayload(n: number): Promise<Uint8Array> {
    const fast = this.src.tryReadExact(n);
    if (fast) return fast;
    const pieces: Uint8Array[] = [];
    let have = 0;
    await this.src.copy(n, (p) => {
      pieces.push(p);
      have += p.length;
    });
    return pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces, have);
  }

  /**
   * Reads one group and hands each delta to `onDelta` (awaited, in order). For cg1 the delta base
   * is the previous node of the group, p1 for the first (cg1unpacker._deltaheader).
   */
  async readGroup(onDelta: (d: DeltaChunk) => Promise<void> | void): Promise<number> {
    const headerSize = HEADER_SIZE[this.version];
    // refused from the announced length, before a byte of it is read: a compressed transport
    // makes a huge chunk cheap to send (see maxRevisionSize; read once per reader, not per group)
    const maxDelta = (this.maxRevision ??= maxRevisionSize()) + HUNK_HEADER;
    let prev: Uint8Array | null = null;
    let count = 0;
    for (;;) {
      const len = await this.chunkLength();
      if (len === 0) return count;
      if (len < headerSize)
        throw malformed(
          `changegroup delta chunk of ${len} bytes is shorter than its ${headerSize}-byte header`,
        );
      if (len - headerSize > maxDelta) throw limitError('changegroup delta of', len - headerSize, maxDelta);
      const h = (await this.src.readExact(headerSize)).slice();
      const node = h.subarray(0, 20);
      const p1 = h.subarray(20, 40);
      const p2 = h.subarray(40, 60);
      let deltaBase: Uint8Array;
      let linkNode: Uint8Array;
      let flags = 0;
      if (this.version === '01') {
        deltaBase = prev ?? p1;
        linkNode = h.subarray(60, 80);
      } else {
        deltaBase = h.subarray(60, 80);
        linkNode = h.subarray(80, 100);
        if (this.version === '03') flags = (h[100]! << 8) | h[101]!;
      }
      const delta = await this.readPayload(len - headerSize);
      prev = node;
      count++;
      await onDelta({ node, p1, p2, deltaBase, linkNode, flags, delta });
    }
  }

  /** The next file (or directory) name of the file groups; null at the end (cg1unpacker.filelogheader). */
  async nextName(): Promise<string | null> {
    const len = await this.chunkLength();
    if (len === 0) return null;
    if (len > MAX_NAME_LENGTH) throw limitError('changegroup file name length', len, MAX_NAME_LENGTH);
    return Buffer.from(await this.src.readExact(len)).toString('latin1');
  }

  /** True when nothing follows (a bare cg stream must end after its last group). */
  atEof(): Promise<boolean> {
    return this.src.atEof();
  }
}

/** Parses a `version` part parameter or a `cg.version`. */
export function changegroupVersion(
  v: string | undefined,
  fallback: ChangegroupVersion = '01',
): ChangegroupVersion {
  if (v === undefined) return fallback;
  if ((CHANGEGROUP_VERSIONS as readonly string[]).includes(v)) return v as ChangegroupVersion;
  throw new SluiceError('UNKNOWN_PARAM', `unknown changegroup version ${JSON.stringify(v)}`, { version: v });
}
