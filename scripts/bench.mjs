// `npm run bench`: Sluice next to hg and tar, side by side in one run, with ratios.
// Not a test: numbers depend on the machine. Everything runs on tmpfs (/dev/shm) when present;
// every run writes to a new directory, deleted as soon as it is measured on tmpfs, else at the end.
//
//   npm run bench                       medium corpus, all sections
//   npm run bench -- --presets medium,large --reps 3 --sections apply,generate,wire,pull,verify,checkout,app,unbundle
//   npm run bench -- --sections history   real-history corpus: verify, tip reads, update (vs hg)
//   npm run bench -- --sections realpast  released npm versions committed with hg (zstd, zlib):
//                                         pull clone, incremental pull, serving, update, verify
//   npm run bench -- --sections clonebundles  automatic clone bundles on s3rver (small corpus):
//                                         generation, server CPU per clone, 20 concurrent, resume
//
// The tables of every section that ran replace that section's last recorded ones in
// docs/benchmarks.md (scripts/bench/bench-doc.mjs); `--docs FILE` writes another file, `--no-docs`
// none. `--out FILE` keeps the whole report as printed.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { benchBase, ensureCorpus, ROOT } from './bench/corpus.mjs';
import { writeBenchDoc } from './bench/bench-doc.mjs';
import { fmtTable, measure, medianOf } from './bench/measure.mjs';
import { buildSlowclose, slowcloseEnv } from './bench/slowclose.mjs';

const { values: opt } = parseArgs({
  options: {
    presets: { type: 'string', default: 'medium' },
    reps: { type: 'string', default: '3' },
    sections: { type: 'string', default: 'apply,generate,wire,pull,verify,checkout,app,unbundle' },
    'latency-us': { type: 'string', default: '1000' },
    out: { type: 'string' },
    docs: { type: 'string', default: join(ROOT, 'docs', 'benchmarks.md') },
    'no-docs': { type: 'boolean', default: false },
  },
});
const reps = Number(opt.reps);
const sections = new Set(opt.sections.split(','));
const SLUICE = join(ROOT, 'bin', 'sluice.cjs'); // the installed command (package.json bin)
const report = [];
const say = (s = '') => {
  console.log(s);
  report.push(s);
};
/** docs/benchmarks.md's blocks of this run: section-corpus key -> that section's report. */
const blocks = new Map();
let stamp = '';
/**
 * Runs a section and keeps what it printed as its block, under this run's stamp and the machine's
 * load around it (a shared machine's numbers are read differently from a quiet one's).
 */
async function recorded(key, section) {
  const from = report.length;
  const before = loadavg()[0];
  await section();
  const load = `*Load average (1 min) ${before.toFixed(1)} before, ${loadavg()[0].toFixed(1)} after, on ${availableParallelism()} cores.*`;
  blocks.set(key, `${stamp}\n${load}\n\n${report.slice(from).join('\n').trim()}`);
}

if (spawnSync('hg', ['--version'], { stdio: 'ignore' }).status !== 0) {
  console.error('bench: hg is not installed (apt-get install mercurial): nothing to compare with');
  process.exit(2);
}
if (sections.has('clonebundles')) {
  const { s3rverMissing } = await import('./bench/clonebundles-bench.mjs');
  const why = s3rverMissing();
  if (why) {
    console.error(why);
    process.exit(2);
  }
}
// The bundled CLI (what users run), not the TypeScript sources.
spawnSync('node', [join(ROOT, 'scripts', 'build-cli.mjs')], { stdio: 'inherit' });

// NODE_EXTRA_CA_CERTS makes every node process read and parse that CA bundle before its first line
// of JS (Node 20 loads it eagerly): ~30 ms per `sluice` run on a machine that sets it for its
// proxy, as this one does. Nothing Sluice's apply does uses TLS, and tar and hg pay no such tax,
// so the tables run every command without it; the header prints node's bare start-up both ways
// and the apply table keeps one sluice row with the variable as set, so the difference is visible.
const EXTRA_CA = process.env.NODE_EXTRA_CA_CERTS;
const startupAsSet = EXTRA_CA ? nodeStartupMs() : undefined;
delete process.env.NODE_EXTRA_CA_CERTS;
const asSetEnv = EXTRA_CA ? { ...process.env, NODE_EXTRA_CA_CERTS: EXTRA_CA } : undefined;

/** Median wall time of `node -e 0` (11 runs) in this process's environment. */
function nodeStartupMs() {
  const walls = [];
  for (let i = 0; i < 11; i++) {
    const t = performance.now();
    spawnSync(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    walls.push(performance.now() - t);
  }
  return walls.sort((a, b) => a - b)[5];
}

const base = benchBase();
const runs = mkdtempSync(join(base, 'runs-'));
let n = 0;
const fresh = (tag) => join(runs, `${String(++n).padStart(4, '0')}-${tag}`);
// On tmpfs every output is memory: a large-corpus run kept 16 GB of copies until the end and the
// last rows measured memory pressure (sys time x3). tmpfs frees a tree at once, so each output goes
// as soon as it is measured there; on a disk they stay until the end (ext4 creates files slowly
// right after a mass delete).
const ON_TMPFS = base.startsWith('/dev/shm/');
async function measured(output, cmd, args, opts) {
  try {
    return await measure(cmd, args, opts);
  } finally {
    if (ON_TMPFS) rmSync(output, { recursive: true, force: true });
  }
}

const mb = (bytes, ms) => (bytes / 1e6 / (ms / 1000)).toFixed(1);
function row(label, r, bytes, files, ref) {
  if (r.code !== 0) return [label, 'FAILED', '', '', '', '', '', '', ''];
  return [
    label,
    (r.wallMs / 1000).toFixed(3),
    (r.userMs / 1000).toFixed(3),
    (r.sysMs / 1000).toFixed(3),
    mb(bytes, r.wallMs),
    Math.round(files / (r.wallMs / 1000)),
    (r.maxRssKb / 1024).toFixed(0),
    ref ? (r.wallMs / ref.wallMs).toFixed(2) + 'x' : '',
  ];
}
const HEAD = ['', 'wall s', 'user s', 'sys s', 'MB/s', 'files/s', 'RSS MB', 'vs ref'];

async function applySection(preset, corpus) {
  const work = fresh(`apply-${preset}`);
  mkdirSync(work);
  // the same store as bundles (made by hg) and as a tar
  const packed1 = join(work, 'packed1.hg');
  const v2 = join(work, 'v2.hg');
  const tarball = join(work, 'store.tar');
  spawnSync('hg', ['-R', corpus, 'debugcreatestreamclonebundle', '-q', packed1], { stdio: 'inherit' });
  spawnSync('hg', ['-R', corpus, 'bundle', '-q', '-a', '-t', 'none-v2;stream=v2', v2], { stdio: 'inherit' });
  spawnSync('tar', ['-cf', tarball, '-C', join(corpus, '.hg'), 'store']);
  const info = JSON.parse(
    spawnSync('node', [SLUICE, 'inspect', '--json', v2], { encoding: 'utf8' })
      .stdout.trim()
      .split('\n')
      .pop(),
  );
  const bytes = info.bytes ?? info.totalBytes;
  const files = info.files ?? info.totalFiles;
  say(
    `\n### Apply, ${preset} corpus: ${files} files, ${(bytes / 1e6).toFixed(1)} MB (median of ${reps}; ratios vs tar -x)`,
  );

  const tar = (env) => () => {
    const d = fresh('tar');
    mkdirSync(d);
    return measured(d, 'tar', ['-xf', tarball, '-C', d], { env });
  };
  const hgApply =
    (bundle, kind, env, extra = []) =>
    () => {
      const d = fresh('hg');
      spawnSync('hg', ['init', d]);
      const args =
        kind === 'packed1'
          ? ['-R', d, ...extra, 'debugapplystreamclonebundle', bundle]
          : ['-R', d, ...extra, 'unbundle', '-q', bundle];
      return measured(d, 'hg', args, { env });
    };
  const sluice = (bundle, closeMode, env, threads) => () => {
    const d = fresh('sluice');
    return measured(
      d,
      'node',
      [
        SLUICE,
        'apply',
        '-q',
        bundle,
        d,
        '--background-close',
        closeMode,
        ...(threads ? ['--close-threads', String(threads)] : []),
      ],
      { env },
    );
  };

  const rows = [];
  const rTar = await medianOf(reps, tar());
  rows.push(row('tar -x (store)', rTar, bytes, files, rTar));
  const results = {};
  for (const [kind, bundle] of [
    ['packed1', packed1],
    ['v2', v2],
  ]) {
    const rHg = await medianOf(reps, hgApply(bundle, kind));
    const rS = await medianOf(reps, sluice(bundle, 'auto'));
    rows.push(
      row(
        `hg ${kind === 'packed1' ? 'debugapplystreamclonebundle' : 'unbundle'} (${kind})`,
        rHg,
        bytes,
        files,
        rTar,
      ),
    );
    rows.push(row(`sluice apply (${kind})`, rS, bytes, files, rTar));
    results[kind] = { hg: rHg, sluice: rS };
  }
  if (asSetEnv) {
    const rSet = await medianOf(reps, sluice(packed1, 'auto', asSetEnv));
    rows.push(row('sluice apply (packed1), NODE_EXTRA_CA_CERTS as set', rSet, bytes, files, rTar));
  }
  say(fmtTable(HEAD, rows));
  for (const kind of ['packed1', 'v2']) {
    const { hg, sluice: s } = results[kind];
    say(
      `${kind}: sluice is ${(hg.wallMs / s.wallMs).toFixed(2)}x faster than hg; ${(s.wallMs / rTar.wallMs).toFixed(2)}x tar's time`,
    );
  }

  const so = buildSlowclose(base);
  if (!so) {
    say('(slowclose.so could not be built: no cc; emulated close latency skipped)');
    return;
  }
  const lat = Number(opt['latency-us']) / 1000;
  say(
    `\n### Apply with ${lat} ms emulated close() latency (slowclose.so, NTFS-like), ${preset} corpus, packed1 and v2 (1 run each)`,
  );
  const env = slowcloseEnv(so, runs, opt['latency-us']);
  const lrows = [];
  const lt = await medianOf(1, tar(env));
  lrows.push(row('tar -x (closes inline)', lt, bytes, files, rTar));
  const hgOn = await medianOf(
    1,
    hgApply(packed1, 'packed1', env, ['--config', 'worker.backgroundclose=true']),
  );
  lrows.push(row('hg packed1, backgroundclose=true', hgOn, bytes, files, rTar));
  for (const [kind, bundle] of [
    ['packed1', packed1],
    ['v2', v2],
  ]) {
    const off = await medianOf(1, sluice(bundle, 'off', env));
    const on = await medianOf(1, sluice(bundle, 'on', env));
    const on4 = await medianOf(1, sluice(bundle, 'on', env, 4));
    lrows.push(row(`sluice ${kind}, closer off`, off, bytes, files, results[kind].sluice));
    lrows.push(row(`sluice ${kind}, closer on (4 threads, hg's)`, on4, bytes, files, results[kind].sluice));
    lrows.push(row(`sluice ${kind}, closer on (default threads)`, on, bytes, files, results[kind].sluice));
  }
  say(fmtTable([...HEAD.slice(0, -1), 'vs no-latency sluice (tar for tar/hg)'], lrows));
}

async function generateSection(preset, corpus) {
  say(
    `\n### Generate stream bundles, ${preset} corpus (median of ${reps}): hg vs sluice, 4 KiB vs 32 KiB chunks`,
  );
  const rows = [];
  const into = (tag, cmd, args) => () => {
    const out = fresh(tag);
    return measured(out, cmd, args(out));
  };
  const hgP = await medianOf(
    reps,
    into('hg.hg', 'hg', (o) => ['-R', corpus, 'debugcreatestreamclonebundle', '-q', o]),
  );
  const hgV2 = await medianOf(
    reps,
    into('hg.hg', 'hg', (o) => ['-R', corpus, 'bundle', '-q', '-a', '-t', 'none-v2;stream=v2', o]),
  );
  const sl = (type, extra) =>
    into('s.hg', 'node', (o) => [SLUICE, 'bundle', '-q', corpus, o, '--type', type, ...extra]);
  const sP = await medianOf(reps, sl('packed1', []));
  const s32 = await medianOf(reps, sl('v2', ['--chunk-size', '32768']));
  const s4 = await medianOf(reps, sl('v2', ['--chunk-size', '4096']));
  const sZ = await medianOf(reps, sl('v2', ['--compression', 'zstd']));
  rows.push(['hg debugcreatestreamclonebundle (packed1)', ...t(hgP), '']);
  rows.push(['sluice bundle --type packed1', ...t(sP), ratio(hgP, sP)]);
  rows.push(['hg bundle none-v2;stream=v2 (32 KiB)', ...t(hgV2), '']);
  rows.push(['sluice bundle v2, 32 KiB chunks', ...t(s32), ratio(hgV2, s32)]);
  rows.push(['sluice bundle v2, 4 KiB chunks', ...t(s4), ratio(hgV2, s4)]);
  rows.push(['sluice bundle v2, zstd', ...t(sZ), ratio(hgV2, sZ)]);
  say(fmtTable(['', 'wall s', 'user s', 'sys s', 'RSS MB', 'hg / sluice'], rows));
}
const t = (r) =>
  r.code !== 0
    ? ['FAILED', '', '', '']
    : [
        (r.wallMs / 1000).toFixed(3),
        (r.userMs / 1000).toFixed(3),
        (r.sysMs / 1000).toFixed(3),
        (r.maxRssKb / 1024).toFixed(0),
      ];
const ratio = (ref, r) => (r.code !== 0 ? '' : (ref.wallMs / r.wallMs).toFixed(2) + 'x');

async function optionalSection(name, file, preset, corpus) {
  const path = join(ROOT, 'scripts', 'bench', file);
  if (!existsSync(path)) {
    say(`\n(${name}: ${file} not present)`);
    return;
  }
  const mod = await import(path);
  const text = await mod.run({ corpusDir: corpus, workDir: fresh(name), preset, reps, say });
  if (text != null && String(text).trim()) say(String(text)); // modules return a (String object) report or print through say
}

const hgVersion = spawnSync('hg', ['--version', '-q'], { encoding: 'utf8' }).stdout.trim();
try {
  say(`# Sluice benchmark — ${new Date().toISOString()} — node ${process.version}, ${hgVersion}`);
  const startup = `node start-up (\`node -e 0\`, median of 11): ${nodeStartupMs().toFixed(0)} ms`;
  say(
    EXTRA_CA
      ? `${startup}; ${startupAsSet.toFixed(0)} ms with NODE_EXTRA_CA_CERTS=${EXTRA_CA} as this environment sets it. ` +
          'Every command below runs without that variable (no TLS is involved); one apply row shows it as set.'
      : `${startup}.`,
  );
  stamp =
    `*Recorded by \`npm run bench\` on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC` +
    ` (${commitOf()}), node ${process.version}, hg ${hgVersion.match(/version ([^)]+)/)?.[1] ?? '?'},` +
    ` --reps ${reps}.*`;
  const modules = {
    wire: 'wire-bench.mjs',
    pull: 'pull-bench.mjs',
    verify: 'verify-bench.mjs',
    checkout: 'checkout-bench.mjs',
    app: 'app-bench.mjs',
    unbundle: 'unbundle-bench.mjs',
  };
  const presetSections = ['apply', 'generate', 'wire', 'pull', 'verify', 'checkout', 'app', 'unbundle'];
  for (const preset of opt.presets.split(',')) {
    // `--sections history,realpast` alone needs no preset corpus
    if (!presetSections.some((name) => sections.has(name))) break;
    const corpus = ensureCorpus(preset);
    for (const name of presetSections) {
      if (!sections.has(name)) continue;
      await recorded(`${name}-${preset}`, () =>
        name === 'apply'
          ? applySection(preset, corpus)
          : name === 'generate'
            ? generateSection(preset, corpus)
            : optionalSection(name, modules[name], preset, corpus),
      );
    }
  }
  // real-history section: its own corpus (deep zstd delta chains), whatever --presets says
  if (sections.has('history'))
    await recorded('history', () =>
      optionalSection('history', 'history-bench.mjs', 'history', ensureCorpus('history')),
    );
  // real-past section: its own corpora (realpast-corpus.mjs), whatever --presets says
  if (sections.has('realpast'))
    await recorded('realpast', async () => {
      const mod = await import(join(ROOT, 'scripts', 'bench', 'realpast-bench.mjs'));
      await mod.run({ reps, say });
    });
  // clone bundles on a real S3 server: its own corpus (small), whatever --presets says
  if (sections.has('clonebundles'))
    await recorded('clonebundles', async () => {
      const mod = await import(join(ROOT, 'scripts', 'bench', 'clonebundles-bench.mjs'));
      const corpusDir = ensureCorpus(mod.DEFAULT_PRESET);
      await mod.run({ corpusDir, workDir: fresh('clonebundles'), reps, say });
    });
} finally {
  rmSync(runs, { recursive: true, force: true });
  if (opt.out) writeFileSync(opt.out, report.join('\n') + '\n');
  // the sections that finished, even when a later one failed
  if (!opt['no-docs'] && blocks.size) {
    writeBenchDoc(opt.docs, blocks);
    console.log(`\nbench: ${[...blocks.keys()].join(', ')} recorded in ${opt.docs}`);
  }
}

/** The commit measured, `commit abc1234` (`+` when tracked files have changes), or `no git`. */
function commitOf() {
  const git = (...args) => spawnSync('git', ['-C', ROOT, ...args], { encoding: 'utf8' });
  const head = git('rev-parse', '--short', 'HEAD');
  if (head.status !== 0) return 'no git';
  const dirty = git('status', '--porcelain', '--untracked-files=no').stdout.trim() !== '';
  return `commit ${head.stdout.trim()}${dirty ? '+' : ''}`;
}
