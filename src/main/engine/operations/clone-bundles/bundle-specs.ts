// The bundle specs `auto-generate.formats` names (bundlecaches.parsebundlespec, strict=False, then
// as_spec): `<compression>-v2` is a changegroup bundle (cg02 in bundle2), `<compression>-v2;stream=v2`
// a stream v2 bundle, `none-packed1` a packed1 stream bundle. Sluice writes none, gzip and zstd.

import { SluiceError } from '../../errors';
import type { BundleCompression } from '../../../../shared/jobs';

export interface AutoBundleSpec {
  /** the normalized spec, as hg's as_spec() writes it (the state file's bundle type) */
  name: string;
  kind: 'changegroup' | 'stream-v2' | 'packed1';
  compression: BundleCompression;
}

const COMPRESSIONS: ReadonlySet<string> = new Set(['none', 'gzip', 'zstd']);
const MAX_SPEC = 200;

export function parseAutoBundleSpec(raw: string): AutoBundleSpec {
  const spec = raw.trim();
  if (spec.length > MAX_SPEC)
    throw new SluiceError('LIMIT', `bundle spec longer than ${MAX_SPEC} characters`);
  const [head, ...params] = spec.split(';');
  const dash = head!.indexOf('-');
  // strict=False: a lone version means hg's default compression (bzip2), a lone compression v2
  const compression =
    dash < 0 ? (head === 'v2' || head === 'packed1' ? 'bzip2' : head!) : head!.slice(0, dash);
  const version = dash < 0 ? (head === 'v2' || head === 'packed1' ? head : 'v2') : head!.slice(dash + 1);
  const stream = params.length === 1 && params[0] === 'stream=v2';
  if (params.length && !stream)
    throw new SluiceError(
      'USAGE',
      `unsupported bundle spec ${JSON.stringify(spec)} (parameters other than stream=v2)`,
    );
  if (version === 'packed1') {
    if (compression !== 'none')
      throw new SluiceError(
        'USAGE',
        `packed1 bundles are uncompressed: use none-packed1, not ${JSON.stringify(spec)}`,
      );
    return { name: 'none-packed1', kind: 'packed1', compression: 'none' };
  }
  if (version !== 'v2')
    throw new SluiceError(
      'USAGE',
      `unsupported bundle spec ${JSON.stringify(spec)} (Sluice writes v2 and packed1)`,
    );
  if (!COMPRESSIONS.has(compression))
    throw new SluiceError(
      'UNSUPPORTED_COMPRESSION',
      `bundle spec ${JSON.stringify(spec)}: Sluice compresses bundles with none, gzip or zstd`,
    );
  const comp = compression as BundleCompression;
  return stream
    ? { name: `${comp}-v2;stream=v2`, kind: 'stream-v2', compression: comp }
    : { name: `${comp}-v2`, kind: 'changegroup', compression: comp };
}
