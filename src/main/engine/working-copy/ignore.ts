// The working copy's ignore matcher, as dirstate._ignore builds it: match.py's includematcher over
// `include:` of `.hgignore` and every `[ui] ignore` / `ignore.*` file, with readpatternfile's
// syntaxes (regexp, glob, rootglob, include, subinclude), _globre and _regex producing hg's Python
// regexes, which python-regex.ts turns into JavaScript ones. Paths are latin1 byte strings.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative } from 'node:path';
import { SluiceError } from '../errors';
import { leadingPythonFlags, pythonRegexToJs, UntranslatableRegex } from './python-regex';

/** A pattern with its kind (match.py's kindpats) and the pattern file it came from. */
export interface KindPattern {
  kind: string;
  pat: string;
  source: string;
}

export type PathPredicate = (path: string) => boolean;
export type Warn = (message: string) => void;

/** readpatternfile's `syntax:` names and the prefixes they give a line. */
const SYNTAXES: ReadonlyArray<[string, string]> = [
  ['re', 'relre:'],
  ['regexp', 'relre:'],
  ['glob', 'relglob:'],
  ['rootglob', 'rootglob:'],
  ['include', 'include'],
  ['subinclude', 'subinclude'],
];
const ALL_KINDS = new Set([
  're',
  'glob',
  'path',
  'relglob',
  'relpath',
  'relre',
  'rootglob',
  'listfile',
  'listfile0',
  'set',
  'include',
  'subinclude',
  'rootfilesin',
]);
/** a pattern file larger than this is refused (hg reads any size; a hostile repository could make one huge) */
const MAX_PATTERN_FILE = 16 << 20;

/** match.readpatternfile: the file's lines as `kind:pattern` strings (comments, blanks dropped). */
export function parsePatternFile(text: string, filePath: string, warn: Warn): string[] {
  let syntax = 'relre:';
  const patterns: string[] = [];
  for (const raw of text.split(/(?<=\n)/)) {
    let line = raw;
    if (line.includes('#')) {
      const m = /((?:^|[^\\])(?:\\\\)*)#.*/.exec(line);
      if (m) line = line.slice(0, m.index + m[1]!.length);
      line = line.replaceAll('\\#', '#');
    }
    line = line.replace(/[ \t\n\r\v\f]+$/, '');
    if (!line) continue;
    if (line.startsWith('syntax:')) {
      const s = line.slice(7).replace(/^[ \t\n\r\v\f]+|[ \t\n\r\v\f]+$/g, '');
      const found = SYNTAXES.find(([name]) => name === s);
      if (found) syntax = found[1];
      else warn(`${filePath}: ignoring invalid syntax '${s}'\n`);
      continue;
    }
    let lineSyntax = syntax;
    for (const [name, prefix] of SYNTAXES) {
      if (line.startsWith(prefix)) {
        lineSyntax = prefix;
        line = line.slice(prefix.length);
        break;
      } else if (line.startsWith(name + ':')) {
        lineSyntax = prefix;
        line = line.slice(name.length + 1);
        break;
      }
    }
    patterns.push(lineSyntax + line);
  }
  return patterns;
}

/** match._patsplit */
export function splitPattern(pattern: string, defaultKind: string): { kind: string; pat: string } {
  const colon = pattern.indexOf(':');
  if (colon >= 0 && ALL_KINDS.has(pattern.slice(0, colon)))
    return { kind: pattern.slice(0, colon), pat: pattern.slice(colon + 1) };
  return { kind: defaultKind, pat: pattern };
}

/** Python's posixpath.normpath (Node's keeps a trailing slash and reads '' differently). */
export function pythonNormpath(path: string): string {
  if (path === '') return '.';
  const initial = path.startsWith('//') && !path.startsWith('///') ? '//' : path.startsWith('/') ? '/' : '';
  const parts: string[] = [];
  for (const comp of path.split('/')) {
    if (comp === '' || comp === '.') continue;
    if (comp !== '..' || (!initial && parts.length === 0) || parts[parts.length - 1] === '..')
      parts.push(comp);
    else if (parts.length) parts.pop();
  }
  return initial + parts.join('/') || '.';
}

const RE_SPECIAL = new Set('()[]{}?*+-|^$\\.&~# \t\n\r\v\f');
/** stringutil.reescape with regexbytesescapemap */
function reEscape(s: string): string {
  let out = '';
  for (const c of s) out += RE_SPECIAL.has(c) ? '\\' + c : c;
  return out;
}

/** match._globre: an extended glob as a Python regex. */
export function globRe(pat: string): string {
  let i = 0;
  const n = pat.length;
  let res = '';
  let group = 0;
  while (i < n) {
    const c = pat[i++]!;
    if (!'*?[{},\\'.includes(c)) res += reEscape(c);
    else if (c === '*') {
      if (pat[i] === '*') {
        i++;
        if (pat[i] === '/') {
          i++;
          res += '(?:.*/)?';
        } else res += '.*';
      } else res += '[^/]*';
    } else if (c === '?') res += '.';
    else if (c === '[') {
      let j = i;
      if (j < n && '!]'.includes(pat[j]!)) j++;
      while (j < n && pat[j] !== ']') j++;
      if (j >= n) res += '\\[';
      else {
        let stuff = pat.slice(i, j).replaceAll('\\', '\\\\');
        i = j + 1;
        if (stuff.startsWith('!')) stuff = '^' + stuff.slice(1);
        else if (stuff.startsWith('^')) stuff = '\\' + stuff;
        res += `[${stuff}]`;
      }
    } else if (c === '{') {
      group++;
      res += '(?:';
    } else if (c === '}' && group) {
      res += ')';
      group--;
    } else if (c === ',' && group) res += '|';
    else if (c === '\\') {
      if (i < n) res += reEscape(pat[i++]!);
      else res += reEscape(c);
    } else res += reEscape(c);
  }
  return res;
}

/** match._regex for the kinds a pattern file yields: the Python regex and its leading flags. */
export function patternRegex(
  kind: string,
  pat: string,
  globSuffix: string,
): { regex: string; flags: string } {
  if (kind === 'relre') {
    const { flags, rest } = leadingPythonFlags(pat);
    return { regex: rest.startsWith('^') ? rest : '.*' + rest, flags };
  }
  if (kind === 're') return { regex: pat, flags: '' };
  if (kind === 'relglob') {
    const g = globRe(pat);
    if (g.startsWith('[^/]*')) return { regex: '.*' + g.slice(5) + globSuffix, flags: '' };
    return { regex: '(?:|.*/)' + g + globSuffix, flags: '' };
  }
  if (kind === 'rootglob' || kind === 'glob') {
    if (!pat && kind === 'glob') return { regex: '', flags: '' };
    return { regex: globRe(pat) + globSuffix, flags: '' };
  }
  if (kind === 'path' || kind === 'relpath') {
    if (!pat || pat === '.') return { regex: '', flags: '' };
    return { regex: reEscape(pat) + '(?:/|$)', flags: '' };
  }
  if (kind === 'rootfilesin') {
    const escaped = pat === '.' ? '' : reEscape(pat) + '/';
    return { regex: escaped + '[^/]+$', flags: '' };
  }
  throw new SluiceError('USAGE', `pattern kind '${kind}' is not supported in ignore files`);
}

/** _donormalize for patterns read from `include:` files under matcher root `root`. */
function normalizePatterns(patterns: string[], root: string, warn: Warn, depth: number): KindPattern[] {
  const out: KindPattern[] = [];
  for (const p of patterns) {
    const { kind, pat } = splitPattern(p, 'glob');
    if (kind === 'include') {
      if (depth > 32) throw new SluiceError('LIMIT', `${pat}: include: nested too deeply`);
      const full = isAbsolute(pat) ? pat : join(root, pat);
      let text: string;
      try {
        text = readPatternText(full);
      } catch (e) {
        if (e instanceof SluiceError) throw e;
        warn(`skipping unreadable pattern file '${pat}': ${strerror(e)}\n`);
        continue;
      }
      for (const k of normalizePatterns(parsePatternFile(text, full, warn), root, warn, depth + 1))
        out.push({ ...k, source: k.source || pat });
    } else if (kind === 'relglob' || kind === 'rootglob' || kind === 'path' || kind === 'rootfilesin')
      out.push({ kind, pat: pythonNormpath(pat), source: '' });
    else out.push({ kind, pat, source: '' });
  }
  return out;
}

function readPatternText(path: string): string {
  const data = readFileSync(path);
  if (data.length > MAX_PATTERN_FILE)
    throw new SluiceError('LIMIT', `${path}: pattern file larger than ${MAX_PATTERN_FILE} bytes`);
  return data.toString('latin1');
}

/** The message Python's IOError.strerror carries for a failed open. */
export function strerror(e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'No such file or directory';
  if (code === 'EACCES') return 'Permission denied';
  if (code === 'EISDIR') return 'Is a directory';
  if (code === 'ENOTDIR') return 'Not a directory';
  return (e as Error).message;
}

/**
 * match.match(root, '', [], ['include:F' for F in files]): true for a path the patterns match, or
 * any of whose parent directories they match (globs end in `(?:/|$)`).
 */
export function includeMatcher(root: string, files: readonly string[], warn: Warn, depth = 0): PathPredicate {
  const kindpats = normalizePatterns(
    files.map((f) => 'include:' + f),
    root,
    warn,
    depth,
  );
  return buildMatch(kindpats, root, warn, depth);
}

/** match._buildmatch with the `(?:/|$)` glob suffix of includematcher. */
function buildMatch(kindpats: KindPattern[], root: string, warn: Warn, depth: number): PathPredicate {
  const funcs: PathPredicate[] = [];
  const subs = kindpats.filter((k) => k.kind === 'subinclude');
  const rest = kindpats.filter((k) => k.kind !== 'subinclude');
  if (subs.length) funcs.push(subincludeMatcher(subs, root, warn, depth));
  if (rest.length) funcs.push(regexMatcher(rest));
  if (funcs.length === 0) return () => false;
  if (funcs.length === 1) return funcs[0]!;
  return (f) => funcs.some((m) => m(f));
}

/** match._expandsubinclude: each subinclude is a matcher rooted at its file's directory. */
function subincludeMatcher(subs: KindPattern[], root: string, warn: Warn, depth: number): PathPredicate {
  if (depth > 32) throw new SluiceError('LIMIT', 'subinclude: nested too deeply');
  const entries = subs.map((k) => {
    const sourceRoot = dirname(pythonNormpath(k.source));
    const path = pythonNormpath(join(sourceRoot, k.pat));
    const newRoot = dirname(path);
    const rel = relative(root, newRoot);
    if (rel.startsWith('..') || isAbsolute(rel))
      throw new SluiceError('UNSAFE_PATH', `${k.source}: subinclude ${k.pat} is outside the repository`);
    let matcher: PathPredicate | undefined;
    return {
      prefix: rel ? rel + '/' : '',
      match: (f: string) => (matcher ??= includeMatcher(newRoot, [path], warn, depth + 1))(f),
    };
  });
  return (f) => entries.some((e) => f.startsWith(e.prefix) && e.match(f.slice(e.prefix.length)));
}

/** match._buildregexmatch: one anchored RegExp for the flagless patterns, one per flagged pattern. */
function regexMatcher(kindpats: KindPattern[]): PathPredicate {
  const plain: string[] = [];
  const flagged: RegExp[] = [];
  for (const k of kindpats) {
    const { regex, flags } = patternRegex(k.kind, k.pat, '(?:/|$)');
    let js: string;
    try {
      js = pythonRegexToJs(regex);
      new RegExp(js, flags);
    } catch (e) {
      const where = k.source ? `${k.source}: ` : '';
      if (e instanceof UntranslatableRegex)
        throw new SluiceError(
          'USAGE',
          `${where}pattern (${k.kind}): ${k.pat}: sluice cannot translate it (${e.message})`,
        );
      throw new SluiceError('USAGE', `${where}invalid pattern (${k.kind}): ${k.pat}`);
    }
    if (flags) flagged.push(new RegExp(`^(?:${js})`, flags));
    else plain.push(js);
  }
  let joined: RegExp | undefined;
  if (plain.length) {
    try {
      joined = new RegExp(`^(?:${plain.join('|')})`);
    } catch {
      throw new SluiceError('USAGE', 'invalid pattern'); // each alone compiles: hg says the same
    }
  }
  if (!flagged.length) return (f) => joined!.test(f);
  return (f) => (joined?.test(f) ?? false) || flagged.some((r) => r.test(f));
}

/** os.path.expanduser(os.path.expandvars(path)), as util.expandpath. */
export function expandPath(path: string, env: NodeJS.ProcessEnv): string {
  const vars = path.replace(/\$(\w+|\{[^}]*\})/g, (whole, name: string) => {
    const key = name.startsWith('{') ? name.slice(1, -1) : name;
    return env[key] ?? whole;
  });
  if (!vars.startsWith('~')) return vars;
  const slash = vars.indexOf('/');
  const user = vars.slice(1, slash < 0 ? undefined : slash);
  if (user !== '' || env.HOME === undefined) return vars; // ~user: left as it is
  return env.HOME.replace(/\/+$/, '') + (slash < 0 ? '' : vars.slice(slash)) || '/';
}

/**
 * dirstate._ignorefiles and _ignore: `.hgignore` when it exists, then each `[ui] ignore` and
 * `ignore.NAME` file (relative to the root); null when there are none (nothing is ignored).
 */
export function repoIgnoreMatcher(
  root: string,
  uiItems: ReadonlyArray<[string, string]>,
  warn: Warn,
  env: NodeJS.ProcessEnv = process.env,
): PathPredicate | null {
  const files: string[] = [];
  const hgignore = `${root}/.hgignore`;
  if (existsSync(hgignore)) files.push(hgignore);
  for (const [name, value] of uiItems)
    if (name === 'ignore' || name.startsWith('ignore.')) {
      const path = expandPath(value, env);
      files.push(isAbsolute(path) ? path : `${root}/${path}`); // os.path.join: no normalising
    }
  return files.length ? includeMatcher(root, files, warn) : null;
}
