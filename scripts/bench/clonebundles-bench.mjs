// Clone bundles benchmark (not a test): automatic clone bundles made by `sluice bundles refresh`,
// published to a real S3-compatible server (s3rver on 127.0.0.1, the "CDN"), in one run:
//   1. generation: `sluice bundles refresh` per format vs `hg bundle` / `hg debugcreatestreamclonebundle`
//   2. server CPU per clone: `sluice serve` advertising the manifest vs `hg serve` without bundles,
//      cloned by hg 6.3.2 and by `sluice clone`; each clone checked against the source
//   3. 20 concurrent `hg clone`s of a smaller corpus through the manifest vs from hg serve
//   4. resume: a clone killed (SIGKILL) at half the bundle, then run again: bytes served in all
// Bundles are fetched through a byte-counting proxy in front of s3rver: it says which bundle each
// client took, how many bytes it cost, and holds a download at half for the kill.
//
//   node scripts/bench/clonebundles-bench.mjs [CORPUS] [--reps N]
// or `npm run bench -- --sections clonebundles` (run({ corpusDir, workDir, reps, say })).

import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureCorpus, ROOT } from './corpus.mjs';
import { fmtTable, measure, sectionArgs } from './measure.mjs';
import { SLUICE, cpuMs, prepare, startServer } from './wire-bench.mjs';

const ENV = { ...process.env, HGPLAIN: '1', HGRCPATH: '' };
delete ENV.NODE_EXTRA_CA_CERTS;
const CONCURRENT = 20;
/**
 * The section's default corpus: on the medium one the section costs ~4 minutes of CPU (20
 * concurrent pull clones from hg serve alone are a minute), past what a bench section may take.
 */
export const DEFAULT_PRESET = 'small';

/** Why the section cannot run (s3rver missing from `root`'s node_modules), or null. */
export function s3rverMissing(root = ROOT) {
  try {
    createRequire(join(root, 'package.json')).resolve('s3rver');
    return null;
  } catch {
    return 'bench clonebundles: the s3rver package is not installed (a devDependency: run `npm install`)';
  }
}

async function startS3(dir) {
  const missing = s3rverMissing();
  if (missing) throw new Error(missing);
  const S3rver = createRequire(join(ROOT, 'package.json'))('s3rver');
  const s3 = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: dir,
    configureBuckets: [{ name: 'cb' }],
  });
  const { port } = await s3.run();
  return { url: `http://127.0.0.1:${port}`, close: () => s3.close() };
}

/**
 * The CDN stand-in's front: passes requests (and Range) to s3rver and counts the body bytes it
 * sends per path; `holdAt[path]` stops sending that path's body at that offset, connection open.
 */
async function startCountingProxy(upstream) {
  const proxy = { url: '', served: new Map(), holdAt: new Map(), close: () => undefined };
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const headers = req.headers.range ? { range: req.headers.range } : {};
    const up = http.get(`${upstream}${req.url}`, { headers }, (ur) => {
      res.writeHead(ur.statusCode ?? 502, ur.headers);
      const from = Number(/^bytes (\d+)-/.exec(String(ur.headers['content-range'] ?? ''))?.[1] ?? 0);
      let at = from;
      let held = false;
      ur.on('data', (c) => {
        if (held) return;
        const hold = proxy.holdAt.get(path) ?? Infinity;
        const part = c.subarray(0, Math.max(0, hold - at));
        at += part.length;
        proxy.served.set(path, (proxy.served.get(path) ?? 0) + part.length);
        res.write(part);
        if (part.length < c.length) {
          held = true;
          ur.destroy();
        }
      });
      ur.on('end', () => held || res.end());
    });
    up.on('error', () => res.destroy());
    res.on('close', () => up.destroy());
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', () => r()));
  proxy.url = `http://127.0.0.1:${server.address().port}`;
  proxy.close = () => {
    server.closeAllConnections();
    server.close();
  };
  return proxy;
}

const hg = (args) => spawnSync('hg', args, { env: ENV, encoding: 'utf8', maxBuffer: 1 << 28 });
const sluiceArgs = (...args) => [process.execPath, [SLUICE, ...args]];
/** sha1 of `hg log -T '{node}\n'`: the changesets and their order */
const nodesHash = (repo) =>
  createHash('sha1')
    .update(hg(['-R', repo, 'log', '-T', '{node}\n']).stdout)
    .digest('hex');
const verifies = (repo) => hg(['-R', repo, 'verify', '-q']).status === 0;
const s = (ms) => (ms / 1000).toFixed(3);
const cpu = (r) => r.userMs + r.sysMs;
const lastLine = (text) => text.trim().split('\n').pop()?.slice(0, 300) ?? '';

/** A working copy of the corpus, its own hgrc and manifest (the shared corpus stays untouched). */
function copyRepo(corpus, dest) {
  // without the locks of whoever else is reading the shared corpus at this moment (hg's locks
  // are symlinks: a copy would hold the copy's lock for a process that never releases it)
  const isLock = (p) => /(^|\/)w?lock$/.test(p);
  cpSync(join(corpus, '.hg'), join(dest, '.hg'), { recursive: true, filter: (p) => !isLock(p) });
  return dest;
}
const writeConfig = (repo, lines) => writeFileSync(join(repo, '.hg', 'hgrc'), `[clone-bundles]\n${lines}\n`);

async function sluiceCli(args, env = ENV) {
  const r = await measure(...sluiceArgs(...args), { env });
  if (r.code !== 0) throw new Error(`sluice ${args.join(' ')} failed: ${r.stderr.slice(-2000)}`);
  return r;
}

/** Part 1: each format generated by Sluice (refresh, upload a no-op) and by hg, rounds interleaved. */
async function generation(repo, work, rounds, say) {
  const sizeFile = join(work, 'generated-size');
  const configs = [
    ['zstd-v2', ['bundle', '-q', '-a', '-t', 'zstd-v2']],
    ['none-v2;stream=v2', ['bundle', '-q', '-a', '-t', 'none-v2;stream=v2']],
    ['none-packed1', ['debugcreatestreamclonebundle', '-q']],
  ];
  const hgRun = async (args) => {
    const out = join(work, 'hg-generated.hg');
    const r = await measure('hg', ['-R', repo, ...args, out], { env: ENV });
    if (r.code !== 0) throw new Error(`hg ${args.join(' ')} failed: ${r.stderr}`);
    const size = statSync(out).size;
    rmSync(out);
    return { ...r, size };
  };
  const sluiceRun = async (spec) => {
    // the upload only records the size: the row is generation (and its sha256 digest) alone
    writeConfig(
      repo,
      `auto-generate.formats = ${spec}\nupload-command = stat -c %s "$HGCB_BUNDLE_PATH" > "${sizeFile}"\n` +
        `delete-command = true\nurl-template = http://127.0.0.1/{basename}`,
    );
    await sluiceCli(['bundles', 'clear', '-q', repo]);
    const r = await sluiceCli(['bundles', 'refresh', '-q', repo]);
    return { ...r, size: Number(readFileSync(sizeFile, 'utf8')) };
  };
  const results = configs.map(() => ({ hg: [], sluice: [] }));
  for (let i = 0; i < rounds; i++)
    for (const [k, [spec, hgArgs]] of configs.entries()) {
      results[k].hg.push(await hgRun(hgArgs));
      results[k].sluice.push(await sluiceRun(spec));
    }
  await sluiceCli(['bundles', 'clear', '-q', repo]);
  const median = (rs) => rs.sort((a, b) => a.wallMs - b.wallMs)[Math.floor(rs.length / 2)];
  const rows = [];
  for (const [k, [spec, hgArgs]] of configs.entries()) {
    const h = median(results[k].hg);
    const sl = median(results[k].sluice);
    const hgLabel = hgArgs[0] === 'bundle' ? `hg bundle -a -t ${spec}` : 'hg debugcreatestreamclonebundle';
    rows.push([
      hgLabel,
      s(h.wallMs),
      s(cpu(h)),
      (h.maxRssKb / 1024).toFixed(0),
      (h.size / 1e6).toFixed(1),
      '',
      '',
    ]);
    rows.push([
      `sluice bundles refresh, ${spec}`,
      s(sl.wallMs),
      s(cpu(sl)),
      (sl.maxRssKb / 1024).toFixed(0),
      (sl.size / 1e6).toFixed(1),
      `${(sl.wallMs / h.wallMs).toFixed(2)}x`,
      `${(cpu(sl) / cpu(h)).toFixed(2)}x`,
    ]);
  }
  say(`\n### Generation (median of ${rounds} interleaved rounds; Sluice's includes the sha256 digest)`);
  say(fmtTable(['', 'wall s', 'CPU s', 'RSS MB', 'bundle MB', 'wall vs hg', 'CPU vs hg'], rows));
}

/** Publishes zstd-v2 and none-v2;stream=v2 to s3rver, advertised through the proxy. */
async function publish(repo, s3, proxy, prefix) {
  writeConfig(
    repo,
    `auto-generate.formats = zstd-v2, none-v2;stream=v2\nupload-url = s3://cb/${prefix}\n` +
      `url-template = ${proxy.url}/cb/${prefix}/{basename}`,
  );
  const env = {
    ...ENV,
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
    AWS_REGION: 'us-east-1',
    AWS_ENDPOINT_URL_S3: s3.url,
  };
  const r = await sluiceCli(['bundles', 'refresh', '-q', repo], env);
  const manifest = readFileSync(join(repo, '.hg', 'clonebundles.manifest'), 'latin1');
  const sizes = new Map();
  for (const line of manifest.trim().split('\n')) {
    const url = new URL(line.split(' ')[0]);
    const head = await fetch(`${s3.url}${url.pathname}`, { method: 'HEAD' });
    sizes.set(url.pathname, Number(head.headers.get('content-length')));
  }
  return { refresh: r, sizes };
}

/** Which bundle (path) the proxy served since `before`, and how many bytes. */
function servedSince(proxy, before) {
  let path = '-';
  let bytes = 0;
  for (const [p, n] of proxy.served) {
    const d = n - (before.get(p) ?? 0);
    if (d > 0) [path, bytes] = [p, bytes + d];
  }
  return { path, bytes };
}
const kind = (path) => (path === '-' ? 'none (wire)' : /stream/.test(path) ? 'stream v2' : 'zstd-v2');

export async function run({ corpusDir, workDir, reps = 3, say = console.log } = {}) {
  const missing = s3rverMissing();
  if (missing) throw new Error(missing);
  const { corpus, work } = prepare('clonebundles-bench', corpusDir ?? ensureCorpus(DEFAULT_PRESET), workDir);
  ENV.SLUICE_CACHE_DIR = join(work, 'sluice-cache'); // partial downloads, not the user's
  const closers = [];
  const started = performance.now();
  try {
    const s3 = await startS3(join(work, 's3'));
    closers.push(() => s3.close());
    const proxy = await startCountingProxy(s3.url);
    closers.push(() => proxy.close());
    const repo = copyRepo(corpus, join(work, 'repo'));
    const count = hg(['-R', corpus, 'log', '-r', 'tip', '-T', '{rev}']).stdout;
    const load = loadavg()
      .map((l) => l.toFixed(1))
      .join(' ');
    say(
      `\nCorpus ${corpus} (${Number(count) + 1} changesets); bundles on s3rver (127.0.0.1) behind a ` +
        `byte-counting proxy; load average ${load} at the start.`,
    );
    await generation(repo, work, Math.min(reps, 3), say);
    const pub = await publish(repo, s3, proxy, 'medium');
    say(
      `\nPublishing zstd-v2 and none-v2;stream=v2 (generate, digest, upload to s3rver): ${s(pub.refresh.wallMs)} s wall, ${s(cpu(pub.refresh))} s CPU.`,
    );
    const ctx = { corpus, repo, work, proxy, sizes: pub.sizes, say, closers };
    await perClone(ctx);
    await resume(ctx);
    await concurrent(ctx);
    say(`\n(section time: ${((performance.now() - started) / 1000).toFixed(0)} s)`);
  } finally {
    for (const close of closers.reverse()) await close();
    if (!workDir) rmSync(work, { recursive: true, force: true });
  }
}

/** Part 2 and the check rows: one clone per client and server, server CPU from /proc. */
async function perClone({ corpus, repo, work, proxy, say, closers }) {
  if (existsSync(join(corpus, '.hg', 'clonebundles.manifest')))
    throw new Error(`${corpus} has a clonebundles.manifest: hg serve would advertise it`);
  const hgServe = await startServer('hg', corpus);
  closers.push(() => hgServe.stop());
  const slServe = await startServer('sluice', repo);
  closers.push(() => slServe.stop());
  const source = nodesHash(corpus);
  let n = 0;
  const configs = [
    ['hg clone -U', hgServe, 'hg serve, no bundles', (u, d) => ['hg', ['clone', '-q', '-U', u, d]]],
    [
      'hg clone -U --stream',
      hgServe,
      'hg serve, no bundles',
      (u, d) => ['hg', ['clone', '-q', '-U', '--stream', u, d]],
    ],
    ['sluice clone -U', hgServe, 'hg serve, no bundles', (u, d) => sluiceArgs('clone', u, d, '-q', '-U')],
    ['hg clone -U', slServe, 'sluice serve + manifest', (u, d) => ['hg', ['clone', '-q', '-U', u, d]]],
    [
      'hg clone -U --stream',
      slServe,
      'sluice serve + manifest',
      (u, d) => ['hg', ['clone', '-q', '-U', '--stream', u, d]],
    ],
    ['sluice clone -U', slServe, 'sluice serve + manifest', (u, d) => sluiceArgs('clone', u, d, '-q', '-U')],
  ];
  const rows = [];
  const checks = [];
  for (const [label, server, where, args] of configs) {
    const dest = join(work, `clone-${++n}`);
    const before = new Map(proxy.served);
    const cpu0 = cpuMs(server.pid);
    const r = await measure(...args(server.url, dest), { env: ENV });
    const serverCpu = cpuMs(server.pid) - cpu0;
    if (r.code !== 0) throw new Error(`${label} from ${where} failed: ${r.stderr.slice(-2000)}`);
    const got = servedSince(proxy, before);
    const same = nodesHash(dest) === source;
    // the clones made through bundles are the check rows: hg verify as well
    const ok = same && (got.path === '-' || verifies(dest));
    if (got.path !== '-')
      checks.push([label, kind(got.path), same ? 'equal' : 'DIFFERENT', ok ? 'passes' : 'FAILS']);
    if (!same) throw new Error(`${label} from ${where}: changesets differ from the source`);
    rmSync(dest, { recursive: true, force: true });
    rows.push([
      label,
      where,
      kind(got.path),
      s(r.wallMs),
      s(cpu(r)),
      s(serverCpu),
      (got.bytes / 1e6).toFixed(1),
    ]);
  }
  say(`\n### Server CPU per clone (one clone each; server CPU = utime+stime delta in /proc)`);
  say(
    fmtTable(
      ['client', 'server', 'bundle taken', 'wall s', 'client CPU s', 'server CPU s', 'bundle MB'],
      rows,
    ),
  );
  say(`\n### Check: clones through the Sluice-made manifest from s3rver against the source`);
  say(fmtTable(['client', 'bundle', 'hg log nodes', 'hg verify'], checks));
  hgServe.stop();
  slServe.stop();
}

/** Part 4: SIGKILL at half the bundle, then the same command again; bytes served in all. */
async function resume({ repo, work, proxy, sizes, say }) {
  const slServe = await startServer('sluice', repo);
  const env = ENV;
  const downloads = join(ENV.SLUICE_CACHE_DIR, 'downloads');
  const partBytes = () =>
    existsSync(downloads)
      ? readdirSync(downloads)
          .filter((f) => f.endsWith('.part'))
          .reduce((sum, f) => sum + statSync(join(downloads, f)).size, 0)
      : 0;
  const rows = [];
  try {
    for (const [label, argsFor, stream] of [
      ['sluice clone -U', (d) => sluiceArgs('clone', slServe.url, d, '-q', '-U'), true],
      ['hg clone -U', (d) => ['hg', ['clone', '-q', '-U', slServe.url, d]], false],
    ]) {
      const path = [...sizes.keys()].find((p) => /stream/.test(p) === stream);
      const size = sizes.get(path);
      const dest = join(work, `resume-${stream ? 'sluice' : 'hg'}`);
      proxy.served.set(path, 0);
      proxy.holdAt.set(path, Math.floor(size / 2));
      const [cmd, args] = argsFor(dest);
      const child = spawn(cmd, args, { env, stdio: 'ignore' });
      const exited = new Promise((r) => child.on('exit', r));
      // Sluice: killed once half is on disk; hg keeps nothing, killed once half was sent
      const reached = () => (stream ? partBytes() : proxy.served.get(path)) >= Math.floor(size / 2);
      const deadline = Date.now() + 60_000;
      while (!reached() && child.exitCode === null && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      if (!stream) await new Promise((r) => setTimeout(r, 300)); // what was sent reaches hg
      if (child.exitCode !== null) throw new Error(`${label} exited (${child.exitCode}) before the kill`);
      child.kill('SIGKILL');
      await exited;
      const atKill = proxy.served.get(path);
      proxy.holdAt.delete(path);
      rmSync(dest, { recursive: true, force: true }); // hg leaves a half-made DEST (Sluice none)
      const again = await measure(cmd, args, { env });
      if (again.code !== 0) throw new Error(`${label} after the kill failed: ${again.stderr.slice(-2000)}`);
      rmSync(dest, { recursive: true, force: true });
      const total = proxy.served.get(path);
      rows.push([
        label,
        kind(path),
        (size / 1e6).toFixed(1),
        (atKill / size).toFixed(2),
        ((total - atKill) / 1e6).toFixed(1),
        `${(total / size).toFixed(2)}x`,
      ]);
    }
  } finally {
    slServe.stop();
  }
  say(`\n### Resume: SIGKILL at half the bundle, then the same command again (target ≤ 1.1x)`);
  say(
    fmtTable(['client', 'bundle', 'bundle MB', 'killed at', 'second run MB', 'served in all / bundle'], rows),
  );
}

/** Part 3: CONCURRENT hg clones at once, through the manifest vs from hg serve without bundles. */
async function concurrent({ corpus, repo, work, proxy, say }) {
  const source = nodesHash(corpus);
  const rows = [];
  const notes = [];
  for (const [where, kindOf, dir] of [
    ['hg serve, no bundles', 'hg', corpus],
    ['sluice serve + manifest', 'sluice', repo],
  ]) {
    const server = await startServer(kindOf, dir);
    try {
      const before = new Map(proxy.served);
      const cpu0 = cpuMs(server.pid);
      const self0 = process.cpuUsage();
      const t0 = performance.now();
      const dests = Array.from({ length: CONCURRENT }, (_, i) => join(work, `conc-${kindOf}-${i}`));
      const results = await Promise.all(
        dests.map((d) => measure('hg', ['clone', '-q', '-U', server.url, d], { env: ENV })),
      );
      const wall = performance.now() - t0;
      const serverCpu = cpuMs(server.pid) - cpu0;
      const self = process.cpuUsage(self0);
      const failed = results.filter((r) => r.code !== 0);
      if (failed.length)
        notes.push(`${where}: ${failed.length} failed; the first: ${lastLine(failed[0].stderr)}`);
      const same = dests.filter((d) => existsSync(d) && nodesHash(d) === source).length;
      const firstDone = dests.find((d, i) => results[i].code === 0);
      const verified = firstDone !== undefined && verifies(firstDone);
      for (const d of dests) rmSync(d, { recursive: true, force: true });
      const got = servedSince(proxy, before);
      const clientCpu = results.reduce((sum, r) => sum + cpu(r), 0);
      rows.push([
        where,
        s(wall),
        s(serverCpu),
        s((self.user + self.system) / 1000),
        s(clientCpu),
        (got.bytes / 1e6).toFixed(1),
        `${CONCURRENT - failed.length}/${CONCURRENT}`,
        `${same}/${CONCURRENT}`,
        verified ? 'passes' : 'FAILS',
      ]);
    } finally {
      server.stop();
    }
  }
  const count = Number(hg(['-R', corpus, 'log', '-r', 'tip', '-T', '{rev}']).stdout) + 1;
  say(`\n### ${CONCURRENT} concurrent \`hg clone -U\` (${count} changesets)`);
  say(
    fmtTable(
      [
        'server',
        'total wall s',
        'server CPU s',
        's3rver + proxy CPU s',
        'clients CPU s',
        'bundles MB',
        'succeeded',
        'nodes = source',
        'hg verify (first)',
      ],
      rows,
    ),
  );
  for (const note of notes) say(`\n${note}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { corpus, reps } = sectionArgs(process.argv.slice(2));
  await run({ corpusDir: corpus, reps });
}
