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
 * Also marks (performance.mark, page clock) where the timed job is: its job:start invoke sent and
 * answered, its first state and events, the done event's arrival; with the engine's own start and
 * done times (its events' `time`, the host's clock, which is this machine's) and the host's
 * startedAt, moved onto the page's clock.
 */
const BRIDGE_COUNTER = () => {
  const Native = window.WebSocket;
  const stats = { messages: 0, bytes: 0, jobEvents: 0, fileEntries: 0 };
  window.__bridgeStats = stats;
  const onPage = (epochMs) => epochMs - performance.timeOrigin;
  const mark = (name, at) => {
    const t = window.__timeline;
    if (!t || t[name] !== undefined) return;
    t[name] = at ?? performance.now();
    performance.mark(`sluice:${name}`, { startTime: t[name] });
  };
  let startInvoke = -1;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      const send = this.send.bind(this);
      this.send = (data) => {
        const m = JSON.parse(String(data));
        if (m.t === 'invoke' && m.channel === 'job:start' && window.__timeline) {
          startInvoke = m.id;
          mark('invokeSent');
        }
        send(data);
      };
      this.addEventListener('message', (ev) => {
        stats.messages++;
        stats.bytes += String(ev.data).length;
        const m = JSON.parse(String(ev.data));
        if (m.t === 'result' && m.id === startInvoke) mark('invokeAnswered');
        if (m.t === 'push' && m.channel === 'job:state' && window.__timeline) {
          mark('firstState');
          if (m.payload.state === 'running') mark('hostStarted', onPage(m.payload.startedAt));
        }
        if (m.t === 'push' && m.channel === 'job:events') {
          stats.jobEvents++;
          mark('firstEvents');
          for (const e of m.payload.events) {
            if (e.type === 'files') stats.fileEntries += e.entries.length;
            if (e.type === 'start') mark('engineStart', onPage(e.time));
            if (e.type === 'done') {
              mark('engineDone', onPage(e.time));
              mark('doneReceived');
            }
          }
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
      const timeline = (window.__timeline = {});
      window.__appBench = new Promise((resolvePromise) => {
        document.addEventListener('click', () => (timeline.click ??= performance.now()), {
          capture: true,
          once: true,
        });
        const check = () => {
          for (const row of document.querySelectorAll('[data-testid="transfer"]')) {
            if (!row.textContent.includes(dest)) continue;
            timeline.rowShown ??= performance.now();
            const state = row.getAttribute('data-state');
            if (state === 'done' || state === 'failed' || state === 'cancelled') {
              obs.disconnect();
              timeline.rowDone = performance.now();
              window.__timeline = null;
              const phases = Object.fromEntries(
                Object.entries(timeline).map(([k, v]) => [k, v - timeline.click]),
              );
              resolvePromise({
                ms: timeline.rowDone - timeline.click,
                phases,
                state,
                text: row.textContent.slice(0, 300),
              });
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
    phases: r.phases,
    engineMs: record?.done?.wallMs ?? NaN,
    bridge: delta,
    rendererScriptMs: r1.script - r0.script,
    rendererTaskMs: r1.task - r0.task,
    hostMainCpuMs: h1 - h0,
    hostCpuMs: p1 - p0,
  };
}

/** Dialog steps that had to be tried again (the timed click comes after them). */
export const retried = { dialogSteps: 0 };

async function appApply(page, bundle, dest) {
  const dialog = page.getByRole('dialog', { name: 'Apply stream bundle' });
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'Apply bundle…' }).first().click();
    const open = page.getByRole('dialog', { name: 'Apply a stream bundle' });
    try {
      await open.getByLabel('Bundle file').fill(bundle, { timeout: 10_000 });
      await open.getByRole('button', { name: 'Continue' }).click({ timeout: 10_000 });
      await dialog.getByLabel('New repository folder').fill(dest, { timeout: 10_000 });
      break;
    } catch (e) {
      if (attempt === 3) throw e;
      retried.dialogSteps++;
      console.error(`app bench: the apply dialog did not open (${e.message.split('\n')[0]}); again`);
    }
  }
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

/** A fresh page on `host`, counting the bridge, ready when the app shows its Apply button. */
async function openApp(browser, host) {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.__cdp = await context.newCDPSession(page);
  await page.__cdp.send('Performance.enable');
  page.__hostPid = host.child.pid;
  page.on('pageerror', (e) => console.error('pageerror', e.message));
  await page.addInitScript(BRIDGE_COUNTER);
  await page.goto(host.url);
  await page.getByRole('button', { name: 'Apply bundle…' }).first().waitFor();
  return { page, close: () => context.close() };
}

const stats = (xs) => {
  const s = xs.slice().sort((a, b) => a - b);
  return { min: s[0], median: median(s), max: s[s.length - 1] };
};
const sec = (ms) => (ms / 1000).toFixed(3);
const range = (xs) => {
  const { min, median: m, max } = stats(xs);
  return `${sec(min)}-${sec(max)} (${sec(m)})`;
};

/** Where the first jobs' time went, page clock, median over rounds of each phase's end. */
const PHASES = [
  ['invokeSent', 'click to job:start sent'],
  ['invokeAnswered', 'job:start answered'],
  ['hostStarted', 'host started the job'],
  ['engineStart', "engine's start event"],
  ['firstEvents', 'first events in the page'],
  ['rowShown', 'row rendered'],
  ['engineDone', "engine's done event"],
  ['doneReceived', 'done in the page'],
  ['rowDone', 'row shows Done'],
];

/**
 * Each round is the app as a user opens it on a bundle: a fresh web host (its own data folder, as
 * on a first start) and a fresh page; the first job is the apply, timed from the click to the row's
 * Done. Later jobs (an apply and a clone) follow in the same page, then the `sluice` and hg
 * processes on the same inputs, so app and processes interleave under the same load.
 */
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
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu'],
  });
  const rows = {
    app: { applyFirst: [], apply: [], clone: [] },
    cli: { apply: [], clone: [] },
    hg: { apply: [], clone: [] },
  };
  try {
    for (let i = 0; i < reps; i++) {
      const hostDir = fresh('host');
      const host = await startWebHost(hostDir, env);
      try {
        const app = await openApp(browser, host);
        for (const [key, fn] of [
          ['applyFirst', (d) => appApply(app.page, bundle, d)],
          ['apply', (d) => appApply(app.page, bundle, d)],
          ['clone', (d) => appClone(app.page, hgServe.url, d)],
        ]) {
          const d = fresh(`app-${key}`);
          try {
            rows.app[key].push(await fn(d));
          } catch (e) {
            await app.page.screenshot({ path: '/tmp/app27-fail.png' });
            throw e;
          }
          const r = rows.app[key].at(-1);
          console.error(`app bench: round ${i + 1}, ${key} ${r.clickToDoneMs.toFixed(0)} ms`);
          rmSync(d, { recursive: true, force: true });
        }
        await app.close();
      } finally {
        await stopChild(host.child);
        rmSync(hostDir, { recursive: true, force: true });
      }
      for (const kind of ['apply', 'clone']) {
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
    await stopChild(hgServe.child);
  }
  report(rows, reps, say);
  if (process.env.APP_BENCH_JSON) console.log(JSON.stringify(rows));
}

function report(rows, reps, say) {
  const table = [];
  const summary = [];
  const cliApply = rows.cli.apply.map((r) => r.wallMs);
  const first = rows.app.applyFirst.map((r) => r.clickToDoneMs);
  const f = stats(first);
  const c = stats(cliApply);
  for (const kind of ['apply', 'clone']) {
    const app = rows.app[kind];
    const what = kind === 'apply' ? 'apply medium packed1' : 'clone medium from hg serve';
    const appClick = median(app.map((r) => r.clickToDoneMs));
    const appEngine = median(app.map((r) => r.engineMs));
    const cliWalls = rows.cli[kind].map((r) => r.wallMs);
    const cliWall = median(cliWalls);
    const cliEngine = median(rows.cli[kind].map((r) => r.engineMs));
    const hgWall = median(rows.hg[kind].map((r) => r.wallMs));
    const msgs = median(app.map((r) => r.bridge.jobEvents));
    const entries = median(app.map((r) => r.bridge.fileEntries));
    const kb = median(app.map((r) => r.bridge.bytes)) / 1024;
    const appCpu = median(app.map((r) => r.hostCpuMs));
    const cliCpu = median(rows.cli[kind].map((r) => r.cpuMs));
    if (kind === 'apply') {
      const fe = median(rows.app.applyFirst.map((r) => r.engineMs));
      table.push([
        `${what}: app, first job in a fresh window`,
        range(first),
        sec(fe),
        String(median(rows.app.applyFirst.map((r) => r.bridge.jobEvents))),
        `${(f.median / c.median).toFixed(2)}x (max ${(f.max / c.max).toFixed(2)}x)`,
        (fe / cliEngine).toFixed(2) + 'x',
        (hgWall / f.median).toFixed(2) + 'x',
      ]);
    }
    table.push([
      `${what}: app, later job, click to Done`,
      range(app.map((r) => r.clickToDoneMs)),
      sec(appEngine),
      `${msgs} (${entries} file entries)`,
      `${(appClick / cliWall).toFixed(2)}x`,
      (appEngine / cliEngine).toFixed(2) + 'x',
      (hgWall / appClick).toFixed(2) + 'x',
    ]);
    table.push([
      `${what}: sluice process`,
      range(cliWalls),
      sec(cliEngine),
      '',
      '1.00x',
      '1.00x',
      (hgWall / cliWall).toFixed(2) + 'x',
    ]);
    table.push([`${what}: hg process`, sec(hgWall), '', '', '', '', '1.00x']);
    summary.push(
      `${kind}, later jobs: ${msgs} job:events messages and ${kb.toFixed(0)} KB over the bridge per job (${entries} file entries); the whole host process ${appCpu.toFixed(0)} ms CPU against ${cliCpu.toFixed(0)} ms for the sluice process (${(appCpu / cliCpu).toFixed(2)}x; CPU, unlike wall time, barely moves with the machine's load); click-to-Done ${(appClick / cliWall).toFixed(2)}x the CLI process (target <= 1.05x)`,
    );
  }
  summary.unshift(
    `apply, first job in a fresh window: ${range(first)} s against ${range(cliApply)} s for the sluice process; median ${(f.median / c.median).toFixed(2)}x, slowest ${(f.max / c.max).toFixed(2)}x the slowest process, slowest ${(f.max / c.median).toFixed(2)}x the median process (target <= 1.2x, spread included)`,
  );
  say(
    `\n### App (web host in Chromium, the engine worker Electron main also runs) vs processes, ${reps} rounds, each a fresh host and page; min-max (median) or medians`,
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
  const phaseRows = PHASES.map(([key, label]) => {
    const firstAt = rows.app.applyFirst.map((r) => r.phases[key]).filter((x) => x !== undefined);
    const laterAt = rows.app.apply.map((r) => r.phases[key]).filter((x) => x !== undefined);
    const ms = (xs) =>
      xs.length
        ? `${stats(xs).median.toFixed(0)} (${stats(xs).min.toFixed(0)}-${stats(xs).max.toFixed(0)})`
        : '';
    return [label, ms(firstAt), ms(laterAt)];
  });
  say("\nWhere the apply's time goes, ms after the click on the page clock: median (min-max)");
  say(fmtTable(['', 'first job', 'later job'], phaseRows));
  for (const s of summary) say(s);
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
    await run({ corpusDir, workDir, reps: Number(values.reps) });
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}
