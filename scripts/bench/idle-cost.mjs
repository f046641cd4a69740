// Idle cost of the host (not a test): a library of N tiny generated repositories, the web host
// started on it with no page open and no job, and its process CPU (utime + stime of every thread:
// the engine worker included, from /proc) over an idle window after start-up settled.
//
//   node scripts/bench/idle-cost.mjs [--repos 200] [--seconds 60] [--settle 20] [--host out/main/web-host.cjs]
//
// --host lets the same library be measured under another build (e.g. an older checkout's out/).

import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ENV = { ...process.env, HGPLAIN: '1', HGRCPATH: '', HGUSER: 'bench <bench@example.com>' };
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** utime + stime of a process (all its threads), ms */
function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
}

function hg(args, cwd) {
  const r = spawnSync('hg', args, { cwd, env: ENV, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`hg ${args.join(' ')}: ${r.stderr}`);
}

/** N copies of a one-commit repository, and a library.json listing them. */
export function makeLibrary(work, count) {
  const seed = join(work, 'repos', 'r000');
  mkdirSync(join(work, 'repos'), { recursive: true });
  hg(['init', seed]);
  mkdirSync(join(seed, 'src'));
  writeFileSync(join(seed, 'src', 'a.txt'), 'a\n');
  writeFileSync(join(seed, 'README'), 'tiny\n');
  hg(['commit', '-q', '-A', '-m', 'seed', '-d', '1700000000 0'], seed);
  const repos = [seed];
  for (let i = 1; i < count; i++) {
    const root = join(work, 'repos', `r${String(i).padStart(3, '0')}`);
    cpSync(seed, root, { recursive: true });
    repos.push(root);
  }
  const dataDir = join(work, 'data');
  mkdirSync(dataDir, { recursive: true });
  const now = Date.now();
  writeFileSync(
    join(dataDir, 'library.json'),
    JSON.stringify({ version: 1, repos: repos.map((path) => ({ path, addedAt: now, origin: 'user' })) }),
  );
  return { repos, dataDir };
}

/** Starts the web host on dataDir; resolves with its child process once it printed its URL. */
export function startWebHost(host, dataDir) {
  const child = spawn(
    join(ROOT, 'node_modules', '.bin', 'node'),
    [host, '--data-dir', dataDir, '--port', '0'],
    {
      env: { ...process.env, SLUICE_OPEN_BROWSER: '0' },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return new Promise((resolveUrl, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += String(d);
      const m = /SLUICE_WEB_URL=(\S+)/.exec(out);
      if (m) resolveUrl({ child, url: m[1] });
    });
    child.on('exit', (code) => reject(new Error(`web host exited ${code}: ${out}`)));
  });
}

async function main() {
  const { values } = parseArgs({
    options: {
      repos: { type: 'string', default: '200' },
      seconds: { type: 'string', default: '60' },
      settle: { type: 'string', default: '20' },
      host: { type: 'string', default: join(ROOT, 'out', 'main', 'web-host.cjs') },
    },
  });
  const work = mkdtempSync(join(tmpdir(), 'sluice-idle-'));
  const { dataDir, repos } = makeLibrary(work, Number(values.repos));
  const { child } = await startWebHost(resolve(values.host), dataDir);
  try {
    await new Promise((r) => setTimeout(r, Number(values.settle) * 1000));
    const c0 = cpuMs(child.pid);
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, Number(values.seconds) * 1000));
    const cpu = cpuMs(child.pid) - c0;
    const minutes = (performance.now() - t0) / 60_000;
    console.log(
      `idle cost: ${repos.length} repositories, ${(cpu / 1000 / minutes).toFixed(3)} s CPU per idle minute ` +
        `(${cpu.toFixed(0)} ms over ${(minutes * 60).toFixed(0)} s; ${values.host})`,
    );
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
