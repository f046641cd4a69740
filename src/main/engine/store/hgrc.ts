// The part of Mercurial's config reader (config.py: config.parse; ui.configbool; stringutil.parsebool)
// that Sluice needs for a repository's own settings: `[phases] publish`, `[server] uncompressed`,
// `preferuncompressed`, `bundle2.stream`, `uncompressedallowsecret`, `[web]` keys, `[paths]`.
//
// Same grammar as hg: `[section]` lines, `key = value` items, indented continuation lines (joined
// with "\n"), `;`/`#` comments, `%unset key`, `%include path` (relative to the including file, `~`
// and $VARS expanded, a missing file ignored, as hg does). Values are byte strings (latin1 JS
// strings). Only the repository's files are read (.hg/hgrc, .hg/hgrc-not-shared, and the share
// source's hgrc under share-safe): system and user configuration are not, so a caller that must
// honour `--config`-style settings applies them with `set`.

import { readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import { SluiceError } from '../errors.js';
import { locateRepository } from './requirements.js';
import { STATE_FILE_MAX, readStateFileSync } from '../repo/state-file.js';

// Python bytes-regex classes, spelled out: JS's \s also matches U+00A0 (a latin1 byte here) and
// JS's `.` also stops at \r.
const WS = '[ \\t\\n\\r\\f\\v]';
const NWS = '[^ \\t\\n\\r\\f\\v]';
const ANY = '[^\\n]';
const SECTION_RE = /^\[([^[]+)\]/;
const ITEM_RE = new RegExp(`^([^=${WS.slice(1, -1)}][^=]*?)${WS}*=${WS}*(${ANY}*${NWS}|)`);
const CONT_RE = new RegExp(`^${WS}+(${NWS}|${NWS}${ANY}*${NWS})${WS}*$`);
const EMPTY_RE = new RegExp(`^(;|#|${WS}*$)`);
const COMMENT_RE = /^(;|#)/;
const UNSET_RE = new RegExp(`^%unset${WS}+(${NWS}+)`);
const INCLUDE_RE = new RegExp(`^%include${WS}+(${NWS}|${NWS}${ANY}*${NWS})${WS}*$`);

const MAX_INCLUDE_DEPTH = 10;

/** An hgrc or a file it includes (links followed: dotfiles are commonly linked); null when missing. */
const readConfigFile = (path: string): Buffer | null =>
  readStateFileSync(path, { max: STATE_FILE_MAX.config, followLink: true });

/** stringutil._booleans */
const BOOLEANS: ReadonlyMap<string, boolean> = new Map([
  ['1', true],
  ['yes', true],
  ['true', true],
  ['on', true],
  ['always', true],
  ['0', false],
  ['no', false],
  ['false', false],
  ['off', false],
  ['never', false],
]);

/** stringutil.parsebool: true/false, or null when `value` is not a boolean word. */
export function parseBool(value: string): boolean | null {
  return BOOLEANS.get(value.toLowerCase()) ?? null;
}

/** Python's bytes.splitlines(keepends=True). */
function splitLinesKeepEnds(text: string): string[] {
  const lines: string[] = [];
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x0a) {
      lines.push(text.slice(start, i + 1));
      start = i + 1;
    } else if (c === 0x0d) {
      if (text.charCodeAt(i + 1) === 0x0a) i++;
      lines.push(text.slice(start, i + 1));
      start = i + 1;
    }
  }
  if (start < text.length) lines.push(text.slice(start));
  return lines;
}

/** util.expandpath: `~` and environment variables ($VAR, ${VAR}); unknown variables stay as written. */
export function expandPath(path: string): string {
  let p = path.replace(
    /\$(\w+)|\$\{(\w+)\}/g,
    (m, a: string | undefined, b: string | undefined) => process.env[(a ?? b)!] ?? m,
  );
  if (p === '~' || p.startsWith('~/')) p = homedir() + p.slice(1);
  return p;
}

export interface RepoConfig {
  /** The raw value, or undefined when unset. */
  get(section: string, key: string): string | undefined;
  /** ui.configbool: the default when unset; MALFORMED "section.key is not a boolean" otherwise. */
  getBool(section: string, key: string, defaultValue: boolean): boolean;
  /** Comma/whitespace separated items (hg's parselist without its quoting rules); undefined when unset. */
  getList(section: string, key: string): string[] | undefined;
  /** Keys and values of a section, in the order they were first set. */
  items(section: string): Array<[string, string]>;
  /** Overrides a value (like `--config section.key=value`). */
  set(section: string, key: string, value: string): void;
}

export class HgConfig implements RepoConfig {
  private readonly data = new Map<string, Map<string, string>>();

  get(section: string, key: string): string | undefined {
    return this.data.get(section)?.get(key);
  }

  getBool(section: string, key: string, defaultValue: boolean): boolean {
    const value = this.get(section, key);
    if (value === undefined) return defaultValue;
    const b = parseBool(value);
    if (b === null) throw new SluiceError('MALFORMED', `${section}.${key} is not a boolean ('${value}')`);
    return b;
  }

  getList(section: string, key: string): string[] | undefined {
    const value = this.get(section, key);
    if (value === undefined) return undefined;
    return value.split(/[,\s]+/).filter((s) => s.length > 0);
  }

  items(section: string): Array<[string, string]> {
    return [...(this.data.get(section) ?? new Map<string, string>())];
  }

  set(section: string, key: string, value: string): void {
    let s = this.data.get(section);
    if (!s) this.data.set(section, (s = new Map()));
    // hg's sortdict moves a re-set key to the end; keep that so `items` matches `hg config`.
    s.delete(key);
    s.set(key, value);
  }

  private unset(section: string, key: string): void {
    this.data.get(section)?.delete(key);
  }

  /**
   * config.parse over `text` (latin1 string or bytes). `source` names the origin in errors; with
   * `path` set, `%include` lines are followed relative to it (otherwise they are a syntax error,
   * as in hg's parse without an include callback).
   */
  parse(text: string | Uint8Array, source = '<config>', path?: string, depth = 0): this {
    const data =
      typeof text === 'string'
        ? text
        : Buffer.from(text.buffer, text.byteOffset, text.byteLength).toString('latin1');
    let section = '';
    let item: string | null = null;
    let cont = false;
    let lineNo = 0;
    for (let l of splitLinesKeepEnds(data)) {
      lineNo++;
      if (lineNo === 1 && l.startsWith('\xef\xbb\xbf')) l = l.slice(3); // BOM
      if (cont) {
        if (COMMENT_RE.test(l)) continue;
        const m = CONT_RE.exec(l);
        if (m && item !== null) {
          this.set(section, item, (this.get(section, item) ?? '') + '\n' + m[1]);
          continue;
        }
        item = null;
        cont = false;
      }
      const inc = path !== undefined ? INCLUDE_RE.exec(l) : null;
      if (inc) {
        this.include(normalize(join(dirname(path!), expandPath(inc[1]!))), source, lineNo, depth);
        continue;
      }
      if (EMPTY_RE.test(l)) continue;
      const sec = SECTION_RE.exec(l);
      if (sec) {
        section = sec[1]!;
        if (!this.data.has(section)) this.data.set(section, new Map());
        continue;
      }
      const it = ITEM_RE.exec(l);
      if (it) {
        item = it[1]!;
        cont = true;
        this.set(section, item, it[2]!);
        continue;
      }
      const un = UNSET_RE.exec(l);
      if (un) {
        this.unset(section, un[1]!);
        continue;
      }
      const message = l.replace(/[ \t\n\r\f\v]+$/, '');
      throw new SluiceError(
        'MALFORMED',
        `config error at ${source}:${lineNo}: ${l.startsWith(' ') ? 'unexpected leading whitespace: ' : ''}${message}`,
      );
    }
    return this;
  }

  private include(target: string, source: string, lineNo: number, depth: number): void {
    if (depth >= MAX_INCLUDE_DEPTH)
      throw new SluiceError('MALFORMED', `config error at ${source}:${lineNo}: %include nested too deeply`);
    let bytes: Buffer | null;
    try {
      bytes = readConfigFile(target);
    } catch (e) {
      throw new SluiceError(
        'MALFORMED',
        `config error at ${source}:${lineNo}: cannot include ${target} (${(e as Error).message})`,
      );
    }
    if (bytes) this.parse(bytes, target, target, depth + 1);
  }

  /** Reads and parses a file; false when it does not exist (hg ignores a missing hgrc). */
  readFile(path: string): boolean {
    let bytes: Buffer | null;
    try {
      bytes = readConfigFile(path);
    } catch (e) {
      if ((e as SluiceError).details?.errno === 'EISDIR') return false;
      throw e;
    }
    if (!bytes) return false;
    this.parse(bytes, path, path);
    return true;
  }
}

/** Parses config text (no file access: an `%include` line is an error). */
export function parseConfig(text: string | Uint8Array, source?: string): HgConfig {
  return new HgConfig().parse(text, source);
}

/**
 * The repository's configuration as localrepo.loadhgrc reads it: the share source's .hg/hgrc
 * (share-safe shares only), then .hg/hgrc, then .hg/hgrc-not-shared; later values win.
 */
export async function readRepoConfig(
  repoRoot: string,
  opts: { trustedOnly?: boolean } = {},
): Promise<HgConfig> {
  const loc = await locateRepository(repoRoot);
  const config = new HgConfig();
  const read = (path: string): void => {
    if (!opts.trustedOnly || isTrusted(path)) config.readFile(path);
  };
  if (loc.requirements.has('share-safe') && loc.storeOwnerHgDir !== loc.hgDir)
    read(join(loc.storeOwnerHgDir, 'hgrc'));
  read(join(loc.hgDir, 'hgrc'));
  read(join(loc.hgDir, 'hgrc-not-shared'));
  return config;
}

/**
 * ui._trusted without [trusted] settings: a file the current user owns (util.isowner). Where
 * there are no uids (Windows), every file is, as in hg.
 */
function isTrusted(path: string): boolean {
  const uid = process.getuid?.();
  if (uid === undefined) return true;
  const st = statSync(path, { throwIfNoEntry: false });
  return st === undefined || st.uid === uid;
}

/**
 * The user's and system configuration as hg reads it (rcutil.rccomponents): `[ui] ssh`, `remotecmd`, `experimental.evolution`: $HGRCPATH when
 * set (files, or directories of *.rc), else /etc/mercurial/hgrc(.d), the XDG and home hgrc.
 */
export function readUserConfig(env: NodeJS.ProcessEnv = process.env): HgConfig {
  const config = new HgConfig();
  // rcutil.rccomponents: a directory contributes its *.rc files in name order; missing ones are skipped
  const readDirOrFile = (p: string): void => {
    if (!p) return;
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st) return;
    if (st.isDirectory()) {
      for (const name of readdirSync(p)
        .filter((n) => n.endsWith('.rc'))
        .sort())
        config.readFile(join(p, name));
    } else config.readFile(p);
  };
  if (env.HGRCPATH !== undefined) {
    for (const p of env.HGRCPATH.split(process.platform === 'win32' ? ';' : ':')) readDirOrFile(p);
    return config;
  }
  readDirOrFile('/etc/mercurial/hgrc');
  readDirOrFile('/etc/mercurial/hgrc.d');
  const home = env.HOME ?? homedir();
  readDirOrFile(join(env.XDG_CONFIG_HOME ?? join(home, '.config'), 'hg', 'hgrc'));
  readDirOrFile(join(home, '.hgrc'));
  return config;
}
