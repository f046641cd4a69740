// Which certificates an https connection trusts, and the check made once per TLS connection, as
// hg's sslutil does it (_hostsettings, validatesocket): a fingerprint pinned in
// `[hostsecurity] HOST:fingerprints` (or the legacy sha1 `[hostfingerprints] HOST`) is the only
// thing that matters for that host; else `--insecure` skips the check with a warning; else the
// chain must verify against `HOST:verifycertsfile`, or `[web] cacerts`, or the default stores
// (Node's bundled roots plus the system's, which is where hg looks).
//
// An untrusted certificate fails with CERTIFICATE, carrying its subject, issuer and hg-style
// SHA-256 fingerprint, and a hint naming the ways out.

import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import tls from 'node:tls';
import { SluiceError } from '../errors';
import { expandPath } from '../store/hgrc';

/** The part of an hg config the check reads (the user's, then the repository's: later wins). */
export interface ConfigLookup {
  get(section: string, key: string): string | undefined;
}

export interface TlsTrustOptions {
  /** hg --insecure: connect without checking the certificate (a warning per host) */
  insecure?: boolean;
  /** the user's and repository's configuration, in the order hg layers them */
  config?: ConfigLookup[];
  /** --ca-file: extra CA certificates (PEM) trusted beside the default stores */
  caFile?: string;
}

type Alg = 'sha1' | 'sha256' | 'sha512';

export interface HostTrust {
  host: string;
  /** pinned fingerprints: lower-case hex without colons */
  fingerprints: { alg: Alg; hex: string }[];
  /** pinned through [hostfingerprints] (hg warns to move them) */
  legacy: boolean;
  insecure: boolean;
  /** the secure context (CA roots) for a chain check; unused when pinned or insecure */
  context: tls.SecureContext;
}

const MAX_NAME = 200;

function configValue(config: ConfigLookup[], section: string, key: string): string | undefined {
  let v: string | undefined;
  for (const c of config) v = c.get(section, key) ?? v;
  return v;
}

function configList(config: ConfigLookup[], section: string, key: string): string[] {
  return (configValue(config, section, key) ?? '').split(/[,\s]+/).filter(Boolean);
}

let defaultRoots: string[] | undefined;

/** Node's bundled roots and, where Node can read it (22.15+), the system store hg would use. */
export function defaultCaCertificates(): string[] {
  if (!defaultRoots) {
    const get = (tls as { getCACertificates?: (type: string) => string[] }).getCACertificates;
    const system = get ? get('system') : [];
    defaultRoots = [...new Set([...tls.rootCertificates, ...system])];
  }
  return defaultRoots;
}

function readPem(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new SluiceError('USAGE', `cannot read ${what} ${path}: ${(e as Error).message}`);
  }
}

/** sslutil._hostsettings for `host`. */
export function hostTrust(host: string, opts: TlsTrustOptions): HostTrust {
  const config = opts.config ?? [];
  const fingerprints: HostTrust['fingerprints'] = [];
  for (const f of configList(config, 'hostsecurity', `${host}:fingerprints`)) {
    const m = /^(sha1|sha256|sha512):(.*)$/.exec(f);
    if (!m)
      throw new SluiceError('USAGE', `invalid fingerprint for ${host}: ${f.slice(0, MAX_NAME)}`, {
        hint: 'must begin with "sha1:", "sha256:", or "sha512:"',
      });
    fingerprints.push({ alg: m[1] as Alg, hex: m[2]!.replace(/:/g, '').toLowerCase() });
  }
  let legacy = false;
  for (const f of configList(config, 'hostfingerprints', host)) {
    fingerprints.push({ alg: 'sha1', hex: f.replace(/:/g, '').toLowerCase() });
    legacy = true;
  }
  let ca: (string | Buffer)[] = [];
  const pinned = fingerprints.length > 0;
  if (!pinned && !opts.insecure) {
    const perHost = configValue(config, 'hostsecurity', `${host}:verifycertsfile`);
    const web = configValue(config, 'web', 'cacerts');
    if (perHost) {
      const path = expandPath(perHost);
      if (!existsSync(path))
        throw new SluiceError(
          'USAGE',
          `path specified by hostsecurity.${host}:verifycertsfile does not exist: ${path}`,
        );
      ca = [readPem(path, `hostsecurity.${host}:verifycertsfile`)];
    } else if (web) {
      const path = expandPath(web);
      if (!existsSync(path)) throw new SluiceError('USAGE', `could not find web.cacerts: ${path}`);
      ca = [readPem(path, 'web.cacerts')];
    } else ca = [...defaultCaCertificates()];
    if (opts.caFile) ca.push(readPem(opts.caFile, 'CA file'));
  }
  return {
    host,
    fingerprints,
    legacy,
    insecure: !pinned && opts.insecure === true,
    context: tls.createSecureContext(ca.length ? { ca } : {}),
  };
}

/** hg's fmtfingerprint: `sha256:AB:CD:…` (upper case, as openssl and browsers show it). */
export function formatFingerprint(alg: Alg, hex: string): string {
  return `${alg}:${hex.toUpperCase().match(/../g)!.join(':')}`;
}

function digest(alg: Alg, raw: Buffer): string {
  return createHash(alg).update(raw).digest('hex');
}

/** A certificate name as `CN=x, O=y`: printable, bounded (it comes from the server). */
export function formatCertName(name: tls.Certificate | undefined): string {
  if (!name) return '(none)';
  const parts: string[] = [];
  for (const [k, v] of Object.entries(name)) {
    for (const one of Array.isArray(v) ? (v as string[]) : [String(v)])
      parts.push(`${k}=${one.replace(/[^\x20-\x7e\u00a0-\uffff]/g, '?')}`);
  }
  const s = parts.join(', ');
  return s.length > MAX_NAME ? `${s.slice(0, MAX_NAME)}…` : s;
}

/** What a user needs to decide whether to trust a certificate. */
export interface CertificateIdentity {
  host: string;
  subject: string;
  issuer: string;
  /** `sha256:AB:CD:…`, the value `[hostsecurity] HOST:fingerprints` takes */
  fingerprint: string;
}

const VERIFY_REASONS: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: 'self-signed certificate',
  SELF_SIGNED_CERT_IN_CHAIN: 'self-signed certificate in certificate chain',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'unable to get local issuer certificate',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'unable to verify the first certificate',
  CERT_HAS_EXPIRED: 'certificate has expired',
  CERT_NOT_YET_VALID: 'certificate is not yet valid',
};

/**
 * validatesocket: null when the connection may carry requests, else the CERTIFICATE error.
 * `warn` is called for --insecure and for a match found in the legacy section.
 */
export function checkPeer(
  socket: tls.TLSSocket,
  trust: HostTrust,
  warn: (m: string) => void,
): SluiceError | null {
  const { host } = trust;
  const cert = socket.getPeerCertificate(false);
  if (!cert?.raw?.length)
    return new SluiceError('CERTIFICATE', `${host} certificate error: no certificate received`, { host });
  const sha256 = digest('sha256', cert.raw);
  const identity: CertificateIdentity = {
    host,
    subject: formatCertName(cert.subject),
    issuer: formatCertName(cert.issuer),
    fingerprint: formatFingerprint('sha256', sha256),
  };
  if (trust.fingerprints.length) {
    if (trust.fingerprints.some((f) => digest(f.alg, cert.raw) === f.hex)) {
      if (trust.legacy)
        warn(
          `(SHA-1 fingerprint for ${host} found in legacy [hostfingerprints] section; if you trust this fingerprint, remove the old SHA-1 fingerprint from [hostfingerprints] and add the following entry to the new [hostsecurity] section: ${host}:fingerprints=${identity.fingerprint})`,
        );
      return null;
    }
    const shown = trust.legacy
      ? formatFingerprint('sha1', digest('sha1', cert.raw))
      : formatFingerprint(
          trust.fingerprints[trust.fingerprints.length - 1]!.alg,
          digest(trust.fingerprints[trust.fingerprints.length - 1]!.alg, cert.raw),
        );
    return new SluiceError('CERTIFICATE', `certificate for ${host} has unexpected fingerprint ${shown}`, {
      ...identity,
      reason: 'fingerprint',
      hint: `check ${trust.legacy ? 'hostfingerprint' : 'hostsecurity'} configuration`,
    });
  }
  if (trust.insecure) {
    warn(
      `connection security to ${host} is disabled per current settings; communication is susceptible to eavesdropping and tampering`,
    );
    return null;
  }
  if (socket.authorized) return null;
  const code = String(socket.authorizationError ?? 'UNKNOWN');
  const hint = `to trust this certificate (${identity.subject}, issued by ${identity.issuer}), set hostsecurity.${host}:fingerprints=${identity.fingerprint} in your hgrc, add its issuer to the system's CA store, or use --insecure to connect insecurely once`;
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    const names = (cert.subjectaltname ?? identity.subject).slice(0, MAX_NAME);
    return new SluiceError('CERTIFICATE', `${host} certificate error: certificate is for ${names}`, {
      ...identity,
      reason: 'hostname',
      hint,
    });
  }
  const reason = VERIFY_REASONS[code] ?? code.toLowerCase().replace(/_/g, ' ');
  return new SluiceError(
    'CERTIFICATE',
    `error: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: ${reason}`,
    { ...identity, reason: code, hint },
  );
}
