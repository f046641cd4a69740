// App benchmark (not a test): the product as a user runs it. Playwright drives Debian's Chromium
// against the built web host (out/main/web-host.cjs, the engine worker Electron main also runs) and
// times, inside the page, the click on "Apply bundle" / "Clone" to the row's "Done", next to the
// `sluice apply` / `sluice clone` processes and hg on the same inputs. Also counts the messages
// that crossed the bridge per job (none may be per file).
//
//   node scripts/bench/app-bench.mjs [CORPUS] [--reps N]      (default corpus: the medium one)
// or `npm run bench -- --sections app`, which calls run({ corpusDir, workDir, reps, say }).
// Needs the app built (`npx electron-vite build`), hg, and /usr/bin/chromium (SLUICE_CHROMIUM).

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { fmtTable, measure } from './measure.mjs';

const ROOT = resolve(fileURLToPath(import.meta.url), '..', '..', '..');
const SLUICE = join(ROOT, 'bin', 'sluice.cjs');
const WEB_HOST = join(ROOT, 'out', 'main', 'web-host.cjs');
const CHROMIUM = process.env.SLUICE_CHROMIUM ?? '/usr/bin/chromium';

const median = (xs) => {
  const s = xs.slice().sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
};

function waitForLine(child, re, what, timeoutMs = 30_000) {
  return new Promise((resolvePromise, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${what} did not start in time:\n${out}`)), timeoutMs);
    const onData = (d) => {
      out += d;
      const m = re.exec(out);
      if (m) {
        clearTimeout(timer);
        resolvePromise(m);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}):\n${out}`));
    });
  });
}

async function startWebHost(dir, env) {
  const child = spawn(
    process.execPath,
    [
      WEB_HOST,
      '--port',
      '0',
      '--data-dir',
      join(dir, 'data'),
      '--clone-dir',
      join(dir, 'clones'),
      '--no-sample',
    ],
    {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const m = await waitForLine(child, /^SLUICE_WEB_URL=(\S+)$/m, 'the web host');
  return { url: m[1], child };
}

async function startHgServe(repo) {
  const child = spawn('hg', ['serve', '-R', repo, '-a', '127.0.0.1', '-p', '0', '--print-url'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const m = await waitForLine(child, /^(http:\/\/\S+)$/m, 'hg serve');
  return { url: m[1].replace(/\/$/, ''), child };
}

function stopChild(child) {
  if (child.exitCode !== null || child.pid === undefined) return Promise.resolve();
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
  return exited.finally(() => clearTimeout(t));
}

/**
 * Counts what the bridge delivers to the page (before the bridge script runs): messages, bytes, and
 * how many carried per-file debug entries, so a run can show the renderer got no message per file.
 */
const BRIDGE_COUNTER = () => {
  const Native = window.WebSocket;
  const stats = { messages: 0, bytes: 0, jobEvents: 0, fileEntries: 0 };
  window.__bridgeStats = stats;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (ev) => {
        stats.messages++;
        stats.bytes += String(ev.data).length;
        const m = JSON.parse(String(ev.data));
        if (m.t === 'push' && m.channel === 'job:events') {
          stats.jobEvents++;
          for (const e of m.payload.events) if (e.type === 'files') stats.fileEntries += e.entries.length;
        }
      });
    }
  };
};

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
/** CPU ms of one thread (the host's main thread: tid = pid), from /proc. */
function threadCpuMs(pid, tid = pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
  } catch {
    return NaN;
  }
}

/** CPU ms of a whole process (every thread: the host's main thread, the engine worker, libuv's pool). */
function processCpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
  } catch {
    return NaN;
  }
}

/** The renderer's main-thread time (Chrome's Performance metrics, seconds -> ms). */
async function rendererMs(cdp) {
  const m = Object.fromEntries(
    (await cdp.send('Performance.getMetrics')).metrics.map((x) => [x.name, x.value]),
  );
  return { script: m.ScriptDuration * 1000, task: m.TaskDuration * 1000 };
}

/**
 * In the page: resolves with ms from the click on `button` to the row for `dest` showing done;
 * with the bridge traffic, the renderer's main-thread time and the host main thread's CPU of it.
 */
async function clickToDone(page, button, dest) {
  await page.evaluate(
    ({ dest }) => {
      window.__appBench = new Promise((resolvePromise) => {
        const t0 = { at: 0 };
        document.addEventListener('click', () => (t0.at ||= performance.now()), {
          capture: true,
          once: true,
        });
        const check = () => {
          for (const row of document.querySelectorAll('[data-testid="transfer"]')) {
            if (!row.textContent.includes(dest)) continue;
            const state = row.getAttribute('data-state');
            if (state === 'done' || state === 'failed' || state === 'cancelled') {
              obs.disconnect();
              resolvePromise({ ms: performance.now() - t0.at, state, text: row.textContent.slice(0, 300) });
            }
          }
        };
        const obs = new MutationObserver(check);
        obs.observe(document.body, {
          subtree: true,
          childList: true,
          attributes: true,
          attributeFilter: ['data-state'],
        });
      });
    },
    { dest },
  );
  const before = await page.evaluate(() => ({ ...window.__bridgeStats }));
  const r0 = await rendererMs(page.__cdp);
  const h0 = threadCpuMs(page.__hostPid);
  const p0 = processCpuMs(page.__hostPid);
  await button.click();
  const r = await page.evaluate(() => window.__appBench);
  const r1 = await rendererMs(page.__cdp);
  const h1 = threadCpuMs(page.__hostPid);
  const p1 = processCpuMs(page.__hostPid);
  if (r.state !== 'done') throw new Error(`the app's job ended ${r.state}: ${r.text}`);
  // the host's record of the job: the engine's own wall time (the row's "Elapsed")
  const jobs = await page.evaluate(() => window.sluice.invoke('history:list'));
  const record = jobs.find((j) => (j.request.dest ?? '') === dest);
  const after = await page.evaluate(() => ({ ...window.__bridgeStats }));
  const delta = Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - before[k]]));
  return {
    clickToDoneMs: r.ms,
    engineMs: record?.done?.wallMs ?? NaN,
    bridge: delta,
    rendererScriptMs: r1.script - r0.script,
    rendererTaskMs: r1.task - r0.task,
    hostMainCpuMs: h1 - h0,
    hostCpuMs: p1 - p0,
  };
}

async function appApply(page, bundle, dest) {
  await page.getByRole('button', { name: 'Apply bundle…' }).first().click();
  const open = page.getByRole('dialog', { name: 'Apply a stream bundle' });
  await open.getByLabel('Bundle file').fill(bundle);
  await open.getByRole('button', { name: 'Continue' }).click();
  const dialog = page.getByRole('dialog', { name: 'Apply stream bundle' });
  await dialog.getByLabel('New repository folder').fill(dest);
  return clickToDone(page, dialog.getByRole('button', { name: 'Apply bundle' }), dest);
}

async function appClone(page, url, dest) {
  await page.getByRole('button', { name: 'Clone from URL…' }).first().click();
  const dialog = page.getByRole('dialog', { name: 'Clone from URL' });
  await dialog.getByLabel('Repository URL').fill(url);
  await dialog.getByLabel('Destination folder').fill(dest);
  return clickToDone(page, dialog.getByRole('button', { name: 'Clone', exact: true }), dest);
}

/** A `sluice` process as a user runs it: its wall time, start-up included. */
async function cliRun(args) {
  const r = await measure('node', [SLUICE, ...args]);
  if (r.code !== 0) throw new Error(`sluice ${args.join(' ')} failed: ${r.stderr.slice(-1000)}`);
  return r;
}

/**
 * The engine's own time in a `sluice` process (its done event, --json): the CLI then makes the same
 * per-file debug entries the app keeps for its log.
 */
function cliEngineMs(args) {
  const p = spawnSync('node', [SLUICE, ...args, '--json'], { encoding: 'utf8', maxBuffer: 1 << 28 });
  const done = p.stdout
    .split('\n')
    .filter((l) => l.includes('"type":"done"'))
    .map((l) => JSON.parse(l))
    .pop();
  return { wallMs: done?.wallMs ?? NaN };
}

export async function run({ corpusDir, workDir, reps: asked = 5, say = console.log }) {
  const reps = Math.max(5, asked); // the app's numbers are medians of at least 5
  // the app as built from this checkout (the CLI is built by bench.mjs)
  spawnSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' });
  if (!existsSync(WEB_HOST)) {
    say('\n(app: out/main/web-host.cjs is missing and `npx electron-vite build` did not make it)');
    return;
  }
  if (!existsSync(CHROMIUM)) {
    say(`\n(app: no Chromium at ${CHROMIUM}; set SLUICE_CHROMIUM)`);
    return;
  }
  const { chromium } = await import('playwright-core');
  mkdirSync(workDir, { recursive: true });
  const env = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS; // as the other sections: no TLS anywhere here
  const bundle = join(workDir, 'packed1.hg');
  spawnSync('node', [SLUICE, 'bundle', '-q', corpusDir, bundle, '--type', 'packed1'], {
    stdio: 'inherit',
    env,
  });
  let n = 0;
  const fresh = (tag) => join(workDir, `${String(++n).padStart(3, '0')}-${tag}`);

  const hgServe = await startHgServe(corpusDir);
  const host = await startWebHost(workDir, env);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu'],
  });
  const rows = { app: { apply: [], clone: [] }, cli: { apply: [], clone: [] }, hg: { apply: [], clone: [] } };
  try {
    const page = await browser.newPage();
    page.__cdp = await page.context().newCDPSession(page);
    await page.__cdp.send('Performance.enable');
    page.__hostPid = host.child.pid;
    await page.addInitScript(BRIDGE_COUNTER);
    await page.goto(host.url);
    await page.getByRole('button', { name: 'Apply bundle…' }).first().waitFor();
    // one warm-up job of each kind: the first job of a session pays for loading the engine once
    for (const [kind, fn] of [
      ['apply', (d) => appApply(page, bundle, d)],
      ['clone', (d) => appClone(page, hgServe.url, d)],
    ]) {
      const d = fresh(`warm-${kind}`);
      const first = await fn(d);
      rmSync(d, { recursive: true, force: true });
      rows.app[`${kind}First`] = first;
    }
    for (let i = 0; i < reps; i++) {
      for (const kind of ['apply', 'clone']) {
        const d = fresh(`app-${kind}`);
        rows.app[kind].push(
          kind === 'apply' ? await appApply(page, bundle, d) : await appClone(page, hgServe.url, d),
        );
        rmSync(d, { recursive: true, force: true });
        const c = fresh(`cli-${kind}`);
        const args = kind === 'apply' ? ['apply', bundle, c] : ['clone', hgServe.url, c];
        const wall = await cliRun(args);
        rmSync(c, { recursive: true, force: true });
        const cliCpuMs = wall.userMs + wall.sysMs;
        const e = fresh(`cli-${kind}`);
        const engine = cliEngineMs(kind === 'apply' ? ['apply', bundle, e] : ['clone', hgServe.url, e]);
        rmSync(e, { recursive: true, force: true });
        rows.cli[kind].push({ wallMs: wall.wallMs, engineMs: engine.wallMs, cpuMs: cliCpuMs });
        const h = fresh(`hg-${kind}`);
        let r;
        if (kind === 'apply') {
          spawnSync('hg', ['init', h]);
          r = await measure('hg', ['-R', h, 'debugapplystreamclonebundle', bundle]);
        } else {
          // with a working copy, as the app's clone (and `sluice clone`) makes one
          r = await measure('hg', ['clone', '--stream', '-q', hgServe.url, h]);
        }
        rmSync(h, { recursive: true, force: true });
        rows.hg[kind].push({ wallMs: r.wallMs });
      }
    }
  } finally {
    await browser.close().catch(() => {});
    await stopChild(host.child);
    await stopChild(hgServe.child);
  }

  const fmt = (ms) => (ms / 1000).toFixed(3);
  const table = [];
  const summary = [];
  for (const kind of ['apply', 'clone']) {
    const app = rows.app[kind];
    const appClick = median(app.map((r) => r.clickToDoneMs));
    const appEngine = median(app.map((r) => r.engineMs));
    const cliWall = median(rows.cli[kind].map((r) => r.wallMs));
    const cliEngine = median(rows.cli[kind].map((r) => r.engineMs));
    const hgWall = median(rows.hg[kind].map((r) => r.wallMs));
    const msgs = median(app.map((r) => r.bridge.jobEvents));
    const entries = median(app.map((r) => r.bridge.fileEntries));
    const kb = median(app.map((r) => r.bridge.bytes)) / 1024;
    const rScript = median(app.map((r) => r.rendererScriptMs));
    const rTask = median(app.map((r) => r.rendererTaskMs));
    const hostCpu = median(app.map((r) => r.hostMainCpuMs));
    const appCpu = median(app.map((r) => r.hostCpuMs));
    const cliCpu = median(rows.cli[kind].map((r) => r.cpuMs));
    const what = kind === 'apply' ? 'apply medium packed1' : 'clone medium from hg serve';
    const first = rows.app[`${kind}First`];
    table.push([
      `${what}: app, click to Done`,
      fmt(appClick),
      fmt(appEngine),
      `${msgs} (${entries} file entries)`,
      (appClick / cliWall).toFixed(2) + 'x',
      (appEngine / cliEngine).toFixed(2) + 'x',
      (hgWall / appClick).toFixed(2) + 'x',
    ]);
    table.push([
      `${what}: app, first job of the session`,
      fmt(first.clickToDoneMs),
      fmt(first.engineMs),
      String(first.bridge.jobEvents),
      '',
      '',
      '',
    ]);
    table.push([
      `${what}: sluice process`,
      fmt(cliWall),
      fmt(cliEngine),
      '',
      '1.00x',
      '1.00x',
      (hgWall / cliWall).toFixed(2) + 'x',
    ]);
    table.push([`${what}: hg process`, fmt(hgWall), '', '', '', '', '1.00x']);
    summary.push(
      `${kind}: per job, ${msgs} job:events messages and ${kb.toFixed(0)} KB over the bridge (${entries} file entries), renderer main thread ${rScript.toFixed(0)} ms of script / ${rTask.toFixed(0)} ms of tasks, host main thread ${hostCpu.toFixed(0)} ms CPU; the whole host process ${appCpu.toFixed(0)} ms CPU against ${cliCpu.toFixed(0)} ms for the sluice process (${(appCpu / cliCpu).toFixed(2)}x; CPU, unlike wall time, barely moves with the machine's load)`,
    );
    summary.push(
      `${kind}: click-to-Done ${(appClick / cliWall).toFixed(2)}x the CLI process (target <= 1.2x), the row's Elapsed ${(appEngine / cliEngine).toFixed(2)}x the CLI's engine time (target <= 1.05x), ${(hgWall / appClick).toFixed(2)}x faster than hg`,
    );
  }
  say(
    `\n### App (web host in Chromium, the engine worker Electron main also runs) vs processes, ${reps} runs each, medians`,
  );
  say(
    fmtTable(
      [
        '',
        'wall s',
        'engine s (Elapsed)',
        'job:events messages',
        'vs sluice process wall',
        'engine vs CLI engine',
        'hg / this',
      ],
      table,
    ),
  );
  for (const s of summary) say(s);
  return { rows };
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { reps: { type: 'string', default: '5' } },
  });
  const corpusDir =
    positionals[0] ??
    (existsSync('/dev/shm/sluice-bench/corpus-medium')
      ? '/dev/shm/sluice-bench/corpus-medium'
      : '/dev/shm/corpus-medium');
  const workDir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'sluice-app-bench-'));
  try {
    const r = await run({ corpusDir, workDir, reps: Number(values.reps) });
    if (process.env.APP_BENCH_JSON) console.log(JSON.stringify(r.rows));
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}
