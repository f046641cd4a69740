// Fetch-all benchmark (not a test): N clones of one repository served by `hg serve`, nothing new
// on either side. Sluice's library fetch (fetchCounts, a bounded number at once, in one process as
// the host's engine worker runs them) against `hg incoming -q` run for each clone in a loop.
// Columns: wall, server CPU for the run (hg serve's utime + stime + reaped children, from /proc),
// HTTP requests the server logged.
//
//   npx tsx scripts/bench/fetch-bench.ts [--repos 50] [--concurrency 4] [--commits 200]

import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { fetchCounts } from '../../src/main/host/engine-api';
import { freePort, waitForHttp } from '../net-harness.mjs';

const ENV = { ...process.env, HGPLAIN: '1', HGRCPATH: '', HGUSER: 'bench <bench@example.com>' };
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

function serverCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 1000) / CLK_TCK;
}

function hg(args: string[], cwd?: string): string {
  const r = spawnSync('hg', args, { cwd, env: ENV, encoding: 'utf8' });
  if (r.status !== 0 && !(args.includes('incoming') && r.status === 1))
    throw new Error(`hg ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

const { values } = parseArgs({
  options: {
    repos: { type: 'string', default: '50' },
    concurrency: { type: 'string', default: '4' },
    commits: { type: 'string', default: '200' },
  },
});
const count = Number(values.repos);
const work = mkdtempSync(join(tmpdir(), 'sluice-fetch-bench-'));
const upstream = join(work, 'upstream');
hg(['init', upstream]);
for (let i = 0; i < Number(values.commits); i++) {
  writeFileSync(join(upstream, `f${i % 10}.txt`), `line ${i}\n`);
  hg(['commit', '-q', '-A', '-m', `c${i}`, '-d', `${1700000000 + i} 0`], upstream);
}
const port = await freePort();
const accessLog = join(work, 'access.log');
const server = spawn(
  'hg',
  [
    'serve',
    '-R',
    upstream,
    '-a',
    '127.0.0.1',
    '-p',
    String(port),
    '-A',
    accessLog,
    '-E',
    join(work, 'errors.log'),
  ],
  { env: ENV, stdio: 'ignore' },
);
const url = `http://127.0.0.1:${port}/`;
try {
  await waitForHttp(`${url}?cmd=capabilities`, 30_000);
  const seed = join(work, 'repos', 'r00');
  mkdirSync(join(work, 'repos'));
  hg(['clone', '-q', url, seed]);
  const repos = [seed];
  for (let i = 1; i < count; i++) {
    const r = join(work, 'repos', `r${String(i).padStart(2, '0')}`);
    cpSync(seed, r, { recursive: true });
    repos.push(r);
  }
  const requests = (): number => readFileSync(accessLog, 'utf8').split('\n').filter(Boolean).length;

  async function measure(name: string, run: () => Promise<void>): Promise<string> {
    const cpu0 = serverCpuMs(server.pid!);
    const req0 = requests();
    const t0 = performance.now();
    await run();
    const wall = performance.now() - t0;
    await new Promise((r) => setTimeout(r, 300)); // the last forked request child reaped
    const cpu = serverCpuMs(server.pid!) - cpu0;
    return `| ${name} | ${(wall / 1000).toFixed(2)} s | ${(cpu / 1000).toFixed(2)} s | ${requests() - req0} |`;
  }

  const sluiceFetchAll = async (): Promise<void> => {
    const queue = [...repos];
    const worker = async (): Promise<void> => {
      for (let r = queue.shift(); r; r = queue.shift()) {
        const c = await fetchCounts({ repo: r });
        if (c.incoming !== 0 || c.outgoing !== 0) throw new Error(`${r}: expected nothing new`);
      }
    };
    await Promise.all(Array.from({ length: Number(values.concurrency) }, worker));
  };
  const hgLoop = async (): Promise<void> => {
    for (const r of repos) hg(['-R', r, 'incoming', '-q']);
  };
  // the first round asks each server's capabilities (and loads the engine's modules); the next
  // rounds of a running host find them remembered
  const rows = [
    await measure(`sluice fetch all, first round (${values.concurrency} at once)`, sluiceFetchAll),
    await measure(`sluice fetch all, next round (${values.concurrency} at once)`, sluiceFetchAll),
    await measure('`hg incoming -q` in a loop', hgLoop),
  ];
  console.log(`${count} repositories, ${values.commits} changesets each, nothing new; server: hg serve\n`);
  console.log('| run | wall | server CPU | requests |\n|---|---|---|---|');
  for (const r of rows) console.log(r);
} finally {
  server.kill('SIGTERM');
  rmSync(work, { recursive: true, force: true });
}
