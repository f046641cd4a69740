// Changegroup generation (changegroup.py `cgpacker.generate`, `deltagroup`; storageutil.py
// `emitrevisions`; helptext/internals/changegroups.txt): the changelog, the manifests, then each
// changed file in byte order, every group in storage (= linkrev) order, as cg2 or cg3 chunks.
//
// Deltas follow emitrevisions: the stored delta when its base is one the receiver has (an ancestor
// of what it has in that revlog) or was sent earlier in the group (a copy of the stored chunk, no
// text rebuilt); otherwise a delta against p1, p2 or the previous revision sent; a full text with a
// trivial header for the first revision. The changelog is always sent as full texts (hg disables
// its delta chains). Output is produced lazily in ~256 KiB pieces (~2 MiB of whole bundle2 frames
// for a server, opts.frame): memory stays bounded by one revlog's index and a text cache,
// whatever the repository's size.

import { SluiceError, cancelled } from '../errors';
import { NULL_REV, REVIDX_ISCENSORED, STREAM_ABOVE } from '../revlog/constants';
import { Revlog } from '../revlog/revlog';
import { revlogError } from '../revlog/revlog-error';
import { patchText } from '../revlog/mpatch';
import { parseChangelogEntry, parseManifest, type ManifestEntry } from '../revlog/texts';
import type { RevlogIoMode } from '../revlog/file-io';
import { storeFilePath, storePathEncoder } from '../store/encoding';
import { StorePathAuditor } from '../store/store-auditor';
import { OutWriter } from './out-writer';

export type ChangegroupVersion = '02' | '03';

/** Changegroup versions Sluice writes, oldest first (cg1 needs the implicit-base delta form). */
export const EMITTED_CG_VERSIONS: readonly ChangegroupVersion[] = ['02', '03'];

/** The parents of each changeset: enough to compute what is missing (ChangelogGraph has this shape). */
export interface ParentGraph {
  readonly length: number;
  readonly p1: Int32Array;
  readonly p2: Int32Array;
}

/** discovery.outgoing: what `heads` have that `common` does not. */
export interface Outgoing {
  /** (::heads) - (::common), ascending (topological) */
  missing: number[];
  /** ::common, marked per rev (1 = the receiver has it) */
  common: Uint8Array;
}

/** revlog.findcommonmissing over the changelog graph. */
export function computeOutgoing(
  g: ParentGraph,
  commonRevs: Iterable<number>,
  headRevs: Iterable<number>,
): Outgoing {
  const common = markAncestors(g, commonRevs);
  const wanted = markAncestors(g, headRevs, common);
  const missing: number[] = [];
  for (let r = 0; r < g.length; r++) if (wanted[r] && !common[r]) missing.push(r);
  return { missing, common };
}

/** Marks ancestors of revs (inclusive); `stop` revs are not walked through. */
function markAncestors(g: ParentGraph, revs: Iterable<number>, stop?: Uint8Array): Uint8Array {
  const mark = new Uint8Array(g.length);
  const stack: number[] = [];
  for (const r of revs) {
    if (r < 0 || r >= g.length || mark[r] || stop?.[r]) continue;
    mark[r] = 1;
    stack.push(r);
  }
  while (stack.length) {
    const r = stack.pop()!;
    for (const p of [g.p1[r]!, g.p2[r]!])
      if (p >= 0 && !mark[p] && !stop?.[p]) {
        mark[p] = 1;
        stack.push(p);
      }
  }
  return mark;
}

export interface ChangegroupSource {
  storeDir: string;
  requirements: ReadonlySet<string>;
}

export interface EmitProgress {
  section: 'changesets' | 'manifests' | 'files';
  /** revisions emitted in the section so far */
  revisions: number;
  /** total revisions of the section when known (changesets, manifests), else files done/total */
  total: number;
  /** bytes of changegroup emitted so far */
  bytes: number;
  /** the file being sent (files section) */
  path?: string;
}

export interface EmitOptions {
  version: ChangegroupVersion;
  /**
   * changegroup.makestream's fastpathlinkrev: every head of the unfiltered repository is requested,
   * so file revisions can be chosen by linkrev instead of by reading the sent manifests.
   */
  fastPathLinkrev: boolean;
  signal?: AbortSignal;
  io?: RevlogIoMode;
  onProgress?: (p: EmitProgress) => void;
  /** hg's `%8.i (changelog)`-style verbose notes and per-file sizes */
  onNote?: (line: string) => void;
  /**
   * When set, the output is a bundle2 part's payload already cut into frames of this size (an
   * i32 size before each): a server's framer and wire compressor then take it without a copy.
   */
  frame?: number;
}

const NULL_NODE = Buffer.alloc(20);

/** `>lll` hunk replacing [start, end) of the base: a one-hunk delta (mdiff.replacediffheader shape). */
function hunkHeader(start: number, end: number, length: number): Buffer {
  const b = Buffer.allocUnsafe(12);
  b.writeInt32BE(start, 0);
  b.writeInt32BE(end, 4);
  b.writeInt32BE(length, 8);
  return b;
}

/**
 * A delta turning base into text: one hunk replacing what lies between their common prefix and
 * common suffix (empty when equal). Linear, and tight for the usual append or local edit; hg's
 * bdiff would find several hunks, the receiver rebuilds the same text either way. `lines`: cut at
 * line boundaries (a manifest: hg stores a received delta as is and reads it back as lines).
 */
export function prefixSuffixDelta(base: Uint8Array, text: Uint8Array, lines = false): Uint8Array[] {
  const max = Math.min(base.length, text.length);
  let p = 0;
  while (p < max && base[p] === text[p]) p++;
  while (lines && p > 0 && base[p - 1] !== 0x0a) p--;
  let s = 0;
  while (s < max - p && base[base.length - 1 - s] === text[text.length - 1 - s]) s++;
  while (
    lines &&
    s > 0 &&
    !(base[base.length - 1 - s] === 0x0a && (text.length - s === p || text[text.length - 1 - s] === 0x0a))
  )
    s--;
  if (p === base.length && p === text.length) return [];
  const mid = text.subarray(p, text.length - s);
  return [hunkHeader(p, base.length - s, mid.length), mid];
}

/** A parent out of range (a hostile stream clone served on) is a typed error, not a read past the index. */
function checkParents(rl: Revlog, r: number): void {
  const n = rl.index.length;
  const p1 = rl.index.p1(r);
  const p2 = rl.index.p2(r);
  if (p1 < NULL_REV || p1 >= n || p2 < NULL_REV || p2 >= n)
    throw revlogError(rl.name, 'parent-out-of-range', `${rl.name}: rev ${r}: parent out of range`, {
      rev: r,
    });
}

/** Marks the revisions of rl the receiver has: every ancestor of the parents of `revs` not sent. */
function receiverHas(rl: Revlog, revs: readonly number[]): Uint8Array {
  const index = rl.index;
  const n = index.length;
  const sending = new Uint8Array(n);
  for (const r of revs) sending[r] = 1;
  const available = new Uint8Array(n);
  const stack: number[] = [];
  const visit = (p: number, skipSent: boolean): void => {
    if (p >= 0 && !(skipSent && sending[p]) && !available[p]) {
      available[p] = 1;
      stack.push(p);
    }
  };
  for (const r of revs) {
    checkParents(rl, r);
    visit(index.p1(r), true);
    visit(index.p2(r), true);
  }
  while (stack.length) {
    const r = stack.pop()!;
    checkParents(rl, r);
    visit(index.p1(r), false);
    visit(index.p2(r), false);
  }
  return available;
}

type LinkLookup = (rev: number) => Uint8Array | Promise<Uint8Array>;

interface GroupStats {
  revisions: number;
}

/**
 * storageutil.emitrevisions + _revisiondeltatochunks for one revlog: `revs` ascending. `full`:
 * every revision as a full text (the changelog's CG_DELTAMODE_FULL).
 */
async function* emitGroup(
  rl: Revlog,
  revs: readonly number[],
  linknode: LinkLookup,
  version: ChangegroupVersion,
  full: boolean,
  out: OutWriter,
  stats: GroupStats,
  signal: AbortSignal | undefined,
): AsyncGenerator<Uint8Array> {
  const index = rl.index;
  const bases = chooseBases(rl, revs, full);
  const held = full ? undefined : chunksToHold(rl, revs, bases);
  rl.holdChunks(held);
  const headerLen = version === '03' ? 102 : 100;
  // one header buffer for the group: written whole into out, never handed out
  const head = Buffer.allocUnsafe(4 + headerLen + 12);
  for (let i = 0; i < revs.length; i++) {
    const rev = revs[i]!;
    if (signal?.aborted) throw cancelled();
    const p1 = index.p1(rev);
    const p2 = index.p2(rev);
    const deltaParent = index.deltaParent(rev);
    const base = bases[i]!;
    const censored = (index.revFlags(rev) & REVIDX_ISCENSORED) !== 0;
    let payload: Uint8Array;
    let hunk = false; // a full text: a trivial hunk header goes before it
    // a large snapshot is checked against its node in pieces (memory: a few MiB) before it is
    // decoded whole to be sent: a size that lies over a decompression bomb (a hostile stream
    // clone served on) fails here, typed, instead of costing the server what it announces
    if (deltaParent === NULL_REV && index.rawSize(rev) > STREAM_ABOVE && !censored)
      await rl.streamRevision(rev, () => undefined);
    if (base === NULL_REV) {
      // a full text: the stored chunk itself when it is a snapshot, else rebuilt
      const text =
        deltaParent === NULL_REV && !full
          ? await rl.chunk(rev)
          : await rl.revision(rev, { check: !censored });
      payload = text;
      hunk = text.length > 0;
    } else if (base === deltaParent) {
      payload = await rl.chunk(rev);
      held?.offer(rev, payload);
    } else {
      const parts = prefixSuffixDelta(
        await rl.revision(base),
        await rl.revision(rev),
        /(^|\/)00manifest$/.test(rl.name),
      );
      payload = parts.length ? Buffer.concat(parts) : new Uint8Array(0);
    }
    const hunkLen = hunk ? 12 : 0;
    head.writeInt32BE(4 + headerLen + hunkLen + payload.length, 0);
    index.copyNode(rev, head, 4);
    index.copyNode(p1, head, 24);
    index.copyNode(p2, head, 44);
    index.copyNode(base, head, 64);
    const link = linknode(rev);
    head.set(link instanceof Uint8Array ? link : await link, 84);
    if (version === '03') head.writeUInt16BE(index.revFlags(rev), 104);
    if (hunk) {
      const at = 4 + headerLen;
      head.writeInt32BE(0, at);
      head.writeInt32BE(0, at + 4);
      head.writeInt32BE(payload.length, at + 8);
    }
    out.write(head.subarray(0, 4 + headerLen + hunkLen));
    out.write(payload);
    stats.revisions++;
    if (out.full) yield* out.take();
  }
  rl.holdChunks(undefined);
}

/**
 * The delta base of each of `revs` (emitrevisions): the stored delta's when the receiver has it
 * or it is sent before, else p1, p2, the previous revision sent; NULL_REV for a full text.
 */
function chooseBases(rl: Revlog, revs: readonly number[], full: boolean): Int32Array {
  const index = rl.index;
  const available = receiverHas(rl, revs);
  const emitted = new Uint8Array(index.length);
  const usable = (r: number): boolean => r !== NULL_REV && (emitted[r] === 1 || available[r] === 1);
  const bases = new Int32Array(revs.length);
  let prevrev = revs.length ? index.p1(revs[0]!) : NULL_REV;
  for (let i = 0; i < revs.length; i++) {
    const rev = revs[i]!;
    checkParents(rl, rev);
    const deltaParent = index.deltaParent(rev);
    if (full) bases[i] = NULL_REV;
    else if (usable(deltaParent)) bases[i] = deltaParent;
    else if (usable(index.p1(rev))) bases[i] = index.p1(rev);
    else if (usable(index.p2(rev))) bases[i] = index.p2(rev);
    else bases[i] = prevrev;
    // revlog.candelta: no delta from or to a censored revision (a tombstone): a full text, which
    // hg's receiver recognizes a tombstone by (it cannot rebuild a delta against one)
    const censored = (r: number): boolean => (index.revFlags(r) & REVIDX_ISCENSORED) !== 0;
    if (bases[i] !== NULL_REV && (censored(rev) || censored(bases[i]!))) bases[i] = NULL_REV;
    emitted[rev] = 1;
    prevrev = rev;
  }
  return bases;
}

/** At most this much of a group's decoded chunks is held for the texts it rebuilds. */
const HELD_MAX = 32 << 20;

/**
 * The revisions whose decoded chunk the group both sends as it is stored and needs again later
 * to rebuild a text it sends another way (a delta against p1): held once sent (HeldChunks)
 * instead of decoded twice. undefined when no text is rebuilt from such chunks.
 */
function chunksToHold(rl: Revlog, revs: readonly number[], bases: Int32Array): HeldChunks | undefined {
  const index = rl.index;
  const sentStored = new Set<number>();
  let wanted: Set<number> | undefined;
  const want = (text: number): void => {
    for (const r of rl.deltaChain(text).chain) if (sentStored.has(r)) (wanted ??= new Set()).add(r);
  };
  for (let i = 0; i < revs.length; i++) {
    const rev = revs[i]!;
    const base = bases[i]!;
    if (base === index.deltaParent(rev)) sentStored.add(rev);
    else if (base !== NULL_REV) {
      want(base);
      want(rev);
    }
  }
  return wanted && new HeldChunks(wanted);
}

/** Decoded chunks kept as they are sent, for the revlog's later builds (Revlog.holdChunks). */
class HeldChunks extends Map<number, Uint8Array> {
  private bytes = 0;

  constructor(private readonly wanted: Set<number>) {
    super();
  }

  /** Keeps rev's decoded chunk when a later build wants it and the budget allows. */
  offer(rev: number, chunk: Uint8Array): void {
    if (!this.wanted.has(rev) || this.bytes + chunk.length > HELD_MAX) return;
    this.bytes += chunk.length;
    this.set(rev, chunk);
  }
}

/** One changegroup being made: what each section learns for the next. */
interface EmitRun {
  outgoing: Outgoing;
  opts: EmitOptions;
  out: OutWriter;
  open: (radix: string) => Promise<Revlog>;
  progress: (p: Omit<EmitProgress, 'bytes'>) => void;
  /** manifest node (latin1) -> the first changeset sent that has it */
  manifests: Map<string, number>;
  /** the files the sent changesets touch */
  changedFiles: Set<string>;
  /** changeset rev -> its position in the send order */
  clrevorder: Map<number, number>;
  /** path -> file node (latin1) -> changeset rev (the slow path's linknodes) */
  fnodes: Map<string, Map<string, number>>;
  /** the changelog's node of a rev (its index outlives the closed revlog) */
  clNode: (rev: number) => Uint8Array;
}

/**
 * The changegroup of `outgoing.missing` (cgpacker.generate), as the bytes of a bundle2
 * `changegroup` part or of an `HG10UN` file body.
 */
export async function* emitChangegroup(
  src: ChangegroupSource,
  outgoing: Outgoing,
  opts: EmitOptions,
): AsyncGenerator<Uint8Array> {
  const { signal } = opts;
  const io = opts.io ?? 'async';
  const encode = storePathEncoder(src.requirements);
  const storePath = (name: string): string => storeFilePath(src.storeDir, encode, name);
  const auditor = new StorePathAuditor(src.storeDir);
  const out = new OutWriter(opts.frame ?? 0);
  const run: EmitRun = {
    outgoing,
    opts,
    out,
    open: async (radix) => {
      auditor.checkFile(encode(radix + '.i'), radix);
      const rl = await Revlog.open(storePath(radix + '.i'), {
        name: radix,
        dataPath: storePath(radix + '.d'),
        io,
        signal,
      });
      if (!rl.index.inline) auditor.checkFile(encode(radix + '.d'), radix);
      return rl;
    },
    progress: (p) => opts.onProgress?.({ ...p, bytes: out.total }),
    manifests: new Map(),
    changedFiles: new Set(),
    clrevorder: new Map(),
    fnodes: new Map(),
    clNode: () => NULL_NODE,
  };
  try {
    yield* emitChangelog(run);
    yield* emitManifests(run);
    yield* emitFiles(run);
    yield* out.end();
  } finally {
    out.stopLending();
  }
}

/** The changelog group: full texts; notes each manifest's first changeset and the changed files. */
async function* emitChangelog(run: EmitRun): AsyncGenerator<Uint8Array> {
  const { outgoing, opts, out, progress } = run;
  const { missing } = outgoing;
  const cl = await run.open('00changelog');
  try {
    if (cl.length < outgoing.common.length)
      throw new SluiceError('REVLOG', 'the changelog changed while a changegroup was being made');
    const stats = { revisions: 0 };
    yield* emitGroup(
      cl,
      missing,
      async (rev) => {
        const entry = parseChangelogEntry(await cl.revision(rev));
        run.clrevorder.set(rev, run.clrevorder.size);
        const mkey = Buffer.from(entry.manifest).toString('latin1');
        if (!run.manifests.has(mkey)) run.manifests.set(mkey, rev);
        for (const f of entry.files) run.changedFiles.add(f);
        if (stats.revisions % 64 === 0)
          progress({ section: 'changesets', revisions: stats.revisions, total: missing.length });
        return cl.index.node(rev);
      },
      opts.version,
      true,
      out,
      stats,
      opts.signal,
    );
    out.int32(0);
    progress({ section: 'changesets', revisions: stats.revisions, total: missing.length });
    opts.onNote?.(`${String(out.total).padStart(8)} (changelog)`);
  } finally {
    await cl.close();
  }
  run.clNode = (rev) => cl.index.node(rev);
}

/** The manifest group, each linked to the first changeset (in send order) that introduced it. */
async function* emitManifests(run: EmitRun): AsyncGenerator<Uint8Array> {
  const { opts, out, progress } = run;
  const ml = await run.open('00manifest');
  const manifestStart = out.total;
  try {
    const mrevs: number[] = [];
    const linkOf = new Map<number, number>();
    for (const [node, clrev] of run.manifests) {
      const r = ml.index.rev(Buffer.from(node, 'latin1'));
      if (r === NULL_REV) continue; // the empty changeset's null manifest
      if (r === undefined) {
        throw new SluiceError('REVLOG', `manifest ${Buffer.from(node, 'latin1').toString('hex')} is missing`);
      }
      mrevs.push(r);
      linkOf.set(r, clrev);
    }
    mrevs.sort((a, b) => a - b);
    const stats = { revisions: 0 };
    yield* emitGroup(
      ml,
      mrevs,
      async (rev) => {
        const clrev = linkOf.get(rev)!;
        if (!opts.fastPathLinkrev) await collectFileNodes(ml, rev, clrev, run.fnodes, run.clrevorder);
        if (stats.revisions % 64 === 0)
          progress({ section: 'manifests', revisions: stats.revisions, total: mrevs.length });
        return run.clNode(clrev);
      },
      opts.version,
      false,
      out,
      stats,
      opts.signal,
    );
    out.int32(0);
    if (opts.version === '03') out.int32(0); // the (empty) list of tree manifests
    progress({ section: 'manifests', revisions: stats.revisions, total: mrevs.length });
    opts.onNote?.(`${String(out.total - manifestStart).padStart(8)} (manifests)`);
  } finally {
    await ml.close();
  }
}

/**
 * Which revisions of filelog fl to send, each with its changeset: on the fast path those whose
 * linkrev is sent, else the file nodes the sent manifests introduce that the receiver lacks.
 */
function fileLinks(run: EmitRun, fl: Revlog, path: string, sentCl: Uint8Array): Map<number, number> {
  const common = run.outgoing.common;
  const links = new Map<number, number>(); // file rev -> cl rev
  if (run.opts.fastPathLinkrev) {
    for (let r = 0; r < fl.length; r++) {
      const lr = fl.index.link(r);
      if (lr >= 0 && lr < sentCl.length && sentCl[lr]) links.set(r, lr);
    }
    return links;
  }
  for (const [node, clrev] of run.fnodes.get(path) ?? []) {
    const r = fl.index.rev(Buffer.from(node, 'latin1'));
    if (r === undefined)
      throw new SluiceError(
        'REVLOG',
        `${path}: file node ${Buffer.from(node, 'latin1').toString('hex')} is missing`,
      );
    const lr = fl.index.link(r);
    if (lr >= 0 && lr < common.length && common[lr]) continue; // the receiver has it
    links.set(r, clrev);
  }
  return links;
}

/** The file groups, in byte order of their paths. */
async function* emitFiles(run: EmitRun): AsyncGenerator<Uint8Array> {
  const { outgoing, opts, out, progress } = run;
  const sentCl = new Uint8Array(outgoing.common.length);
  for (const r of outgoing.missing) sentCl[r] = 1;
  const files = [...run.changedFiles].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  let done = 0;
  for (const path of files) {
    if (opts.signal?.aborted) throw cancelled();
    const fl = await run.open('data/' + path);
    try {
      if (!fl.length) throw new SluiceError('REVLOG', `empty or missing file data for ${path}`);
      const links = fileLinks(run, fl, path, sentCl);
      done++;
      if (!links.size) continue;
      progress({ section: 'files', revisions: done, total: files.length, path });
      const start = out.total;
      const name = Buffer.from(path, 'latin1');
      out.int32(4 + name.length);
      out.write(name);
      const revs = [...links.keys()].sort((a, b) => a - b);
      yield* emitGroup(
        fl,
        revs,
        (rev) => run.clNode(links.get(rev)!),
        opts.version,
        false,
        out,
        { revisions: 0 },
        opts.signal,
      );
      out.int32(0);
      opts.onNote?.(`${String(out.total - start).padStart(8)}  ${path}`);
      if (out.full) yield* out.take();
    } finally {
      await fl.close();
    }
  }
  out.int32(0);
  progress({ section: 'files', revisions: files.length, total: files.length });
}

/**
 * The slow path's lookupmflinknode: the file nodes a sent manifest introduces (its delta against
 * a parent when stored that way, manifestctx.readfast), each linked to the earliest changeset.
 */
async function collectFileNodes(
  ml: Revlog,
  rev: number,
  clrev: number,
  fnodes: Map<string, Map<string, number>>,
  clrevorder: Map<number, number>,
): Promise<void> {
  const dp = ml.index.deltaParent(rev);
  const order = clrevorder.get(clrev)!;
  const visit = (e: ManifestEntry): void => {
    if (e.flag === 't') return;
    let m = fnodes.get(e.path);
    if (!m) fnodes.set(e.path, (m = new Map()));
    const node = Buffer.from(e.nodeHex, 'hex').toString('latin1');
    const prev = m.get(node);
    if (prev === undefined || clrevorder.get(prev)! > order) m.set(node, clrev);
  };
  if (dp !== NULL_REV && (dp === ml.index.p1(rev) || dp === ml.index.p2(rev))) {
    try {
      parseManifest(patchText(await ml.chunk(rev)), visit);
      return;
    } catch {
      // a delta whose hunks do not cut at line ends (not written by hg): read the whole manifest
    }
  }
  parseManifest(await ml.revision(rev), visit);
}
