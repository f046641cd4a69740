// inspectBundle: what a bundle's header says, without applying it (the app's drop dialog,
// `sluice inspect`). `unsupported` uses the same list applyStream refuses with. Changegroup
// bundles (plain `hg bundle`) are summarized from their changelog group.

import { stat } from 'node:fs/promises';
import type { BundleInfo } from '../../../../shared/jobs';
import { readAhead } from './apply-stream-bundle';
import { summarizeBundle } from '../../changegroup';
import { statBundleSource } from './apply-changegroup-bundle';
import { SluiceError, toSluiceError } from '../../errors';
import { ByteSource } from '../../format/byte-source';
import { inspectBundleFile } from '../../format/stream-bundle-file';
import { unsupportedRequirements } from '../../store/requirements';

export async function inspectBundle(path: string): Promise<BundleInfo> {
  await statBundleSource(path);
  try {
    const info = await inspectBundleFile(path);
    // uncompressed: the file holds the declared data plus headers, so less on disk is a truncation
    const missing = info.compression === 'UN' ? info.bytes - info.sizeOnDisk : 0;
    return {
      ...info,
      unsupported: unsupportedRequirements(info.requirements),
      ...(missing > 0 && { missingBytes: missing }),
    };
  } catch (e) {
    if (!(e instanceof SluiceError && e.code === 'BAD_MAGIC' && /changegroup bundle/.test(e.message)))
      throw e;
  }
  const size = (
    await stat(path).catch((e: unknown) => {
      throw toSluiceError(e);
    })
  ).size;
  const s = await summarizeBundle(new ByteSource(readAhead(path, 256 * 1024)), { countChangesets: true });
  return {
    path,
    type: 'changegroup',
    container: s.kind === 'bundle1' ? 'bundle1' : 'bundle2',
    compression: s.compression,
    ...(s.cgVersion ? { changegroupVersion: s.cgVersion } : {}),
    ...(s.changesets !== undefined ? { changesets: s.changesets } : {}),
    requirements: [],
    files: 0,
    bytes: 0,
    unsupported: [],
    sizeOnDisk: size,
  };
}
