// Shared by the changegroup interop tests: a small source repository made by hg, bundles of every
// type hg writes, tree hashes, and a cg1 stream model (parse → mutate → serialize) for hostile input.
import { createHash } from 'node:crypto';
import {
  cpSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { hgSync } from '../support/env';

export function hg(args: string[], cwd?: string): string {
  const r = hgSync(args, cwd);
  if (r.status !== 0) throw new Error(`hg ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

/**
 * A repository with what a changegroup must carry right: adds, edits, a merge (p2), a copy
 * (filelog metadata), a binary file, names the store encodes (upper case, spaces, `aux`), a file
 * past 128 KiB (split into .i + .d), public and draft changesets and a bookmark.
 */
export function makeSourceRepo(dir: string): string {
  hg(['init', dir]);
  const w = (name: string, data: string | Buffer) => {
    const p = join(dir, name);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, data);
  };
  const commit = (msg: string) => hg(['commit', '-q', '-A', '-m', msg, '-d', '0 0'], dir);
  w('a.txt', 'one\n');
  w('Upper/Case Name.txt', 'upper\n');
  w('aux/con.txt', 'reserved names\n');
  commit('c0');
  w('a.txt', 'one\ntwo\n');
  w('big.txt', bigText(0));
  commit('c1');
  w('bin.dat', Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7919) % 256)));
  hg(['copy', '-q', 'a.txt', 'copied.txt'], dir);
  commit('c2');
  hg(['update', '-q', '1'], dir);
  w('side.txt', 'side branch\n');
  w('big.txt', bigText(1));
  commit('c3 side');
  hg(['merge', '-q', '2'], dir);
  commit('c4 merge');
  w('a.txt', 'one\ntwo\nthree\n');
  commit('c5');
  hg(['bookmark', '-r', '3', 'side-mark'], dir);
  hg(['phase', '--public', '-r', '2'], dir);
  return dir;
}

/** ~330 KiB of lines that compress poorly (the revlog must split past 128 KiB whatever the engine). */
function bigText(variant: number): string {
  let x = 12345;
  const lines: string[] = [];
  for (let i = 0; i < 16000; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    lines.push(`${i} ${x.toString(36)}${(x >>> 3).toString(16)}${variant && i % 97 === 0 ? ' changed' : ''}`);
  }
  return lines.join('\n') + '\n';
}

/** `hg bundle -t SPEC` specs: every type hg 6.3.2 writes, plus cg3 and a phase-heads part. */
export const BUNDLE_SPECS = [
  'bzip2-v1',
  'gzip-v1',
  'none-v1',
  'bzip2-v2',
  'gzip-v2',
  'zstd-v2',
  'none-v2',
  'none-v2;cg.version=03',
  'gzip-v2;phases=true',
] as const;

export function makeBundle(repo: string, spec: string, out: string, revs?: string): string {
  hg(
    [
      '--config',
      'experimental.changegroup3=yes',
      'bundle',
      '-q',
      ...(revs ? ['-r', revs, '--base', 'null'] : ['-a']),
      '-t',
      spec,
      out,
    ],
    repo,
  );
  return out;
}

/** What hg says a repository holds: nodes, phases, bookmarks. */
export function logOf(repo: string): string {
  return hg(['log', '-T', '{node} {phase} {bookmarks}\n'], repo);
}

export function verifyOk(repo: string): { ok: boolean; out: string } {
  const r = hgSync(['verify'], repo);
  return { ok: r.status === 0, out: r.stdout + r.stderr };
}

/** sha256 of every path (files by content, symlinks by target) under dir, but names `skip` matches. */
export function treeHash(dir: string, skip?: RegExp): string {
  const h = createHash('sha256');
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      if (skip?.test(name)) continue;
      const p = join(d, name);
      const st = lstatSync(p);
      const rel = relative(dir, p);
      if (st.isSymbolicLink()) h.update(`L ${rel} ${readlinkSync(p)}\n`);
      else if (st.isDirectory()) {
        h.update(`D ${rel}\n`);
        walk(p);
      } else h.update(`F ${rel} `).update(readFileSync(p)).update('\n');
    }
  };
  walk(dir);
  return h.digest('hex');
}

export function copyRepo(from: string, to: string): string {
  cpSync(from, to, { recursive: true, verbatimSymlinks: true });
  return to;
}

// --- a cg1 stream as data ------------------------------------------------------------------------

export interface Cg1Delta {
  node: Buffer;
  p1: Buffer;
  p2: Buffer;
  linkNode: Buffer;
  delta: Buffer;
}
export interface Cg1 {
  changesets: Cg1Delta[];
  manifests: Cg1Delta[];
  files: { name: string; deltas: Cg1Delta[] }[];
}

/** Parses an HG10UN bundle (hg bundle -t none-v1). */
export function parseHg10un(bytes: Buffer): Cg1 {
  if (bytes.toString('latin1', 0, 6) !== 'HG10UN') throw new Error('not HG10UN');
  let at = 6;
  const chunk = (): Buffer | null => {
    const l = bytes.readInt32BE(at);
    at += 4;
    if (l === 0) return null;
    const c = bytes.subarray(at, at + l - 4);
    at += l - 4;
    return c;
  };
  const group = (): Cg1Delta[] => {
    const out: Cg1Delta[] = [];
    for (let c = chunk(); c; c = chunk()) {
      out.push({
        node: c.subarray(0, 20),
        p1: c.subarray(20, 40),
        p2: c.subarray(40, 60),
        linkNode: c.subarray(60, 80),
        delta: c.subarray(80),
      });
    }
    return out;
  };
  const cg: Cg1 = { changesets: group(), manifests: group(), files: [] };
  for (let name = chunk(); name; name = chunk())
    cg.files.push({ name: name.toString('latin1'), deltas: group() });
  return cg;
}

export function serializeHg10un(cg: Cg1): Buffer {
  const parts: Buffer[] = [Buffer.from('HG10UN', 'latin1')];
  const chunk = (data: Buffer) => {
    const l = Buffer.alloc(4);
    l.writeInt32BE(data.length + 4);
    parts.push(l, data);
  };
  const end = () => parts.push(Buffer.alloc(4));
  const group = (g: Cg1Delta[]) => {
    for (const d of g) chunk(Buffer.concat([d.node, d.p1, d.p2, d.linkNode, d.delta]));
    end();
  };
  group(cg.changesets);
  group(cg.manifests);
  for (const f of cg.files) {
    chunk(Buffer.from(f.name, 'latin1'));
    group(f.deltas);
  }
  end();
  return Buffer.concat(parts);
}

/** A deep copy whose buffers can be mutated freely. */
export function cloneCg(cg: Cg1): Cg1 {
  const d = (x: Cg1Delta): Cg1Delta => ({
    node: Buffer.from(x.node),
    p1: Buffer.from(x.p1),
    p2: Buffer.from(x.p2),
    linkNode: Buffer.from(x.linkNode),
    delta: Buffer.from(x.delta),
  });
  return {
    changesets: cg.changesets.map(d),
    manifests: cg.manifests.map(d),
    files: cg.files.map((f) => ({ name: f.name, deltas: f.deltas.map(d) })),
  };
}
