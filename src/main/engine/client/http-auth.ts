// HTTP authentication for the wire client: what hg gets from urllib's HTTPBasicAuthHandler and
// HTTPDigestAuthHandler (url.py installs both). A server may offer several challenges (in one
// WWW-Authenticate value or several headers, which node joins); Sluice answers Digest whenever it
// is offered, since it never sends the password (urllib answers Digest only when it comes first). Digest follows RFC 7616 (and 2617): MD5, SHA-256, SHA-512-256 and their -sess variants,
// plus urllib's `SHA` (SHA-1); qop `auth` or none (auth-int protects bodies and nobody deploys it).

import { createHash, randomBytes } from 'node:crypto';

export interface Credentials {
  user: string;
  password: string;
}

export interface Challenge {
  /** lower case: `basic`, `digest`, … */
  scheme: string;
  /** auth-param names in lower case; values unquoted */
  params: Map<string, string>;
}

/**
 * Parses a WWW-Authenticate value (RFC 7235 §4.1): a comma-separated list of challenges, each a
 * scheme followed by auth-params (`name=token` or `name="quoted \"string\""`) or a token68.
 * Lenient about whitespace; never throws (unparseable tails are dropped).
 */
export function parseChallenges(header: string): Challenge[] {
  const out: Challenge[] = [];
  let i = 0;
  const n = header.length;
  const skipWs = (): void => {
    while (i < n && (header[i] === ' ' || header[i] === '\t')) i++;
  };
  const token = (): string => {
    const start = i;
    while (i < n && !/[\s,="]/.test(header[i]!)) i++;
    return header.slice(start, i);
  };
  while (i < n) {
    skipWs();
    if (header[i] === ',') {
      i++;
      continue;
    }
    const scheme = token();
    if (!scheme) break;
    const challenge: Challenge = { scheme: scheme.toLowerCase(), params: new Map() };
    out.push(challenge);
    // auth-params until the next `scheme ` (a token not followed by `=`)
    for (;;) {
      skipWs();
      while (header[i] === ',') {
        i++;
        skipWs();
      }
      if (i >= n) break;
      const save = i;
      const name = token();
      skipWs();
      if (!name || header[i] !== '=') {
        i = save; // the next challenge's scheme (or a token68, which no scheme here uses)
        if (!name) i++;
        break;
      }
      i++; // '='
      skipWs();
      let value = '';
      if (header[i] === '"') {
        i++;
        while (i < n && header[i] !== '"') {
          if (header[i] === '\\' && i + 1 < n) i++;
          value += header[i++];
        }
        i++; // closing quote
      } else {
        value = token();
        while (header[i] === '=') value += header[i++]; // token68-style padding
      }
      challenge.params.set(name.toLowerCase(), value);
    }
  }
  return out;
}

/** The challenge Sluice answers: Digest with a supported algorithm and qop, else Basic, else null. */
export function chooseChallenge(challenges: readonly Challenge[]): Challenge | null {
  const digest = challenges.find(
    (c) => c.scheme === 'digest' && c.params.has('nonce') && hashOf(c) !== null && qopOf(c) !== null,
  );
  return digest ?? challenges.find((c) => c.scheme === 'basic') ?? null;
}

export function basicAuthorization(c: Credentials): string {
  return 'Basic ' + Buffer.from(`${c.user}:${c.password}`, 'utf8').toString('base64');
}

type Hash = (s: string) => string;

const HASHES: Record<string, string> = {
  md5: 'md5',
  sha: 'sha1', // urllib's name
  'sha-256': 'sha256',
  'sha-512-256': 'sha512-256',
};

function hashOf(c: Challenge): { hash: Hash; sess: boolean; name: string } | null {
  const name = c.params.get('algorithm') ?? 'MD5';
  const lower = name.toLowerCase();
  const sess = lower.endsWith('-sess');
  const algo = HASHES[sess ? lower.slice(0, -5) : lower];
  if (!algo) return null;
  return { hash: (s) => createHash(algo).update(s, 'utf8').digest('hex'), sess, name };
}

/** 'auth' when offered, '' for a pre-RFC-2617 challenge without qop, null when only auth-int. */
function qopOf(c: Challenge): 'auth' | '' | null {
  const qop = c.params.get('qop');
  if (qop === undefined) return '';
  return qop
    .split(',')
    .map((q) => q.trim().toLowerCase())
    .includes('auth')
    ? 'auth'
    : null;
}

/**
 * Digest answers for one origin: the challenge (nonce, realm, opaque…) and the nonce count, so
 * later requests authenticate without another 401 round trip while the server keeps the nonce.
 */
export class DigestSession {
  private nc = 0;

  constructor(
    private readonly challenge: Challenge,
    private readonly creds: Credentials,
    /** tests: a fixed client nonce */
    private readonly cnonce: () => string = () => randomBytes(16).toString('hex'),
  ) {}

  get realm(): string {
    return this.challenge.params.get('realm') ?? '';
  }

  /** The Authorization header for `method` on `uri` (the request target: path and query). */
  authorization(method: string, uri: string): string {
    const c = this.challenge.params;
    const { hash: H, sess, name } = hashOf(this.challenge)!;
    const qop = qopOf(this.challenge)!;
    const realm = c.get('realm') ?? '';
    const nonce = c.get('nonce') ?? '';
    const nc = (++this.nc).toString(16).padStart(8, '0');
    const cnonce = this.cnonce();
    let ha1 = H(`${this.creds.user}:${realm}:${this.creds.password}`);
    if (sess) ha1 = H(`${ha1}:${nonce}:${cnonce}`);
    const ha2 = H(`${method}:${uri}`);
    const response = qop ? H(`${ha1}:${nonce}:${nc}:${cnonce}:${qop}:${ha2}`) : H(`${ha1}:${nonce}:${ha2}`);
    const fields: [string, string, boolean][] = [
      ['username', this.creds.user, true],
      ['realm', realm, true],
      ['nonce', nonce, true],
      ['uri', uri, true],
      ['response', response, true],
      ['algorithm', name, false],
    ];
    const opaque = c.get('opaque');
    if (opaque !== undefined) fields.push(['opaque', opaque, true]);
    if (qop) fields.push(['qop', qop, false], ['nc', nc, false], ['cnonce', cnonce, true]);
    return (
      'Digest ' +
      fields
        .map(([k, v, quoted]) => (quoted ? `${k}="${v.replace(/(["\\])/g, '\\$1')}"` : `${k}=${v}`))
        .join(', ')
    );
  }
}

/** A digest challenge that only renews the nonce (`stale=true`): the credentials were right. */
export function isStale(c: Challenge): boolean {
  return c.scheme === 'digest' && (c.params.get('stale') ?? '').toLowerCase() === 'true';
}
