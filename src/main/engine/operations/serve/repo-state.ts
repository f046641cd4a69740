// What `sluice serve` knows about the repository it serves, re-read whenever the files change
// (hg serve re-opens the repo per request too): changelog graph, phases, bookmarks, requirements,
// the few config knobs hg serve honours. Everything the wire commands answer comes from here, in
// the "served" view: secret (and archived/internal) changesets are invisible, and so are the
// hidden ones (obsolete by a marker and not pinned, repoview.computehidden), as hg serve hides
// them whenever the obsstore holds markers, evolution enabled or not.

import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { SluiceError } from '../../errors';
import {
  STREAM_FIXED_REQUIREMENTS,
  bookmarksPath,
  locateRepository,
  unknownFeaturesError,
  unsupportedRequirements,
  type RepoLocation,
} from '../../store/requirements';
import { readRepoConfig } from '../../store/hgrc';
import { STATE_FILE_MAX, readStateFile } from '../../repo/state-file';
import { DIRSTATE_PARENTS_BYTES, parseDirstateParents } from '../../working-copy/dirstate-parents';
import { obsolescenceEnabled, readObsstoreV1, type ObsMarker } from '../../repo/obsstore';
import {
  ChangelogGraph,
  PHASE_DRAFT,
  PHASE_PUBLIC,
  PHASE_SECRET,
  computePhases,
  hexNode,
  parsePhaseRoots,
} from '../../repo/changelog-graph';

/** A state file of lines (phaseroots, bookmarks, localtags); null when missing. */
const readLinesFile = (path: string): Promise<Buffer | null> =>
  readStateFile(path, { max: STATE_FILE_MAX.lines });

function lines(buf: Buffer | null): string[] {
  return buf
    ? buf
        .toString('latin1')
        .split('\n')
        .filter((l) => l.length > 0)
    : [];
}

export interface ServeSettings {
  /** server.uncompressed (default true): stream clones at all */
  uncompressed: boolean;
  /** server.bundle2.stream (default true): v2 through getbundle */
  bundle2Stream: boolean;
  /** server.preferuncompressed: advertise stream-preferred */
  preferUncompressed: boolean;
  /** server.uncompressedallowsecret */
  allowSecret: boolean;
  publishing: boolean;
  /** obsolete.isenabled(repo, exchangeopt): markers are offered to pulls (bundle2 `obsmarkers`) */
  obsExchange: boolean;
  /** web.allow-pull (alias allowpull, default true) */
  allowPull: boolean;
  /** web.deny_read and web.allow_read (unset: undefined) */
  denyRead: string[] | undefined;
  allowRead: string[] | undefined;
}

export interface SettingsOverrides {
  uncompressed?: boolean;
  bundle2Stream?: boolean;
  preferUncompressed?: boolean;
  publishing?: boolean;
}

/** One consistent view of the repository (valid until one of its files changes). */
export class RepoSnapshot {
  readonly phases: Uint8Array;
  readonly hasSecret: boolean;
  private headsCache: number[] | null = null;
  /** revs in node order (revOfPrefix), made on the first prefix lookup */
  private byNode: Int32Array | null = null;
  /** repoview.computehidden: 1 for a hidden rev; null when none is */
  readonly hidden: Uint8Array | null;

  constructor(
    readonly root: string,
    readonly storeDir: string,
    readonly graph: ChangelogGraph,
    readonly phaseRoots: Map<number, string[]>,
    readonly bookmarks: [string, string][],
    readonly requirements: Set<string>,
    readonly settings: ServeSettings,
    /**
     * The obsstore's format version (its first byte) when it holds markers (hg: an obsstore is
     * truthy when larger than its 1-byte header), else null.
     */
    readonly obsstoreVersion: number | null,
    /** the obsstore's markers, and the nodes (hex) that keep an obsolete changeset visible */
    readonly obsolescence: { markers: ObsMarker[]; pinned: string[] } = { markers: [], pinned: [] },
  ) {
    this.phases = computePhases(graph, phaseRoots);
    this.hasSecret = (phaseRoots.get(PHASE_SECRET)?.length ?? 0) > 0;
    this.hidden = computeHidden(graph, this.phases, obsolescence.markers, obsolescence.pinned);
  }

  visible(rev: number): boolean {
    return this.phases[rev]! < PHASE_SECRET && !this.hidden?.[rev];
  }

  /**
   * hgweb's checkauthz for a request without a user (sluice serve authenticates nobody): why the
   * request is refused with 401, or null. `pull` is every wire command; pages only need `read`.
   * Any deny_read list refuses, an allow_read list other than `*` refuses, then allow-pull.
   */
  accessProblem(op: 'read' | 'pull'): string | null {
    const { denyRead, allowRead, allowPull } = this.settings;
    if (denyRead?.length) return 'read not authorized';
    if (allowRead?.length && !(allowRead.length === 1 && allowRead[0] === '*')) return 'read not authorized';
    if (op === 'pull' && !allowPull) return 'pull not authorized';
    return null;
  }

  /**
   * streamclone.allowservergeneration. Obsolescence markers do not forbid it: v1 streams without
   * them (as hg does) and v2 carries them when the client can take them (see the getbundle reply).
   */
  get streamAllowed(): boolean {
    if (!this.settings.uncompressed) return false;
    return !(this.hasSecret && !this.settings.allowSecret);
  }

  /** streamclone.streamed_requirements */
  get streamRequirements(): string[] {
    return [...this.requirements].filter((r) => STREAM_FIXED_REQUIREMENTS.has(r)).sort();
  }

  /** repo.heads() of the served view: rev descending */
  headRevs(): number[] {
    this.headsCache ??= this.graph.headRevs((r) => this.visible(r)).reverse();
    return this.headsCache;
  }

  revOfHex(hex: string): number | undefined {
    const r = this.graph.rev(Buffer.from(hex, 'hex').toString('latin1'));
    return r !== undefined && this.visible(r) ? r : undefined;
  }

  /**
   * The visible rev whose node starts with the hex digits `prefix` (1-39 of them, lower case);
   * undefined when none or several do (revlog's _partialmatch on the served view). A binary
   * search in the revs sorted by node, sorted once per snapshot: a batch may hold thousands of
   * lookups, and a walk of the whole history for each made one request cost lookups × changesets.
   */
  revOfPrefix(prefix: string): number | undefined {
    const nodes = this.graph.nodes;
    const sorted = (this.byNode ??= Int32Array.from(nodes.keys()).sort((a, b) =>
      nodes[a]! < nodes[b]! ? -1 : 1,
    ));
    // nodes are 20-byte latin1 strings: whole bytes of the prefix, then its odd last digit (a high nibble)
    const whole = Buffer.from(prefix.slice(0, prefix.length & ~1), 'hex').toString('latin1');
    const half = prefix.length & 1 ? parseInt(prefix[prefix.length - 1]!, 16) : -1;
    const from = half >= 0 ? whole + String.fromCharCode(half << 4) : whole;
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (nodes[sorted[mid]!]! < from) lo = mid + 1;
      else hi = mid;
    }
    let found: number | undefined;
    for (let i = lo; i < sorted.length; i++) {
      const r = sorted[i]!;
      const n = nodes[r]!;
      if (!n.startsWith(whole) || (half >= 0 && n.charCodeAt(whole.length) >> 4 !== half)) break;
      if (!this.visible(r)) continue;
      if (found !== undefined) return undefined;
      found = r;
    }
    return found;
  }

  hex(rev: number): string {
    return hexNode(this.graph.nodes[rev]!);
  }

  /** bookmarks.listbinbookmarks: known nodes, no divergent (`name@x`) marks */
  servedBookmarks(): [string, string][] {
    return this.bookmarks.filter(([name, hex]) => {
      if (name.includes('@') && !name.endsWith('@')) return false;
      return this.revOfHex(hex) !== undefined;
    });
  }

  /**
   * phases.listphases: the recorded draft roots whose changeset is still draft at most (a
   * publishing repository lists its local draft roots too), then `publishing True`.
   */
  listPhases(): [string, string][] {
    const out: [string, string][] = [];
    for (const hex of new Set(this.phaseRoots.get(PHASE_DRAFT) ?? [])) {
      const r = this.graph.rev(Buffer.from(hex, 'hex').toString('latin1'));
      if (r !== undefined && this.phases[r]! <= PHASE_DRAFT) out.push([hex, String(PHASE_DRAFT)]);
    }
    if (this.settings.publishing) out.push(['publishing', 'True']);
    return out;
  }

  /**
   * exchange._getbundlephasespart: heads by phase; for draft heads, the public heads inside
   * `only(draftheads, publicheads)` too. Publishing: everything public.
   */
  phaseHeads(headRevs: number[]): Map<number, number[]> {
    const byPhase = new Map<number, Set<number>>([
      [PHASE_PUBLIC, new Set()],
      [PHASE_DRAFT, new Set()],
    ]);
    if (this.settings.publishing) {
      for (const r of headRevs) byPhase.get(PHASE_PUBLIC)!.add(r);
    } else {
      for (const r of headRevs)
        byPhase.get(this.phases[r] === PHASE_PUBLIC ? PHASE_PUBLIC : PHASE_DRAFT)!.add(r);
      const draft = [...byPhase.get(PHASE_DRAFT)!];
      if (draft.length) {
        const pub = [...byPhase.get(PHASE_PUBLIC)!];
        const inDraft = this.graph.ancestors(draft);
        const inPublic = this.graph.ancestors(pub);
        // heads(only(draft, public) and public())
        const g = this.graph;
        const candidate = (r: number): boolean =>
          inDraft[r] === 1 && inPublic[r] !== 1 && this.phases[r] === PHASE_PUBLIC;
        const hasChild = new Uint8Array(g.length);
        for (let r = 0; r < g.length; r++) {
          if (!candidate(r)) continue;
          if (g.p1[r]! >= 0) hasChild[g.p1[r]!] = 1;
          if (g.p2[r]! >= 0) hasChild[g.p2[r]!] = 1;
        }
        for (let r = 0; r < g.length; r++)
          if (candidate(r) && !hasChild[r]) byPhase.get(PHASE_PUBLIC)!.add(r);
      }
    }
    // phasemapping = {phase: sorted(heads)}: sorted by binary node
    const nodes = this.graph.nodes;
    const byNode = (a: number, b: number): number =>
      nodes[a]! < nodes[b]! ? -1 : nodes[a]! > nodes[b]! ? 1 : 0;
    return new Map([...byPhase].map(([p, revs]) => [p, [...revs].sort(byNode)]));
  }
}

/**
 * repoview.computehidden: the obsolete changesets (not public, the predecessor of a marker:
 * obsolete._computeobsoleteset), less the pinned ones (working copy parents, bookmarks, local
 * tags: repoview.pinnedrevs; an unresolved merge state's sides are not read), less the ancestors
 * of a visible mutable changeset (_revealancestors). Null when nothing is hidden.
 */
function computeHidden(
  graph: ChangelogGraph,
  phases: Uint8Array,
  markers: readonly ObsMarker[],
  pinned: readonly string[],
): Uint8Array | null {
  if (!markers.length) return null;
  const precs = new Set(markers.map((m) => m.prec));
  const hidden = new Uint8Array(graph.length);
  for (let r = 0; r < graph.length; r++)
    if (phases[r] !== PHASE_PUBLIC && precs.has(graph.nodes[r]!)) hidden[r] = 1;
  if (!hidden.includes(1)) return null;
  for (const hex of pinned) {
    const r = graph.rev(Buffer.from(hex, 'hex').toString('latin1'));
    if (r !== undefined) hidden[r] = 0;
  }
  // children come after their parents: from the tip down, each visible mutable changeset (or one
  // revealed by a descendant) reveals its hidden parents; archived/internal ones are hideable too
  for (let r = graph.length - 1; r >= 0; r--) {
    if (hidden[r] || phases[r] === PHASE_PUBLIC || phases[r]! > PHASE_SECRET) continue;
    for (const p of [graph.p1[r]!, graph.p2[r]!]) if (p >= 0) hidden[p] = 0;
  }
  return hidden.includes(1) ? hidden : null;
}

interface Stamp {
  key: string;
}

async function stampOf(paths: string[]): Promise<Stamp> {
  const parts = await Promise.all(
    paths.map(async (p) => {
      const st = await stat(p).catch(() => null);
      return st ? `${st.size}:${st.mtimeMs}:${st.ino}` : '-';
    }),
  );
  return { key: parts.join('|') };
}

/** Loads snapshots of one repository and reuses the last one while its files are unchanged. */
export class ServedRepo {
  private last: { stamp: string; snap: RepoSnapshot } | null = null;
  private loading: Promise<RepoSnapshot> | null = null;
  /**
   * where the last load found the repository's files: requires and sharedpath are among the
   * watched files, so a change of location changes the stamp and the next load finds it again
   */
  private loc: RepoLocation | null = null;

  constructor(
    readonly root: string,
    private readonly overrides: SettingsOverrides = {},
  ) {}

  /** the files a snapshot is made of (a share's store and shared bookmarks are its source's) */
  private watched(loc: RepoLocation): string[] {
    const hg = join(this.root, '.hg');
    const store = loc.storeDir;
    return [
      join(hg, 'requires'),
      join(hg, 'hgrc'),
      join(hg, 'sharedpath'),
      join(hg, 'shared'),
      // what pins an obsolete changeset: the working copy's parents, local tags, bookmarks
      join(hg, 'dirstate'),
      join(hg, 'localtags'),
      bookmarksPath(loc),
      join(store, 'requires'),
      join(store, '00changelog.i'),
      join(store, 'phaseroots'),
      join(store, 'obsstore'),
    ];
  }

  async snapshot(): Promise<RepoSnapshot> {
    // no requires/sharedpath reads per request: the last load's location names the files to stat
    const stamp = (await stampOf(this.watched(this.loc ?? (await locateRepository(this.root))))).key;
    if (this.last && this.last.stamp === stamp) return this.last.snap;
    if (this.loading) return this.loading;
    this.loading = this.load()
      .then((snap) => {
        this.last = { stamp, snap };
        return snap;
      })
      .finally(() => {
        this.loading = null;
      });
    return this.loading;
  }

  private async load(): Promise<RepoSnapshot> {
    const loc = await locateRepository(this.root);
    this.loc = loc;
    const requirements = loc.requirements;
    if (!requirements.has('store')) {
      throw new SluiceError(
        'UNSUPPORTED_REQUIREMENTS',
        `${this.root}: repositories without the store layout (requirement 'store', hg < 0.9.2 or format.usestore=false) cannot be served by Sluice`,
        { unsupported: ['store'] },
      );
    }
    // localrepo.ensurerequirementsrecognized: hg serve without an extension (lfs, largefiles) or a
    // format (changelog-v2, narrow) refuses to open the repository; serving its revlogs as if they
    // were plain would hand out pointers and standins as file contents
    // (bookmarksinstore only moves the bookmarks file, which readBookmarks follows)
    const unknown = unsupportedRequirements(requirements).filter((r) => r !== 'bookmarksinstore');
    if (unknown.length) throw unknownFeaturesError(unknown);
    const hgrc = await readRepoConfig(this.root);
    const o = this.overrides;
    const settings: ServeSettings = {
      uncompressed: o.uncompressed ?? hgrc.getBool('server', 'uncompressed', true),
      bundle2Stream: o.bundle2Stream ?? hgrc.getBool('server', 'bundle2.stream', true),
      preferUncompressed: o.preferUncompressed ?? hgrc.getBool('server', 'preferuncompressed', false),
      allowSecret: hgrc.getBool('server', 'uncompressedallowsecret', false),
      publishing: o.publishing ?? hgrc.getBool('phases', 'publish', true),
      obsExchange: await obsolescenceEnabled(this.root, 'exchange'),
      allowPull:
        hgrc.get('web', 'allow-pull') !== undefined
          ? hgrc.getBool('web', 'allow-pull', true)
          : hgrc.getBool('web', 'allowpull', true),
      denyRead: hgrc.getList('web', 'deny_read'),
      allowRead: hgrc.getList('web', 'allow_read'),
    };
    const storeDir = loc.storeDir;
    const graph = await ChangelogGraph.read(storeDir);
    const phaseRoots = parsePhaseRoots(
      (await readLinesFile(join(storeDir, 'phaseroots')))?.toString('latin1') ?? '',
    );
    const bookmarks = await readBookmarks(loc);
    const { obsstoreVersion, markers } = await localMarkers(storeDir);
    return new RepoSnapshot(
      this.root,
      storeDir,
      graph,
      phaseRoots,
      bookmarks,
      requirements,
      settings,
      obsstoreVersion,
      { markers, pinned: markers.length ? await pinnedNodes(loc, bookmarks) : [] },
    );
  }
}

/**
 * What bookmarks.updatefromremote sees of the local repository after a pull: its visible
 * repoview (a hidden changeset is not `in repo`) and bookmarks.validdest (`next` is a valid
 * destination for a bookmark at `old`).
 */
export interface BookmarkView {
  visible(rev: number): boolean;
  validdest(old: number, next: number): boolean;
}

/** A repository without markers: every revision visible, a bookmark moves to a descendant. */
export function plainBookmarkView(graph: ChangelogGraph): BookmarkView {
  return {
    visible: () => true,
    validdest: (old, next) => old !== next && Boolean(graph.ancestors([next])[old]),
  };
}

/** The local obsstore's format and, for format 1, its markers (format 0, hg < 3.3: none are read). */
async function localMarkers(
  storeDir: string,
): Promise<{ obsstoreVersion: number | null; markers: ObsMarker[] }> {
  const obsstore = await readStateFile(join(storeDir, 'obsstore'), { max: STATE_FILE_MAX.large });
  const obsstoreVersion = obsstore && obsstore.length > 1 ? obsstore[0]! : null;
  const markers = obsstoreVersion === 1 ? readObsstoreV1(obsstore!) : [];
  return { obsstoreVersion, markers };
}

/**
 * What a pull's bookmark update sees of the repository at `loc` (its changelog read as `graph`):
 * the visible repoview (repoview.computehidden) and bookmarks.validdest, which with markers takes
 * obsutil.foreground: the descendants of the old changeset and, from its mutable ones, their
 * successors' descendants, to a fixpoint (a bookmark follows its changeset's rewrite).
 */
export async function bookmarkView(
  loc: RepoLocation,
  graph: ChangelogGraph,
  bookmarks: [string, string][],
): Promise<BookmarkView> {
  const { markers } = await localMarkers(loc.storeDir);
  if (!markers.length) return plainBookmarkView(graph);
  const phases = computePhases(
    graph,
    parsePhaseRoots((await readLinesFile(join(loc.storeDir, 'phaseroots')))?.toString('latin1') ?? ''),
  );
  const hidden = computeHidden(graph, phases, markers, await pinnedNodes(loc, bookmarks));
  const successors = new Map<string, string[]>();
  for (const m of markers) {
    const known = successors.get(m.prec);
    if (known) known.push(...m.succs);
    else successors.set(m.prec, [...m.succs]);
  }
  const foreground = (old: number): Uint8Array => {
    const seen = new Uint8Array(graph.length);
    seen[old] = 1;
    for (let grew = true; grew;) {
      grew = false;
      for (let r = old + 1; r < graph.length; r++) {
        const [p1, p2] = [graph.p1[r]!, graph.p2[r]!];
        if (!seen[r] && ((p1 >= 0 && seen[p1]) || (p2 >= 0 && seen[p2]))) seen[r] = 1;
      }
      // obsutil.allsuccessors of the mutable ones, transitively through unknown successors too
      const queue = [...successors.keys()].filter((n) => {
        const r = graph.rev(n);
        return r !== undefined && seen[r] && phases[r] !== PHASE_PUBLIC;
      });
      const visited = new Set(queue);
      while (queue.length) {
        for (const s of successors.get(queue.pop()!) ?? []) {
          if (visited.has(s)) continue;
          visited.add(s);
          queue.push(s);
          const r = graph.rev(s);
          if (r !== undefined && !seen[r]) {
            seen[r] = 1;
            grew = true;
          }
        }
      }
    }
    return seen;
  };
  return {
    visible: (r) => !hidden?.[r],
    validdest: (old, next) => old !== next && Boolean(foreground(old)[next]),
  };
}

/**
 * The hidden revs of the repository at `loc` (its changelog read as `graph`): what hg's `visible`
 * repoview filters out (repoview.computehidden), as hg incoming and outgoing see it. Null when
 * nothing is hidden.
 */
export async function hiddenRevs(loc: RepoLocation, graph: ChangelogGraph): Promise<Uint8Array | null> {
  const { markers } = await localMarkers(loc.storeDir);
  if (!markers.length) return null;
  const phases = computePhases(
    graph,
    parsePhaseRoots((await readLinesFile(join(loc.storeDir, 'phaseroots')))?.toString('latin1') ?? ''),
  );
  return computeHidden(graph, phases, markers, await pinnedNodes(loc, await readBookmarks(loc)));
}

/** bmstore: the repository's bookmarks as [name, hex] (malformed lines skipped, as hg does). */
export async function readBookmarks(loc: RepoLocation): Promise<[string, string][]> {
  const bmPath = bookmarksPath(loc);
  const bookmarks: [string, string][] = [];
  for (const line of lines(await readLinesFile(bmPath))) {
    const l = line.replace(/\r$/, '').trim();
    const sp = l.indexOf(' ');
    if (sp !== 40 || !/^[0-9a-f]{40}$/.test(l.slice(0, 40))) continue;
    bookmarks.push([l.slice(41), l.slice(0, 40)]);
  }
  return bookmarks;
}

/** repoview.pinnedrevs' nodes: the working copy's parents, the bookmarks, the local tags. */
async function pinnedNodes(loc: RepoLocation, bookmarks: [string, string][]): Promise<string[]> {
  const out = bookmarks.map(([, hex]) => hex);
  const ds = await readStateFile(join(loc.hgDir, 'dirstate'), { max: DIRSTATE_PARENTS_BYTES, prefix: true });
  if (ds) {
    const { p1, p2 } = parseDirstateParents(ds, loc.requirements.has('dirstate-v2'));
    for (const p of [p1, p2]) if (p.some((b) => b !== 0)) out.push(p.toString('hex'));
  }
  for (const line of lines(await readLinesFile(join(loc.hgDir, 'localtags')))) {
    const m = /^([0-9a-f]{40}) /.exec(line);
    if (m) out.push(m[1]!);
  }
  return out;
}
