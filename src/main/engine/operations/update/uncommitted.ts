// merge.update's refusal to update over uncommitted changes, from what `hg status` finds (the
// status operation: dirstate.status, then the content check of the entries in doubt), naming the
// files as hg status prints them, at most UNCOMMITTED_LISTED of them.
import { SluiceError } from '../../errors';
import { displayPath } from '../../working-copy/path-auditor';
import type { Warn } from '../../working-copy/ignore';
import { workingCopyStatus } from '../status/status';

/** How many changed files the refusal names; the rest are counted. */
export const UNCOMMITTED_LISTED = 20;

/** A changed file as hg status prints it: its letter (M, A, R, !) and its path. */
export interface UncommittedFile {
  status: 'M' | 'A' | 'R' | '!';
  path: string;
}

/**
 * Throws USAGE naming the working copy's changes, in hg status's order, when it has any. The
 * update holds the wlock, so status writes no fixed-up entries back: the dirstate stays as it was.
 */
export async function refuseUncommitted(
  root: string,
  opts: { warn: Warn; signal?: AbortSignal; parentManifestText?: Uint8Array },
): Promise<void> {
  const s = await workingCopyStatus(root, {
    ...(opts.parentManifestText && { parentManifestText: opts.parentManifestText }),
    listUnknown: false,
    listIgnored: false,
    listClean: false,
    warn: opts.warn,
    ...(opts.signal && { signal: opts.signal }),
  });
  const files: UncommittedFile[] = [
    ...s.modified.map((path) => ({ status: 'M' as const, path })),
    ...s.added.map((path) => ({ status: 'A' as const, path })),
    ...s.removed.map((path) => ({ status: 'R' as const, path })),
    ...s.deleted.map((path) => ({ status: '!' as const, path })),
  ];
  if (files.length > 0) throw uncommittedChanges(files);
}

/**
 * `uncommitted changes in N files (M a.txt, ! b.txt, and 3 more); commit or revert them first`:
 * one line whatever the count, the first UNCOMMITTED_LISTED named.
 */
export function uncommittedChanges(files: readonly UncommittedFile[]): SluiceError {
  const listed = files.slice(0, UNCOMMITTED_LISTED).map((f) => ({ ...f, path: displayPath(f.path) }));
  const more = files.length - listed.length;
  const names =
    listed.map((f) => `${f.status} ${f.path}`).join(', ') + (more > 0 ? `, and ${more} more` : '');
  const count = `${files.length} file${files.length === 1 ? '' : 's'}`;
  return new SluiceError('USAGE', `uncommitted changes in ${count} (${names}); commit or revert them first`, {
    files: listed,
    count: files.length,
  });
}
