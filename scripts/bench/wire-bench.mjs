// Wire benchmark (not a test): stream clones over loopback, side by side.
//   1. clients on the same `hg serve`: `sluice clone` vs `hg clone --stream -U`
//   2. servers for the same client: `hg clone --stream -U` against `sluice serve` vs `hg serve`
//   3. sluice serve with 4 KiB vs 32 KiB bundle2 payload chunks
//   4. the same clones over ssh through a private local sshd (scripts/sshd-harness.mjs): hg and
//      sluice clients against `hg serve --stdio` and `sluice -R REPO serve --stdio` (server CPU is
//      not shown: each ssh clone starts its own server process)
// Columns: wall, client CPU (user/sys, from wait4), MB/s of store data, client peak RSS, server CPU
// for that clone (utime+stime delta from /proc/PID/stat) and server peak RSS (VmHWM).
//
//   node scripts/bench/wire-bench.mjs [CORPUS] [--reps N]     (default corpus /dev/shm/corpus-medium)
// or through `npm run bench -- --sections wire`, which calls run({ corpusDir, workDir, reps, say }).
// Clones go to new directories under workDir (tmpfs) and are deleted after each measurement.

import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { fmtTable, measure, sectionArgs } from './measure.mjs';
import { freePort, waitForHttp } from '../net-harness.mjs';
import { startSshd } from '../sshd-harness.mjs';

const ROOT = resolve(fileURLToPath(import.meta.url), '..', '..', '..');
export const SLUICE = join(ROOT, 'out', 'cli', 'sluice.mjs');
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

export function storeBytes(repo) {
  let bytes = 0;
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) bytes += statSync(p).size;
    }
  };
  walk(join(repo, '.hg', 'store'));
  return bytes;
}

/** CPU of a process and of its children it has reaped, in ms */
export function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime + stime, plus cutime + cstime: hg serve forks a child per request (ForkingMixIn) and
  // reaps it, so a request's CPU lands in the children's fields
  return (
    ((Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 1000) / CLK_TCK
  );
}

export function peakRssMb(pid) {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

export async function startServer(kind, corpus, extra = []) {
  const port = await freePort();
  const env = { ...process.env, HGPLAIN: '1', HGRCPATH: '' };
  const proc =
    kind === 'hg'
      ? spawn('hg', ['serve', '-R', corpus, '-a', '127.0.0.1', '-p', String(port), ...extra], {
          stdio: 'ignore',
          env,
        })
      : spawn(process.execPath, [SLUICE, 'serve', corpus, '--port', String(port), '-q', ...extra], {
          stdio: 'ignore',
          env,
        });
  const url = `http://127.0.0.1:${port}/`;
  await waitForHttp(`${url}?cmd=capabilities`, 30_000);
  return { url, pid: proc.pid, proc, stop: () => proc.kill('SIGTERM') };
}

/** The corpus (checked to be a repository), the CLI (built when missing) and the bench's work folder. */
export function prepare(name, corpusDir, workDir) {
  const corpus = resolve(corpusDir ?? '/dev/shm/corpus-medium');
  if (!existsSync(join(corpus, '.hg', 'store', '00changelog.i')))
    throw new Error(`${name}: no repository at ${corpus}`);
  if (!existsSync(SLUICE))
    spawnSync(process.execPath, [join(ROOT, 'scripts', 'build-cli.mjs')], { stdio: 'inherit' });
  const work = workDir ?? mkdtempSync(`/dev/shm/sluice-${name}-`);
  mkdirSync(work, { recursive: true });
  return { corpus, work };
}

export async function run({ corpusDir, workDir, reps = 3, say = console.log } = {}) {
  const { corpus, work } = prepare('wire-bench', corpusDir, workDir);
  const bytes = storeBytes(corpus);
  let n = 0;
  const servers = {};
  const rows = [];
  try {
    servers.hg = await startServer('hg', corpus);
    servers.sl32 = await startServer('sluice', corpus);
    servers.sl4 = await startServer('sluice', corpus, ['--chunk-size', '4096']);
    const sshd = existsSync('/usr/sbin/sshd') ? await startSshd() : null;
    if (sshd) {
      servers.sshd = { stop: () => void sshd.stop() };
      const remote = join(work, 'sluice-remote');
      writeFileSync(remote, `#!/bin/sh\nexec '${process.execPath}' '${SLUICE}' "$@"\n`);
      chmodSync(remote, 0o755);
      const url = sshd.url(corpus); // //abs/path
      servers.sshHg = { url, ssh: sshd.sshCommand, remotecmd: 'hg', pid: null, stop: () => {} };
      servers.sshSl = { url, ssh: sshd.sshCommand, remotecmd: remote, pid: null, stop: () => {} };
    } else say('(no /usr/sbin/sshd: the ssh rows are skipped)');

    /** one clone: client rusage from measure(), server CPU delta from /proc */
    const once = async (client, server) => {
      const dest = join(work, `clone-${++n}`);
      const ssh = server.ssh ? ['--ssh', server.ssh, '--remotecmd', server.remotecmd] : [];
      const args =
        client === 'hg'
          ? ['hg', ['clone', '-q', '--stream', '-U', ...ssh, server.url, dest]]
          : [process.execPath, [SLUICE, 'clone', server.url, dest, '-q', '-U', '--stream', 'v2', ...ssh]];
      const before = server.pid ? cpuMs(server.pid) : 0;
      const r = await measure(args[0], args[1], { env: { ...process.env, HGPLAIN: '1', HGRCPATH: '' } });
      const serverCpu = server.pid ? cpuMs(server.pid) - before : NaN;
      rmSync(dest, { recursive: true, force: true });
      if (r.code !== 0) throw new Error(`${client} clone from ${server.url} failed: ${r.stderr}`);
      return { ...r, serverCpu };
    };
    // round-robin over the configurations so that load changes on a shared machine hit all alike
    const configs = [
      ['hg', servers.hg],
      ['sluice', servers.hg],
      ['hg', servers.sl32],
      ['sluice', servers.sl32],
      ['hg', servers.sl4],
      ['sluice', servers.sl4],
      ...(servers.sshHg
        ? [
            ['hg', servers.sshHg],
            ['sluice', servers.sshHg],
            ['hg', servers.sshSl],
            ['sluice', servers.sshSl],
          ]
        : []),
    ];
    for (const [c, s] of configs) await once(c, s); // warm-up (page cache, server snapshot)
    const results = configs.map(() => []);
    for (let i = 0; i < reps; i++)
      for (const [k, [c, s]] of configs.entries()) results[k].push(await once(c, s));
    const med = results.map((rs) => rs.sort((a, b) => a.wallMs - b.wallMs)[Math.floor(rs.length / 2)]);
    const [hgOnHg, slOnHg, hgOnSl, slOnSl, hgOnSl4, slOnSl4, sshHgHg, sshSlHg, sshHgSl, sshSlSl] = med;
    const add = (label, client, server, r) =>
      rows.push([
        label,
        client,
        server,
        (r.wallMs / 1000).toFixed(3),
        (r.userMs / 1000).toFixed(3),
        (r.sysMs / 1000).toFixed(3),
        (bytes / 1e6 / (r.wallMs / 1000)).toFixed(1),
        (r.maxRssKb / 1024).toFixed(0),
        Number.isNaN(r.serverCpu) ? '-' : (r.serverCpu / 1000).toFixed(3),
      ]);
    add('1. clients, same server', 'hg clone --stream -U', 'hg serve', hgOnHg);
    add('', 'sluice clone', 'hg serve', slOnHg);
    add('2. servers, same client', 'hg clone --stream -U', 'sluice serve (32 KiB)', hgOnSl);
    add('', 'sluice clone', 'sluice serve (32 KiB)', slOnSl);
    add('3. chunk size', 'hg clone --stream -U', 'sluice serve (4 KiB)', hgOnSl4);
    add('', 'sluice clone', 'sluice serve (4 KiB)', slOnSl4);
    if (sshHgHg) {
      add('4. over ssh (local sshd)', 'hg clone --stream -U', 'hg serve --stdio', sshHgHg);
      add('', 'sluice clone', 'hg serve --stdio', sshSlHg);
      add('', 'hg clone --stream -U', 'sluice serve --stdio', sshHgSl);
      add('', 'sluice clone', 'sluice serve --stdio', sshSlSl);
    }

    const text = [
      `\n## wire: stream clone over loopback, ${corpus} (${(bytes / 1e6).toFixed(1)} MB store), median of ${reps}`,
      fmtTable(
        [
          '',
          'client',
          'server',
          'wall s',
          'client user s',
          'client sys s',
          'MB/s',
          'client RSS MB',
          'server CPU s',
        ],
        rows,
      ),
      '',
      `server peak RSS: hg serve ${peakRssMb(servers.hg.pid).toFixed(0)} MB, sluice serve (32 KiB) ${peakRssMb(servers.sl32.pid).toFixed(0)} MB, ` +
        `sluice serve (4 KiB) ${peakRssMb(servers.sl4.pid).toFixed(0)} MB`,
      `client on hg serve: sluice ${(hgOnHg.wallMs / slOnHg.wallMs).toFixed(2)}x hg's speed; ` +
        `hg client on sluice serve vs hg serve: ${(hgOnHg.wallMs / hgOnSl.wallMs).toFixed(2)}x throughput, server CPU ${(hgOnSl.serverCpu / 1000).toFixed(3)} s vs ${(hgOnHg.serverCpu / 1000).toFixed(3)} s`,
      ...(sshHgHg
        ? [
            `over ssh: sluice client on hg ${(sshHgHg.wallMs / sshSlHg.wallMs).toFixed(2)}x hg's speed; ` +
              `hg client on sluice serve --stdio vs hg serve --stdio: ${(sshHgHg.wallMs / sshHgSl.wallMs).toFixed(2)}x`,
          ]
        : []),
    ].join('\n');
    say(text);
    return undefined;
  } finally {
    for (const s of Object.values(servers)) s.stop();
    if (!workDir) rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { corpus, reps } = sectionArgs(process.argv.slice(2));
  await run({ corpusDir: corpus, reps });
}
