// Adding a changegroup to a repository (changegroup.py `cg1unpacker.apply`,
// `_addchangegroupfiles`; bundle2.py `handlechangegroup`, `handlephases`, `handlebookmark`):
// changesets (linkrev = their own rev), manifests and files (linkrev = the rev of their
// changeset, which must be known), each revision rebuilt and checked by the revlog writer.

import type { JobPhase } from '../../../shared/events';
import { SluiceError } from '../errors';
import { Bundle2Reader, type Bundle2Part } from '../format/bundle2';
import { decodeBinaryBookmarks, decodePhaseHeads } from '../format/bundle2-marks';
import { limitError } from '../format/limits';
import type { JobContext } from '../context/job-context';
import { ProgressTracker } from '../context/progress';
import type { RepoWriteSession } from '../repo/write-session';
import { parseChangelogEntry } from '../revlog/texts';
import type { RevlogWriter } from '../revlog/writer';
import type { IncomingRevision } from '../revlog/writer-options';
import { ALL_PHASES } from '../repo/changelog-graph';
import { NeededFiles } from './needed-files';
import { ChangegroupReader, changegroupVersion, type DeltaChunk } from './reader';

export interface ChangegroupCounts {
  /** changesets added (duplicates not counted) */
  changesets: number;
  /** manifest revisions added (root and directories) */
  manifests: number;
  /** file groups received (hg's "N files") */
  files: number;
  /** file revisions added */
  revisions: number;
}

/**
 * Parts of a bundle2 Sluice applies (and the mandatory params it understands). A repository with
 * side data (exp-changelog-v2, copies in the changelog) marks every changegroup part it sends
 * `exp-sidedata` and `exp-wanted-sidedata` (bundle2._addpartsfromopts, exchange's getbundle); side
 * data itself travels only in cg4, which Sluice never asks for, so hg's handlechangegroup reads
 * the 01-03 groups under them unchanged, and so does Sluice.
 */
export const APPLY_PARTS = {
  changegroup: ['version', 'nbchanges', 'treemanifest', 'targetphase', 'exp-sidedata', 'exp-wanted-sidedata'],
  'phase-heads': [],
  bookmarks: [],
  obsmarkers: [],
  hgtagsfnodes: [],
  listkeys: ['namespace'],
  'check:heads': [],
  'check:updated-heads': [],
  'check:phases': [],
  'check:bookmarks': [],
} as const satisfies Record<string, readonly string[]>;

/**
 * The apply gives the event loop a turn at least this often: a pull's transport reads the socket
 * ahead then (client/read-ahead.ts) instead of leaving the server blocked on a full one while
 * buffered revisions are applied (a megabyte of decompressed changegroup is 0.1-0.5 s of work).
 */
const TURN_MS = 10;

/** A payload read whole (phase-heads, bookmarks, obsmarkers), bounded. */
const SMALL_PART_LIMIT = 64 << 20;

export interface ChangegroupProgress {
  tracker: ProgressTracker;
  /** bytes of the source consumed so far (the tracker's byte count) */
  sourceOffset: () => number;
}

function emitPhase(ctx: JobContext, progress: ChangegroupProgress | undefined, phase: JobPhase): void {
  progress?.tracker.flush();
  ctx.phase(phase);
}

/** Adds one changegroup (cgN stream positioned at its changelog group) through `session`. */
export async function addChangegroup(
  session: RepoWriteSession,
  cg: ChangegroupReader,
  ctx: JobContext,
  progress?: ChangegroupProgress,
): Promise<ChangegroupCounts> {
  const counts: ChangegroupCounts = { changesets: 0, manifests: 0, files: 0, revisions: 0 };
  let nextTurn = performance.now() + TURN_MS;
  const tick = async (): Promise<void> => {
    if (progress) {
      const at = progress.sourceOffset();
      progress.tracker.addBytes(at - progress.tracker.bytes);
    }
    if (performance.now() >= nextTurn) {
      await new Promise((resolve) => setImmediate(resolve));
      nextTurn = performance.now() + TURN_MS;
    }
  };
  const cl = session.changelog();
  // what the manifests name against what the file groups carry (hg's server.validate)
  const needed = new NeededFiles();
  emitPhase(ctx, progress, 'changesets');
  ctx.log('debug', 'adding changesets');
  const clStart = cl.length;
  await cg.readGroup(async (d) => {
    ctx.throwIfCancelled();
    const { rev, added } = await cl.add({ ...d, linkRev: cl.length });
    if (added) {
      // onchangelog: the entry must parse (hg reads its file list here)
      needed.changeset(parseChangelogEntry(await cl.text(rev)));
    }
    await tick();
  });
  counts.changesets = cl.length - clStart;
  // the changelog's texts are not read again (linkrevs need its nodes only)
  cl.releaseTexts();

  const linkRev = (w: RevlogWriter, d: DeltaChunk): number => {
    const r = cl.rev(d.linkNode);
    if (r === undefined || r < 0)
      throw new SluiceError(
        'REVLOG',
        `${w.radix}: linkrev of ${hex12(d.node)} names unknown changeset ${hex12(d.linkNode)}`,
        {
          revlog: w.radix,
          problem: 'link-out-of-range',
        },
      );
    return r;
  };
  const addGroup = async (
    w: RevlogWriter,
    add = (r: IncomingRevision) => w.add(r),
  ): Promise<{ received: number; added: number }> => {
    const before = w.addedCount;
    const received = await cg.readGroup(async (d) => {
      ctx.throwIfCancelled();
      await add({ ...d, linkRev: linkRev(w, d) });
      await tick();
    });
    return { received, added: w.addedCount - before };
  };

  emitPhase(ctx, progress, 'manifests');
  ctx.log('debug', 'adding manifests');
  const manifestWriters = new Set<RevlogWriter>();
  const addManifests = (dir: string): Promise<{ received: number; added: number }> => {
    const w = session.manifest(dir);
    manifestWriters.add(w);
    return addGroup(w, (r) => needed.addManifest(w, dir, r));
  };
  counts.manifests += (await addManifests('')).added;
  if (cg.version === '03') {
    for (;;) {
      const dir = await cg.nextName();
      if (dir === null) break;
      ctx.log('debug', `adding ${dir} revisions`);
      const g = await addManifests(dir);
      if (g.received === 0) throw new SluiceError('MALFORMED', 'received dir revlog group is empty');
      counts.manifests += g.added;
    }
  }

  // the manifests' texts are not read again either: not held through the file groups
  for (const w of manifestWriters) w.releaseTexts();

  emitPhase(ctx, progress, 'files');
  ctx.log('debug', 'adding file changes');
  for (;;) {
    const name = await cg.nextName();
    if (name === null) break;
    counts.files++;
    const fl = session.filelog(name);
    try {
      const g = await addGroup(fl);
      if (g.received === 0) throw new SluiceError('MALFORMED', 'received file revlog group is empty');
      counts.revisions += g.added;
      needed.fileGroup(name, fl, g.added);
    } catch (e) {
      fl.abandon(); // the transaction rolls back: its queued bytes need not be written
      throw e;
    }
    session.closeFilelog(fl);
    progress?.tracker.fileDone('s', `data/${name}.i`, 0);
  }
  needed.finish(session);
  return counts;
}

function hex12(n: Uint8Array): string {
  return Buffer.from(n).toString('hex').slice(0, 12);
}

/** Reads a part's payload whole, at most `limit` bytes. */
export async function readSmallPayload(part: Bundle2Part, limit = SMALL_PART_LIMIT): Promise<Buffer> {
  const pieces: Buffer[] = [];
  let n = 0;
  for (;;) {
    const p = await part.payload.readSome(1 << 20);
    if (!p) break;
    n += p.length;
    if (n > limit) throw limitError(`${part.type} part of`, `> ${limit} bytes`, limit);
    pieces.push(Buffer.from(p));
  }
  return Buffer.concat(pieces, n);
}

export interface Bundle2ApplyOptions {
  /** bookmarks part: 'apply' writes them (hg unbundle), 'records' returns them (hg pull). Default 'apply'. */
  bookmarks?: 'apply' | 'records';
  /**
   * obsmarkers part: 'merge' into .hg/store/obsstore (the repository may create markers), else
   * the obsstore is read-only: an advisory part is skipped, a mandatory one refused
   */
  obsmarkers?: 'merge' | 'ignore';
}

export interface Bundle2ApplyOutcome extends ChangegroupCounts {
  changegroups: number;
  /** the bookmarks part's content ([name, hex or null]), whatever the mode */
  bookmarks: [string, string | null][];
  /** the phase-heads part's content ([phase, hex]) */
  phaseHeads: [number, string][];
  /** obsmarkers part payloads received (not applied) */
  obsmarkerBytes: number;
}

/** bundle2.processbundle for the parts a bundle file or a pull reply carries. */
export async function applyBundle2Parts(
  session: RepoWriteSession,
  bundle: Bundle2Reader,
  ctx: JobContext,
  opts: Bundle2ApplyOptions = {},
  progress?: ChangegroupProgress,
): Promise<Bundle2ApplyOutcome> {
  const out: Bundle2ApplyOutcome = {
    changesets: 0,
    manifests: 0,
    files: 0,
    revisions: 0,
    changegroups: 0,
    bookmarks: [],
    phaseHeads: [],
    obsmarkerBytes: 0,
  };
  for (;;) {
    const part = await bundle.nextPart();
    if (!part) break;
    switch (part.type) {
      case 'changegroup': {
        const version = changegroupVersion(part.params.get('version'));
        const target = part.params.get('targetphase');
        if (target !== undefined) {
          // public, draft or secret: archived and internal need requirements Sluice does not
          // support (hg: ProgrammingError), any other number makes a phaseroots hg cannot read
          if (!/^[012]$/.test(target))
            throw new SluiceError('MALFORMED', `bad targetphase ${JSON.stringify(target)}`);
          session.setTargetPhase(Number(target));
        }
        const c = await addChangegroup(session, new ChangegroupReader(part.payload, version), ctx, progress);
        out.changegroups++;
        out.changesets += c.changesets;
        out.manifests += c.manifests;
        out.files += c.files;
        out.revisions += c.revisions;
        break;
      }
      case 'phase-heads': {
        const heads = decodePhaseHeads(await readSmallPayload(part));
        for (const [p] of heads)
          if (!ALL_PHASES.includes(p))
            throw new SluiceError('MALFORMED', `unknown phase ${p} in phase-heads`);
        session.addPhaseHeads(heads.map(([p, h]) => [p, Buffer.from(h, 'hex')]));
        out.phaseHeads.push(...heads);
        break;
      }
      case 'bookmarks': {
        const marks = decodeBinaryBookmarks(await readSmallPayload(part)).map(
          ([name, hex]) => [name, /^0{40}$/.test(hex) ? null : hex] as [string, string | null],
        );
        for (const [name] of marks) {
          if (!name || /[\n\r\0]/.test(name))
            throw new SluiceError('MALFORMED', `invalid bookmark name ${JSON.stringify(name)}`);
        }
        out.bookmarks.push(...marks);
        if ((opts.bookmarks ?? 'apply') === 'apply') session.setBookmarks(new Map(marks));
        break;
      }
      case 'obsmarkers': {
        const data = await readSmallPayload(part);
        out.obsmarkerBytes += data.length;
        if (opts.obsmarkers === 'merge') {
          // bundle2.handleobsmarker → obsstore.mergemarkers
          const added = session.addObsmarkers(data);
          if (added) ctx.log('info', `${added} new obsolescence markers`);
        } else if (part.mandatory) {
          // bundle2.handleobsmarker merges a mandatory part whatever the config, and the
          // read-only obsstore's add aborts the transaction (hg unbundle of `hg bundle`'s
          // OBSMARKERS part into a repository without evolution: exit 255)
          throw new SluiceError(
            'OBSOLESCENCE_DISABLED',
            'creating obsolete markers is not enabled on this repo',
            {
              hint: "the bundle's obsolescence markers are mandatory: enable experimental.evolution (createmarkers) in the repository to apply it",
            },
          );
        } else {
          // an advisory part: hg without evolution enabled ignores it too
          ctx.log('debug', 'ignoring obsolescence markers, feature not enabled');
        }
        break;
      }
      case 'hgtagsfnodes': {
        // mandatory (bundle2.addparttagsfnodescache sends it whenever the sender's cache knows a
        // head's .hgtags filenode): hg's handlehgtagsfnodes fills .hg/cache/hgtagsfnodes1 with
        // it; that cache is computed on demand by any hg that lacks an entry, so it is read and
        // dropped (bounded), not written
        const data = await readSmallPayload(part);
        ctx.log('debug', `ignoring ${Math.floor(data.length / 40)} received .hgtags fnodes cache entries`);
        break;
      }
      case 'stream2':
        throw new SluiceError(
          'BAD_MAGIC',
          'this is a stream clone bundle: it holds a whole store and can only make a new repository, not add to an existing one',
        );
      default:
        // listkeys and check:* parts concern pushes and wire pulls; nothing to apply here
        break;
    }
  }
  return out;
}
