// Path helpers for the renderer, which has no node:path. The host tells us its platform (app:info);
// Windows paths use backslashes, everything else forward slashes.

export function pathSeparator(platform: string | undefined): '/' | '\\' {
  return platform === 'win32' ? '\\' : '/';
}

export function joinPath(dir: string, name: string, platform?: string): string {
  const sep = pathSeparator(platform);
  const trimmed = dir.replace(/[\\/]+$/, '');
  return trimmed === '' ? `${sep}${name}` : `${trimmed}${sep}${name}`;
}

export function baseName(p: string): string {
  const parts = p.split(/[\\/]/).filter(Boolean);
  return parts[parts.length - 1] ?? p;
}

export function dirName(p: string): string {
  const i = Math.max(p.lastIndexOf('/'), p.lastIndexOf('\\'));
  return i <= 0 ? p.slice(0, i + 1) : p.slice(0, i);
}

/** An absolute path on any desktop platform: /x, C:\\x or C:/x, \\\\server\\share. */
export function isAbsolutePath(p: string): boolean {
  return /^(\/|[A-Za-z]:[\\/]|\\\\)/.test(p);
}

/** The folder name hg would choose for a clone of `url` (hg.defaultdest: last path segment). */
export function repoNameFromUrl(url: string): string {
  if (isAbsolutePath(url)) return sanitizeFolderName(baseName(url).replace(/\.hg$/i, '')) || 'repository';
  try {
    const u = new URL(url);
    const segs = u.pathname.split('/').filter(Boolean);
    const last = segs[segs.length - 1];
    const name = last ? decodeURIComponent(last) : u.hostname;
    return sanitizeFolderName(name.replace(/\.hg$/i, '')) || 'repository';
  } catch {
    return 'repository';
  }
}

/**
 * Name for the repository created from a bundle file: the file name without its bundle extensions
 * (`stream.packed` → `stream`, `repo.hg.zst` → `repo`); a name that is only an extension
 * (`.hg`) takes its folder's name.
 */
export function repoNameFromBundle(bundlePath: string): string {
  let base = baseName(bundlePath);
  const ext = /\.(hg|hg10|hg20|bundle|bundle2|bin|hgs1|packed|packed1|stream|gz|bz2|zst|zstd)$/i;
  while (ext.test(base)) base = base.replace(ext, '');
  const name = sanitizeFolderName(base);
  if (name) return name;
  return sanitizeFolderName(baseName(dirName(bundlePath))) || 'repository';
}

function sanitizeFolderName(name: string): string {
  // control characters are invalid in folder names
  // eslint-disable-next-line no-control-regex
  const invalid = /[<>:"|?*\u0000-\u001f]/g;
  return name.replace(invalid, '_').replace(/^\.+/, '').trim();
}

/** `base`, `base-2`, `base-3`… the first not in `taken`. */
export function uniquePath(base: string, taken: ReadonlySet<string>): string {
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) {
    const candidate = `${base}-${i}`;
    if (!taken.has(candidate)) return candidate;
  }
}
