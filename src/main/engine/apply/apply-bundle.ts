// applyBundleFile: a stream clone bundle file (packed1 `HGS1` or stream v2 `HG20` + stream2) into
// a new repository. hg needs two commands for this (`hg init && hg debugapplystreamclonebundle F`
// for packed1, `hg init && hg unbundle F` for v2); Sluice sniffs the header and does both alike,
// including writing the requirements for packed1 (which hg does not, see applyStream).

import { resolve } from 'node:path';
import { openStreamBundleFile } from '../format/bundle-file';
import type { JobContext } from '../job/job-context';
import { applyStream, type ApplyStats, type ApplyStreamOptions } from './apply-stream';

export async function applyBundleFile(
  bundlePath: string,
  dest: string,
  opts: ApplyStreamOptions,
  ctx: JobContext,
): Promise<ApplyStats> {
  ctx.throwIfCancelled();
  const reader = await openStreamBundleFile(bundlePath);
  return applyStream(reader, dest, { label: resolve(bundlePath), ...opts }, ctx);
}
