// Pull benchmark (not a test): changegroups over loopback, side by side.
//   1. pull clone from the same `hg serve` (stream clones off): `sluice clone --pull` vs `hg clone --pull -U`
//   2. servers for the same client: `hg clone --pull -U` from `sluice serve` vs from `hg serve`
//   3. an incremental pull of the last 100 changesets into a clone made at tip-100:
//      `sluice pull` and `hg pull` from hg serve, `hg pull` from sluice serve
// Columns: wall, client CPU, client peak RSS, server CPU for that run (/proc delta), store size of
// the result (how well the receiver stored the deltas).
//
//   node scripts/bench/pull-bench.mjs [CORPUS] [--reps N]
// or `npm run bench -- --sections pull` (run({ corpusDir, workDir, reps, say })).

import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { fmtTable, measure, sectionArgs } from './measure.mjs';
import { SLUICE, cpuMs, prepare, startServer, storeBytes } from './wire-bench.mjs';

const ENV = { ...process.env, HGPLAIN: '1', HGRCPATH: '' };
delete ENV.NODE_EXTRA_CA_CERTS;

export async function run({ corpusDir, workDir, reps = 3, say = console.log } = {}) {
  const { corpus, work } = prepare('pull-bench', corpusDir, workDir);
  const count =
    Number(
      spawnSync('hg', ['-R', corpus, 'log', '-r', 'tip', '-T', '{rev}'], { env: ENV, encoding: 'utf8' })
        .stdout,
    ) + 1;
  const baseRev = String(Math.max(0, count - 101));
  const base = join(work, 'base');
  const r0 = spawnSync('hg', ['clone', '-q', '-U', '-r', baseRev, corpus, base], {
    env: ENV,
    encoding: 'utf8',
  });
  if (r0.status !== 0) throw new Error(`pull-bench: hg clone -r ${baseRev}: ${r0.stderr}`);
  const servers = {};
  let n = 0;
  try {
    servers.hg = await startServer('hg', corpus, ['--config', 'server.uncompressed=false']);
    servers.sl = await startServer('sluice', corpus);

    const job = (client, kind, server) => {
      const dest = join(work, `run-${++n}`);
      if (kind === 'clone') {
        const args =
          client === 'hg'
            ? ['hg', ['clone', '-q', '--pull', '-U', server.url, dest]]
            : [process.execPath, [SLUICE, 'clone', server.url, dest, '-q', '--pull', '-U']];
        return { dest, args, prepare: () => undefined };
      }
      const args =
        client === 'hg'
          ? ['hg', ['-R', dest, 'pull', '-q', server.url]]
          : [process.execPath, [SLUICE, 'pull', dest, server.url, '-q']];
      return { dest, args, prepare: () => spawnSync('cp', ['-a', base, dest]) };
    };
    const once = async (client, kind, server) => {
      const j = job(client, kind, server);
      j.prepare();
      const before = cpuMs(server.pid);
      const r = await measure(j.args[0], j.args[1], { env: ENV });
      const serverCpu = cpuMs(server.pid) - before;
      const size = r.code === 0 ? storeBytes(j.dest) : 0;
      rmSync(j.dest, { recursive: true, force: true });
      if (r.code !== 0)
        throw new Error(`${client} ${kind} from ${server.url} failed: ${r.stderr.slice(-2000)}`);
      return { ...r, serverCpu, size };
    };
    const configs = [
      ['hg', 'clone', servers.hg, 'hg clone --pull -U', 'hg serve'],
      ['sluice', 'clone', servers.hg, 'sluice clone --pull', 'hg serve'],
      ['hg', 'clone', servers.sl, 'hg clone --pull -U', 'sluice serve'],
      ['hg', 'pull', servers.hg, 'hg pull (100 changesets)', 'hg serve'],
      ['sluice', 'pull', servers.hg, 'sluice pull (100 changesets)', 'hg serve'],
      ['hg', 'pull', servers.sl, 'hg pull (100 changesets)', 'sluice serve'],
    ];
    for (const [c, k, s] of configs) await once(c, k, s); // warm-up
    const results = configs.map(() => []);
    for (let i = 0; i < reps; i++)
      for (const [k, [c, kind, s]] of configs.entries()) results[k].push(await once(c, kind, s));
    const med = results.map((rs) => rs.sort((a, b) => a.wallMs - b.wallMs)[Math.floor(rs.length / 2)]);
    const rows = configs.map(([, , , label, server], i) => {
      const r = med[i];
      return [
        label,
        server,
        (r.wallMs / 1000).toFixed(3),
        (r.userMs / 1000).toFixed(3),
        (r.sysMs / 1000).toFixed(3),
        (r.maxRssKb / 1024).toFixed(0),
        (r.serverCpu / 1000).toFixed(3),
        (r.size / 1e6).toFixed(1),
      ];
    });
    const [hgClone, slClone, hgCloneSl, hgPull, slPull, hgPullSl] = med;
    const text = [
      `\n## pull: changegroups over loopback, ${corpus} (${count} changesets, ${(storeBytes(corpus) / 1e6).toFixed(1)} MB store), median of ${reps}`,
      fmtTable(
        [
          '',
          'server',
          'wall s',
          'client user s',
          'client sys s',
          'client RSS MB',
          'server CPU s',
          'store MB',
        ],
        rows,
      ),
      '',
      `pull clone on hg serve: sluice takes ${(slClone.wallMs / hgClone.wallMs).toFixed(2)}x hg's time (target 0.7x); ` +
        `hg clone --pull from sluice serve takes ${(hgCloneSl.wallMs / hgClone.wallMs).toFixed(2)}x of from hg serve (target 0.9x), server CPU ${(hgCloneSl.serverCpu / 1000).toFixed(2)} s vs ${(hgClone.serverCpu / 1000).toFixed(2)} s`,
      `incremental pull of 100 changesets: sluice ${(slPull.wallMs / hgPull.wallMs).toFixed(2)}x hg's time; hg from sluice serve ${(hgPullSl.wallMs / hgPull.wallMs).toFixed(2)}x of from hg serve`,
    ].join('\n');
    say(text);
    return undefined;
  } finally {
    for (const s of Object.values(servers)) s.stop();
    if (!workDir) rmSync(work, { recursive: true, force: true });
    else rmSync(base, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { corpus, reps } = sectionArgs(process.argv.slice(2));
  await run({ corpusDir: corpus, reps });
}
