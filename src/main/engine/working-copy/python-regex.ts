// Python `re` patterns (what .hgignore's `syntax: regexp` lines and match.py's generated regexes
// are) as JavaScript RegExp sources, for latin1 byte-string paths. The common differences are
// translated: `\A` `\Z`, `(?P<n>…)` `(?P=n)`, `(?#…)`, bytes-mode `\s`, a `]` first in a class,
// `{,n}`. What has no JavaScript equivalent (scoped flags where the runtime lacks them, atomic
// groups, possessive quantifiers, conditionals) is refused with UntranslatableRegex.

export class UntranslatableRegex extends Error {
  override readonly name = 'UntranslatableRegex';
}

/** Python bytes-mode `\s`: ASCII whitespace only (JavaScript's also takes U+00A0, a latin1 byte). */
const PY_SPACE = '\\t\\n\\v\\f\\r ';

let scopedFlags: boolean | undefined;
/** `(?i:…)` modifiers: V8 has them from Node 23; earlier they are a syntax error. */
function runtimeHasScopedFlags(): boolean {
  if (scopedFlags === undefined) {
    try {
      new RegExp('(?i:a)');
      scopedFlags = true;
    } catch {
      scopedFlags = false;
    }
  }
  return scopedFlags;
}

/** The JavaScript source of Python regex `py`. */
export function pythonRegexToJs(py: string): string {
  let out = '';
  let i = 0;
  const n = py.length;
  while (i < n) {
    const c = py[i]!;
    if (c === '\\') {
      const e = py[i + 1];
      if (e === undefined) throw new UntranslatableRegex('trailing backslash');
      i += 2;
      if (e === 'A') out += '^';
      else if (e === 'Z') out += '$';
      else if (e === 's') out += `[${PY_SPACE}]`;
      else if (e === 'S') out += `[^${PY_SPACE}]`;
      else out += '\\' + e;
    } else if (c === '[') {
      const end = classEnd(py, i);
      out += translateClass(py.slice(i, end));
      i = end;
    } else if (c === '(' && py[i + 1] === '?') {
      const { js, next } = translateGroupStart(py, i);
      out += js;
      i = next;
    } else if (c === '{') {
      const m = /^\{(\d*),(\d*)\}/.exec(py.slice(i));
      if (m && m[1] === '' && m[2] !== '') {
        out += `{0,${m[2]}}`; // Python's {,n}; JavaScript reads it as literal text
        i += m[0].length;
      } else {
        out += c;
        i++;
      }
    } else if ((c === '*' || c === '+' || c === '?' || c === '}') && py[i + 1] === '+') {
      throw new UntranslatableRegex('possessive quantifier');
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Index after the `]` closing the class that starts at `start` (a `]` first is literal, as in Python). */
function classEnd(py: string, start: number): number {
  let j = start + 1;
  if (py[j] === '^') j++;
  if (py[j] === ']') j++;
  while (j < py.length && py[j] !== ']') j += py[j] === '\\' ? 2 : 1;
  if (j >= py.length) throw new UntranslatableRegex('unterminated character set');
  return j + 1;
}

function translateClass(cls: string): string {
  let body = cls.slice(1, -1);
  let out = '[';
  if (body.startsWith('^')) {
    out += '^';
    body = body.slice(1);
  }
  if (body.startsWith(']')) {
    out += '\\]';
    body = body.slice(1);
  }
  for (let k = 0; k < body.length; k++) {
    const ch = body[k]!;
    if (ch === '\\') {
      const e = body[k + 1]!;
      k++;
      out += e === 's' ? PY_SPACE : e === 'S' ? '' : '\\' + e;
      if (e === 'S') throw new UntranslatableRegex('\\S inside a character set');
    } else if (ch === '[') out += '\\[';
    else out += ch;
  }
  return out + ']';
}

function translateGroupStart(py: string, i: number): { js: string; next: number } {
  const rest = py.slice(i + 2);
  if (rest.startsWith('P<')) return { js: '(?<', next: i + 4 };
  const backref = /^P=(\w+)\)/.exec(rest);
  if (backref) return { js: `\\k<${backref[1]}>`, next: i + 2 + backref[0].length };
  if (rest.startsWith('#')) {
    const close = py.indexOf(')', i);
    if (close < 0) throw new UntranslatableRegex('unterminated comment');
    return { js: '', next: close + 1 };
  }
  if (/^(?::|=|!|<=|<!|<\w)/.test(rest)) return { js: '(?', next: i + 2 };
  if (rest.startsWith('>')) throw new UntranslatableRegex('atomic group');
  if (rest.startsWith('(')) throw new UntranslatableRegex('conditional group');
  const flags = /^([aiLmsux]*)(?:-([imsx]+))?(:|\))/.exec(rest);
  if (flags && flags[3] === ':' && runtimeHasScopedFlags() && /^[ims]*$/.test(flags[1]!))
    return { js: py.slice(i, i + 2 + flags[0].length), next: i + 2 + flags[0].length };
  throw new UntranslatableRegex(
    `inline flags ${JSON.stringify(py.slice(i, i + 2 + (flags?.[0].length ?? 1)))}`,
  );
}

/**
 * match.py's FLAG_RE: a relre pattern's leading `(?flags)`. Returns the JavaScript flags and the rest;
 * `a` and `u` change nothing for ASCII-escaped bytes, `L` and `x` are refused.
 */
export function leadingPythonFlags(pat: string): { flags: string; rest: string } {
  const m = /^\(\?([aiLmsux]+)\)([\s\S]*)$/.exec(pat);
  if (!m) return { flags: '', rest: pat };
  let flags = '';
  for (const f of new Set(m[1]!)) {
    if (f === 'i' || f === 'm' || f === 's') flags += f;
    else if (f !== 'a' && f !== 'u') throw new UntranslatableRegex(`inline flag (?${f})`);
  }
  return { flags, rest: m[2]! };
}
