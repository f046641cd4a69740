// Writes one auto-generated clone bundle of the repository's immutable view (hg 6.5's
// clonebundles uses repo.filtered('immutable'): public changesets only) with the engine's own
// writers: streamclone/generate.ts for stream specs, emitChangegroup + Bundle2Writer for
// `<compression>-v2` (cg02 in bundle2, as `hg bundle -a -t <compression>-v2`).

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { SluiceError } from '../../errors';
import { computeOutgoing, emitChangegroup } from '../../changegroup/emit';
import { Bundle2Writer } from '../../format/bundle2';
import { hexNode, PHASE_PUBLIC } from '../../repo/changelog-graph';
import { writeFileAtomically, writeStreamBundle } from '../../streamclone/generate';
import { inspectBundle } from '../apply/inspect';
import type { RepoSnapshot } from '../serve/repo-state';
import { specFor } from '../serve/served-clone-bundles';
import type { AutoBundleSpec } from './bundle-specs';

/** What the bundle holds: the public, visible changesets (hg's `immutable` view). */
export interface ImmutableView {
  revs: number;
  /** the newest such changeset, -1 when there is none */
  tipRev: number;
  tipNode: string;
  heads: number[];
}

export function immutableView(snap: RepoSnapshot): ImmutableView {
  const immutable = (r: number): boolean => snap.phases[r] === PHASE_PUBLIC && snap.visible(r);
  let revs = 0;
  let tipRev = -1;
  for (let r = 0; r < snap.graph.length; r++)
    if (immutable(r)) {
      revs++;
      tipRev = r;
    }
  return {
    revs,
    tipRev,
    tipNode: tipRev < 0 ? '0'.repeat(40) : hexNode(snap.graph.nodes[tipRev]!),
    heads: snap.graph.headRevs(immutable),
  };
}

export interface WrittenBundle {
  /** the BUNDLESPEC of the manifest line (stream specs carry the requirements) */
  manifestSpec: string;
  size: number;
  /** lower-case hex sha256 of the file */
  sha256: string;
}

const COMPRESSION_KEYS = { none: 'UN', gzip: 'GZ', zstd: 'ZS' } as const;

export async function writeAutoBundle(
  snap: RepoSnapshot,
  view: ImmutableView,
  spec: AutoBundleSpec,
  out: string,
  signal?: AbortSignal,
): Promise<WrittenBundle> {
  if (spec.kind === 'changegroup') await writeChangegroupBundle(snap, view, spec, out, signal);
  else {
    // streamclone.allowservergeneration: a stream would hand out the secret changesets
    if (!snap.streamAllowed)
      throw new SluiceError(
        'NO_STREAM',
        `${spec.name}: the repository allows no stream clone (server.uncompressed, or secret changesets)`,
      );
    await writeStreamBundle(snap.root, out, {
      type: spec.kind === 'packed1' ? 'packed1' : 'v2',
      compression: spec.compression,
      publishing: snap.settings.publishing,
      ...(signal ? { signal } : {}),
    });
  }
  const [info, digest] = await Promise.all([inspectBundle(out), sha256Of(out)]);
  return { manifestSpec: specFor(info), size: digest.size, sha256: digest.hex };
}

async function writeChangegroupBundle(
  snap: RepoSnapshot,
  view: ImmutableView,
  spec: AutoBundleSpec,
  out: string,
  signal?: AbortSignal,
): Promise<void> {
  // changegroup.supportedoutgoingversions: a tree-manifest repository needs cg3 directory parts
  if (snap.requirements.has('treemanifest'))
    throw new SluiceError(
      'USAGE',
      `${spec.name}: Sluice writes no changegroup of a tree-manifest repository; use a stream spec`,
    );
  const outgoing = computeOutgoing(snap.graph, [], view.heads);
  const writer = new Bundle2Writer({ compression: COMPRESSION_KEYS[spec.compression] });
  writer.addPart({
    type: 'changegroup',
    mandatoryParams: [['version', '02']],
    advisoryParams: [['nbchanges', String(outgoing.missing.length)]],
    data: emitChangegroup({ storeDir: snap.storeDir, requirements: snap.requirements }, outgoing, {
      version: '02',
      // makestream's fastpathlinkrev: when every changeset is sent, linkrevs choose the file revisions
      fastPathLinkrev: view.revs === snap.graph.length,
      ...(signal ? { signal } : {}),
    }),
  });
  await writeFileAtomically(out, writer.chunks(), signal);
}

async function sha256Of(path: string): Promise<{ hex: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { hex: hash.digest('hex'), size };
}
