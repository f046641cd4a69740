// Real-past benchmark (issue 28): on the realpast corpora (realpast-corpus.mjs: released versions
// of real packages, thousands of changesets, zstd and zlib revlogs), Sluice next to hg for
//   - `clone --pull -U` from hg serve (stream clones off);
//   - an incremental pull of the second half of the history into a clone of the first half;
//   - serving: hg's own `clone --pull -U` from `sluice serve` and from `hg serve` (server CPU);
//   - `update` from the null revision to tip;
//   - `verify`.
// Columns: wall, CPU (user + sys) and peak RSS of the client; server CPU (/proc delta) for the
// runs against a server. Medians of `reps` interleaved rounds after one warm-up round.
//
//   node scripts/bench/realpast-bench.mjs [--reps N] [--presets realpast,realpast-zlib]
// or `npm run bench -- --sections realpast`.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { benchBase, ensureCorpus, ROOT } from './corpus.mjs';
import { fmtTable, measure } from './measure.mjs';
import { cpuMs, startServer } from './wire-bench.mjs';

const SLUICE = join(ROOT, 'bin', 'sluice.cjs');
const ENV = { ...process.env, HGPLAIN: '1', HGRCPATH: '' };
delete ENV.NODE_EXTRA_CA_CERTS;
/** Targets of issue 28: Sluice's share of hg's figure. */
const TARGETS = { clone: 0.7, cloneRss: 2.5, pull: 0.8, serveCpu: 0.6, serveWall: 1.0, update: 0.5 };

const hgOut = (args) => spawnSync('hg', args, { env: ENV, encoding: 'utf8' }).stdout.trim();

/** One job of one contender: `prepare` makes its destination, the command runs measured. */
async function once(job, server) {
  const dest = job.prepare();
  const before = server ? cpuMs(server.pid) : 0;
  const r = await measure(job.cmd, job.args(dest), { env: ENV });
  const serverCpu = server ? cpuMs(server.pid) - before : 0;
  rmSync(dest, { recursive: true, force: true });
  if (r.code !== 0) throw new Error(`${job.name} failed (exit ${r.code}): ${r.stderr.slice(-2000)}`);
  return { ...r, serverCpu };
}

const median = (rs, key) => [...rs].map((r) => r[key]).sort((a, b) => a - b)[Math.floor(rs.length / 2)];

async function benchCorpus(corpus, work, reps) {
  const count = Number(hgOut(['-R', corpus, 'log', '-r', 'tip', '-T', '{rev}'])) + 1;
  const half = join(work, 'half');
  const mid = String(Math.floor(count / 2) - 1);
  spawnSync('hg', ['clone', '-q', '-U', '-r', mid, corpus, half], { env: ENV });
  let n = 0;
  const fresh = () => join(work, `run-${++n}`);
  const copyOf = (src) => () => {
    const d = fresh();
    cpSync(join(src, '.hg'), join(d, '.hg'), { recursive: true });
    return d;
  };
  const hgServe = await startServer('hg', corpus, ['--config', 'server.uncompressed=false']);
  const slServe = await startServer('sluice', corpus);
  try {
    const node = process.execPath;
    const jobs = [
      [
        'clone',
        'hg clone --pull -U',
        hgServe,
        'hg',
        (d) => ['clone', '-q', '--pull', '-U', hgServe.url, d],
        fresh,
      ],
      [
        'clone',
        'sluice clone --pull -U',
        hgServe,
        node,
        (d) => [SLUICE, 'clone', '-q', '--pull', '-U', hgServe.url, d],
        fresh,
      ],
      [
        'pull',
        'hg pull (second half)',
        hgServe,
        'hg',
        (d) => ['-R', d, 'pull', '-q', hgServe.url],
        copyOf(half),
      ],
      [
        'pull',
        'sluice pull (second half)',
        hgServe,
        node,
        (d) => [SLUICE, 'pull', '-q', d, hgServe.url],
        copyOf(half),
      ],
      [
        'serve',
        'hg clone --pull -U from hg serve',
        hgServe,
        'hg',
        (d) => ['clone', '-q', '--pull', '-U', hgServe.url, d],
        fresh,
      ],
      [
        'serve',
        'hg clone --pull -U from sluice serve',
        slServe,
        'hg',
        (d) => ['clone', '-q', '--pull', '-U', slServe.url, d],
        fresh,
      ],
      [
        'update',
        'hg update null -> tip',
        null,
        'hg',
        (d) => ['update', '-q', '-R', d, 'tip'],
        copyOf(corpus),
      ],
      ['update', 'sluice update null -> tip', null, node, (d) => [SLUICE, 'update', '-q', d], copyOf(corpus)],
      ['verify', 'hg verify', null, 'hg', () => ['verify', '-q', '-R', corpus], fresh],
      ['verify', 'sluice verify', null, node, () => [SLUICE, 'verify', '-q', corpus], fresh],
    ].map(([group, name, server, cmd, args, prepare]) => ({ group, name, server, cmd, args, prepare }));
    const results = jobs.map(() => []);
    for (let round = 0; round <= reps; round++) {
      for (const [i, job] of jobs.entries()) {
        const r = await once(job, job.server);
        if (round > 0) results[i].push(r); // round 0 warms the page cache and the servers
      }
    }
    const med = results.map((rs) => ({
      wallMs: median(rs, 'wallMs'),
      cpuMs: median(
        rs.map((r) => ({ c: r.userMs + r.sysMs })),
        'c',
      ),
      rssMb: median(rs, 'maxRssKb') / 1024,
      serverCpu: median(rs, 'serverCpu'),
    }));
    const rows = jobs.map((j, i) => {
      const m = med[i];
      const ref = med[i % 2 === 0 ? i : i - 1];
      return [
        j.name,
        (m.wallMs / 1000).toFixed(2),
        (m.cpuMs / 1000).toFixed(2),
        m.rssMb.toFixed(0),
        j.server ? (m.serverCpu / 1000).toFixed(2) : '',
        i % 2 ? (m.wallMs / ref.wallMs).toFixed(2) + 'x' : '',
        i % 2 ? (m.cpuMs / ref.cpuMs).toFixed(2) + 'x' : '',
        i % 2 && j.server ? (m.serverCpu / ref.serverCpu).toFixed(2) + 'x' : '',
        i % 2 ? (m.rssMb / ref.rssMb).toFixed(2) + 'x' : '',
      ];
    });
    const ratio = (i, key) => med[i][key] / med[i - 1][key];
    const verdict = (got, target) =>
      `${got.toFixed(2)}x (target ≤ ${target}x: ${got <= target ? 'met' : 'NOT met'})`;
    const summary = [
      `- clone --pull: ${verdict(ratio(1, 'wallMs'), TARGETS.clone)} time (CPU ${ratio(1, 'cpuMs').toFixed(2)}x), ${verdict(ratio(1, 'rssMb'), TARGETS.cloneRss)} peak RSS`,
      `- incremental pull of ${count - Number(mid) - 1} changesets: ${verdict(ratio(3, 'wallMs'), TARGETS.pull)} time (CPU ${ratio(3, 'cpuMs').toFixed(2)}x)`,
      `- serving hg's clone --pull: ${verdict(ratio(5, 'serverCpu'), TARGETS.serveCpu)} server CPU, ${verdict(ratio(5, 'wallMs'), TARGETS.serveWall)} wall`,
      `- update from null: ${verdict(ratio(7, 'wallMs'), TARGETS.update)} time (CPU ${ratio(7, 'cpuMs').toFixed(2)}x)`,
      `- verify: ${ratio(9, 'wallMs').toFixed(2)}x time`,
    ];
    return {
      count,
      table: fmtTable(
        [
          '',
          'wall s',
          'CPU s',
          'peak RSS MB',
          'server CPU s',
          'wall vs hg',
          'CPU vs hg',
          'server CPU vs hg',
          'RSS vs hg',
        ],
        rows,
      ),
      summary,
    };
  } finally {
    hgServe.stop();
    slServe.stop();
  }
}

/** bench.mjs's section: each realpast preset, built on first use (realpast-corpus.mjs). */
export async function run({ reps = 3, say = console.log, presets = ['realpast', 'realpast-zlib'] } = {}) {
  for (const preset of presets) {
    const corpus = ensureCorpus(preset);
    const work = mkdtempSync(join(benchBase(), `realpast-run-`));
    mkdirSync(work, { recursive: true });
    try {
      const files = hgOut(['-R', corpus, 'files', '-r', 'tip']).split('\n').length;
      const { count, table, summary } = await benchCorpus(corpus, work, reps);
      const requires = hgOut(['debugrequires', '-R', corpus]).includes('revlog-compression-zstd')
        ? 'zstd'
        : 'zlib';
      say(
        `\n### ${preset}: ${count} changesets, ${files} files at tip, ${requires} revlogs (median of ${reps} interleaved rounds after a warm-up; CPU = user + sys)\n`,
      );
      say(table);
      say('');
      for (const s of summary) say(s);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({
    options: {
      reps: { type: 'string', default: '3' },
      presets: { type: 'string', default: 'realpast,realpast-zlib' },
    },
  });
  spawnSync(process.execPath, [join(ROOT, 'scripts', 'build-cli.mjs')], { stdio: 'inherit' });
  await run({ reps: Number(values.reps), presets: values.presets.split(',') });
}
