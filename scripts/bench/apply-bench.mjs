// Apply benchmark: `sluice apply` against `hg debugapplystreamclonebundle` / `hg unbundle` and
// `tar -x` of the same repository, optionally with an emulated slow close() (slowclose.so, see
// ../shared/bench/README.md) to show what the background closer hides.
//
// Usable as a module (scripts/bench.mjs reuses it) and as a script:
//   node scripts/bench/apply-bench.mjs [--corpus DIR] [--runs N] [--slowclose /tmp/slowclose.so]
//        [--close-us 1000] [--threads 8,16,32,64] [--only REGEX] [--skip REGEX] [--json]
//
// Method (whole processes, wall clock, startup included, min and median of N interleaved rounds):
// - every run writes into a NEW directory under `root` (tmpfs by default) and everything is deleted
//   at the end: deleting between runs makes the next file creations slower on some filesystems
//   (ext4 inode reuse, see the bench README);
// - before each run ~256 MB are written to and deleted from `root`, so the pages a run allocates
//   are warm for every contender (on the VM this was written on, the first touch of a page costs
//   ~13 µs in the hypervisor, which otherwise swings a 0.3 s run by 0.2 s);
// - hg contenders get an `hg init` before the clock starts (hg applies into an existing repo).

import { execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const MAKE_CORPUS = join(ROOT, '..', 'shared', 'bench', 'make-corpus.sh');
const HG_ENV = { HGPLAIN: '1', HGRCPATH: '/dev/null', LC_ALL: 'C' };

/**
 * @typedef {object} ApplyBenchOptions
 * @property {string} [corpus]      source repository (made with make-corpus.sh --preset medium if missing; never deleted)
 * @property {string} [root]        scratch directory for bundles and runs (default /dev/shm/sluice-apply-bench-<pid>)
 * @property {number} [runs]        rounds (default 5)
 * @property {string} [slowclose]   path to slowclose.so: adds the slow-close contenders
 * @property {number} [closeUs]     SLOWCLOSE_US (default 1000)
 * @property {number[]} [threads]   close thread counts to try with the slow close (default [4, 16, 32, 64])
 * @property {RegExp} [only]        run only contenders whose name matches
 * @property {RegExp} [skip]        leave out contenders whose name matches
 * @property {string} [sluice]      CLI entry (default bin/sluice.cjs; out/cli is built if missing)
 * @property {(line: string) => void} [log]
 */

/**
 * @typedef {object} BenchRow
 * @property {string} name
 * @property {number[]} wall   seconds, one per round
 * @property {number} min
 * @property {number} median
 */

/** Runs the benchmark; returns one row per contender (times in seconds). */
export async function runApplyBench(/** @type {ApplyBenchOptions} */ options = {}) {
  const log = options.log ?? ((l) => process.stderr.write(l + '\n'));
  const corpus = options.corpus ?? '/dev/shm/corpus-medium';
  const root = options.root ?? `/dev/shm/sluice-apply-bench-${process.pid}`;
  const runs = options.runs ?? 5;
  const closeUs = options.closeUs ?? 1000;
  const threads = options.threads ?? [4, 16, 32, 64];
  const sluice = options.sluice ?? join(ROOT, 'bin', 'sluice.cjs');
  if (!existsSync(join(ROOT, 'out', 'cli', 'sluice.mjs')))
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-cli.mjs')], { cwd: ROOT, stdio: 'inherit' });
  if (!existsSync(join(corpus, '.hg'))) {
    log(`making corpus ${corpus} (medium preset)`);
    execFileSync(MAKE_CORPUS, ['--preset', 'medium', corpus], { stdio: 'inherit' });
  }
  mkdirSync(root, { recursive: true });
  try {
    const b = prepareInputs(corpus, join(root, 'bundles'), sluice, log);
    const contenders = makeContenders({
      b,
      sluice,
      slowclose: options.slowclose,
      closeUs,
      threads,
      root,
    }).filter((c) => (!options.only || options.only.test(c.name)) && !options.skip?.test(c.name));
    /** @type {Map<string, number[]>} */
    const walls = new Map(contenders.map((c) => [c.name, []]));
    let n = 0;
    for (let round = 0; round < runs; round++) {
      for (const c of contenders) {
        const out = join(root, `run-${n++}`);
        c.prepare?.(out);
        warmPages(root);
        const t = await timeProcess(c.cmd, c.args(out), { ...process.env, ...c.env }, c.cwd?.(out));
        walls.get(c.name).push(t);
        log(`${c.name.padEnd(44)} ${t.toFixed(3)} s`);
      }
    }
    return contenders.map((c) => {
      const w = walls.get(c.name);
      return { name: c.name, wall: w, min: Math.min(...w), median: median(w) };
    });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** Markdown table of rows, with ratios to the named baselines (by exact name) when present. */
export function formatApplyTable(/** @type {BenchRow[]} */ rows) {
  const find = (name) => rows.find((r) => r.name === name);
  const tar = find('tar -x');
  const hg = find('hg debugapplystreamclonebundle (packed1)');
  const lines = [
    '| contender | min s | median s | vs tar -x | hg packed1 / this |',
    '|---|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    const vsTar = tar ? (r.median / tar.median).toFixed(2) + 'x' : '';
    const vsHg = hg ? (hg.median / r.median).toFixed(2) + 'x' : '';
    lines.push(`| ${r.name} | ${r.min.toFixed(3)} | ${r.median.toFixed(3)} | ${vsTar} | ${vsHg} |`);
  }
  return lines.join('\n');
}

function prepareInputs(corpus, dir, sluice, log) {
  mkdirSync(dir, { recursive: true });
  const b = {
    packed1: join(dir, 'packed1.hg'),
    v2: join(dir, 'v2-none.hg'),
    v2zstd: join(dir, 'v2-zstd.hg'),
    tar: join(dir, 'repo.tar'),
  };
  const env = { ...process.env, ...HG_ENV };
  log('making bundles with hg');
  execFileSync('hg', ['debugcreatestreamclonebundle', '-q', b.packed1], { cwd: corpus, env });
  execFileSync('hg', ['bundle', '-q', '-a', '-t', 'none-v2;stream=v2', b.v2], { cwd: corpus, env });
  execFileSync('hg', ['bundle', '-q', '-a', '-t', 'zstd-v2;stream=v2', b.v2zstd], { cwd: corpus, env });
  // tar of exactly what a stream clone writes (the repository Sluice makes from the v2 bundle)
  const ref = join(dir, 'ref');
  execFileSync(process.execPath, [sluice, 'apply', '-q', b.v2, ref], { env });
  execFileSync('tar', ['-cf', b.tar, '-C', ref, '.hg']);
  rmSync(ref, { recursive: true, force: true });
  return b;
}

function makeContenders({ b, sluice, slowclose, closeUs, threads, root }) {
  const hgInit = (out) => execFileSync('hg', ['init', out], { env: { ...process.env, ...HG_ENV } });
  const slow = slowclose
    ? // libuv's io_uring closes would bypass the shim's close() (slowclose.mjs's slowcloseEnv)
      { LD_PRELOAD: slowclose, SLOWCLOSE_PREFIX: root, SLOWCLOSE_US: String(closeUs), UV_USE_IO_URING: '0' }
    : null;
  const us = `+${closeUs / 1000} ms close`;
  const node = process.execPath;
  const apply =
    (bundle, ...flags) =>
    (out) => [sluice, 'apply', '-q', bundle, join(out, 'repo'), ...flags];
  const list = [
    { name: 'tar -x', cmd: 'tar', args: () => ['-xf', b.tar], prepare: (o) => mkdirSync(o), cwd: (o) => o },
    {
      name: 'hg debugapplystreamclonebundle (packed1)',
      cmd: 'hg',
      args: (o) => ['-R', o, 'debugapplystreamclonebundle', b.packed1],
      prepare: hgInit,
      env: HG_ENV,
    },
    {
      name: 'hg unbundle (v2 none)',
      cmd: 'hg',
      args: (o) => ['-R', o, 'unbundle', '-q', b.v2],
      prepare: hgInit,
      env: HG_ENV,
    },
    { name: 'sluice apply packed1', cmd: node, args: apply(b.packed1) },
    { name: 'sluice apply v2 none', cmd: node, args: apply(b.v2) },
    { name: 'sluice apply v2 zstd', cmd: node, args: apply(b.v2zstd) },
  ];
  for (const t of threads) {
    list.push({
      name: `sluice apply v2 none, closer on x${t}`,
      cmd: node,
      args: apply(b.v2, '--background-close', 'on', '--close-threads', String(t)),
    });
  }
  if (slow) {
    list.push(
      {
        name: `tar -x ${us}`,
        cmd: 'tar',
        args: () => ['-xf', b.tar],
        prepare: (o) => mkdirSync(o),
        cwd: (o) => o,
        env: slow,
      },
      {
        name: `hg packed1 ${us}`,
        cmd: 'hg',
        args: (o) => ['-R', o, 'debugapplystreamclonebundle', b.packed1],
        prepare: hgInit,
        env: { ...HG_ENV, ...slow },
      },
      {
        name: `hg packed1 ${us}, backgroundclose`,
        cmd: 'hg',
        args: (o) => [
          '-R',
          o,
          '--config',
          'worker.backgroundclose=true',
          'debugapplystreamclonebundle',
          b.packed1,
        ],
        prepare: hgInit,
        env: { ...HG_ENV, ...slow },
      },
      {
        name: `sluice apply v2 none ${us}, closer off`,
        cmd: node,
        args: apply(b.v2, '--background-close', 'off'),
        env: slow,
      },
      // the default: adaptive on Linux (synchronous until the first 64 closes prove slow)
      { name: `sluice apply v2 none ${us}, closer auto`, cmd: node, args: apply(b.v2), env: slow },
    );
    for (const t of threads) {
      list.push({
        name: `sluice apply v2 none ${us}, closer on x${t}`,
        cmd: node,
        args: apply(b.v2, '--background-close', 'on', '--close-threads', String(t)),
        env: slow,
      });
    }
  }
  return list;
}

/** Touches ~256 MB of fresh pages in `dir` and frees them (see the header). */
function warmPages(dir) {
  const f = join(dir, 'warm');
  const fd = openSync(f, 'w');
  const chunk = Buffer.alloc(8 << 20, 1);
  for (let i = 0; i < 32; i++) writeSync(fd, chunk);
  closeSync(fd);
  rmSync(f);
}

function timeProcess(cmd, args, env, cwd) {
  return new Promise((resolvePromise, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(cmd, args, { env, cwd, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('exit', (code) => {
      const s = Number(process.hrtime.bigint() - t0) / 1e9;
      if (code !== 0) reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${err}`));
      else resolvePromise(s);
    });
  });
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// Script entry
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const opt = (name) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const rows = await runApplyBench({
    corpus: opt('corpus'),
    runs: opt('runs') ? Number(opt('runs')) : undefined,
    slowclose: opt('slowclose'),
    closeUs: opt('close-us') ? Number(opt('close-us')) : undefined,
    threads: opt('threads') ? opt('threads').split(',').map(Number) : undefined,
    only: opt('only') ? new RegExp(opt('only')) : undefined,
    skip: opt('skip') ? new RegExp(opt('skip')) : undefined,
  });
  if (args.includes('--json')) process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
  else process.stdout.write(formatApplyTable(rows) + '\n');
}
