// inspectBundle: what a bundle's header says, without applying it (the app's drop dialog,
// `sluice inspect`). `unsupported` uses the same list applyStream refuses with.

import type { BundleInfo } from '../../../shared/jobs';
import { inspectBundleFile } from '../format/bundle-file';
import { unsupportedRequirements } from '../store/requirements';

export async function inspectBundle(path: string): Promise<BundleInfo> {
  const info = await inspectBundleFile(path);
  return { ...info, unsupported: unsupportedRequirements(info.requirements) };
}
