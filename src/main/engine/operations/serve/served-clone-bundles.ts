// The clone bundles a server advertises (the `clonebundles` command and capability): the
// repository's `.hg/clonebundles.manifest` or a manifest given as is, plus bundle files the HTTP
// server serves itself under /.sluice/bundles/<n>/<name> (their manifest lines need the URL the
// client reached the server by, so they exist only over HTTP).

import { lstat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { inspectBundle } from '../apply/inspect';
import { quote } from '../../protocol/wire-encoding';
import { readRegularFileOrNull } from '../../store/walk';

export interface CloneBundleFile {
  path: string;
  /** BUNDLESPEC; default: derived from the file (none-packed1;requirements=… / none-v2;stream=v2;…) */
  spec?: string;
}

export interface ServedBundleFile {
  /** URL path on the HTTP server */
  route: string;
  path: string;
  spec: string;
}

/** exchange.getbundlespec of the file: the BUNDLESPEC a manifest line announces */
export function specFor(info: Awaited<ReturnType<typeof inspectBundle>>): string {
  const reqs = `requirements%3D${quote(info.requirements.join(','), '')}`;
  if (info.type === 'packed1') return `none-packed1;${reqs}`;
  const comp =
    info.compression === 'UN'
      ? 'none'
      : info.compression === 'ZS'
        ? 'zstd'
        : info.compression === 'GZ'
          ? 'gzip'
          : 'bzip2';
  // a changegroup bundle (hg bundle): no stream=v2, whose clients would apply it as a stream
  if (info.type === 'changegroup') {
    if (info.container === 'bundle1') return `${comp}-v1`;
    return info.changegroupVersion === '03' ? `${comp}-v2;cg.version=03` : `${comp}-v2`;
  }
  return `${comp}-v2;stream=v2;${reqs}`;
}

export class ServedCloneBundles {
  private constructor(
    private readonly repo: string,
    /** a manifest advertised as is (undefined: the repository's own) */
    private readonly manifest: string | undefined,
    readonly files: ServedBundleFile[],
  ) {}

  static async create(
    repo: string,
    opts: { manifest?: string; files?: CloneBundleFile[] } = {},
  ): Promise<ServedCloneBundles> {
    const files: ServedBundleFile[] = [];
    for (const [i, f] of (opts.files ?? []).entries()) {
      const spec = f.spec ?? specFor(await inspectBundle(f.path));
      files.push({
        route: `/.sluice/bundles/${i}/${encodeURIComponent(basename(f.path))}`,
        path: f.path,
        spec,
      });
    }
    return new ServedCloneBundles(repo, opts.manifest, files);
  }

  /** The manifest text; `baseUrl` (the URL the client used) prefixes the served files' routes. */
  async manifestText(baseUrl?: string): Promise<string> {
    let text = this.manifest ?? '';
    if (this.manifest === undefined) {
      // a link is not followed: the repository's owner could have any file the server reads sent
      text = (
        (await readRegularFileOrNull(join(this.repo, '.hg', 'clonebundles.manifest')).catch(() => null)) ??
        Buffer.alloc(0)
      ).toString('latin1');
    }
    const own =
      baseUrl === undefined
        ? ''
        : this.files.map((b) => `${baseUrl.replace(/\/$/, '')}${b.route} BUNDLESPEC=${b.spec}\n`).join('');
    return text + (text && !text.endsWith('\n') && own ? '\n' : '') + own;
  }

  /** whether to advertise the `clonebundles` capability */
  async advertised(withFiles: boolean): Promise<boolean> {
    if ((withFiles && this.files.length) || this.manifest) return true;
    if (this.manifest !== undefined) return false;
    return !!(await lstat(join(this.repo, '.hg', 'clonebundles.manifest')).catch(() => null))?.isFile();
  }
}
