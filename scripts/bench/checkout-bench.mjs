// Checkout benchmark: `sluice update` against `hg update` (which forks workers) and `tar -x` of the
// same working copy, from a null working copy. Each run gets a fresh `hg share` of the corpus, so
// the store is read where it is and only the working copy (plus .hg/dirstate) is written under the
// run's directory; that is also what lets slowclose.so (SLOWCLOSE_PREFIX = the run's directory)
// slow only the closes of written files, as NTFS would. Whole processes, start-up included; medians.
//
// hg under close latency is stopped after hgLatencyLimitS (default 180 s: on the large corpus's 99k
// files, on a loaded machine, it can take several minutes) and its row says so.
//
// As a module (scripts/bench.mjs's checkout section): run({ corpusDir, workDir, preset, reps, say }).
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, treeSize } from './corpus.mjs';
import { fmtTable, measure, medianOf } from './measure.mjs';
import { buildSlowclose, slowcloseEnv } from './slowclose.mjs';

const HG_ENV = { ...process.env, HGPLAIN: '1', HGRCPATH: '/dev/null', LC_ALL: 'C' };
const SHARE = ['--config', 'extensions.share='];

export async function run({
  corpusDir,
  workDir,
  preset,
  reps,
  say,
  latencyUs = 1000,
  hgLatencyLimitS = 180,
}) {
  const SLUICE = join(ROOT, 'bin', 'sluice.cjs');
  mkdirSync(workDir, { recursive: true });
  let n = 0;
  const share = () => {
    const d = join(workDir, `wc-${++n}`);
    const r = spawnSync('hg', [...SHARE, 'share', '-q', '-U', corpusDir, d], {
      env: HG_ENV,
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`hg share failed: ${r.stderr}`);
    return d;
  };
  const once = async (cmd, args, d, env, timeoutMs) => {
    try {
      return await measure(cmd, args, timeoutMs ? { env, timeoutMs } : { env });
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  };
  // the working copy as hg writes it, as a tar
  const ref = share();
  spawnSync('hg', ['-R', ref, 'update', '-q'], { env: HG_ENV });
  const all = treeSize(ref);
  const dotHg = treeSize(join(ref, '.hg'));
  const files = all.files - dotHg.files;
  const bytes = all.bytes - dotHg.bytes;
  const tarball = join(workDir, 'wc.tar');
  spawnSync('tar', ['-cf', tarball, '--exclude=./.hg', '-C', ref, '.']);
  rmSync(ref, { recursive: true, force: true });

  const tar = (env) => () => {
    const d = join(workDir, `tar-${++n}`);
    mkdirSync(d);
    return once('tar', ['-xf', tarball, '-C', d], d, env);
  };
  const hgUpdate =
    (env, extra = [], timeoutMs) =>
    () => {
      const d = share();
      return once('hg', ['-R', d, ...extra, 'update', '-q'], d, { ...HG_ENV, ...env }, timeoutMs);
    };
  const sluice =
    (env, extra = []) =>
    () => {
      const d = share();
      return once('node', [SLUICE, 'update', '-q', d, ...extra], d, env);
    };

  const head = ['', 'wall s', 'user s', 'sys s', 'MB/s', 'files/s', 'RSS MB', 'vs tar', 'vs hg'];
  const row = (label, r, rTar, rHg) =>
    r.code !== 0
      ? [
          label,
          r.timedOut ? `stopped after ${(r.wallMs / 1000).toFixed(0)} s` : 'FAILED',
          '',
          '',
          '',
          '',
          '',
          '',
          '',
        ]
      : [
          label,
          (r.wallMs / 1000).toFixed(3),
          (r.userMs / 1000).toFixed(3),
          (r.sysMs / 1000).toFixed(3),
          (bytes / 1e6 / (r.wallMs / 1000)).toFixed(1),
          Math.round(files / (r.wallMs / 1000)),
          (r.maxRssKb / 1024).toFixed(0),
          rTar ? (r.wallMs / rTar.wallMs).toFixed(2) + 'x' : '',
          rHg ? (r.wallMs / rHg.wallMs).toFixed(2) + 'x' : '',
        ];
  say(
    `\n### Checkout (update from null), ${preset} corpus: ${files} files, ${(bytes / 1e6).toFixed(1)} MB ` +
      `(median of ${reps}; hg share of the corpus per run)`,
  );
  const rTar = await medianOf(reps, tar(process.env));
  const rHg = await medianOf(reps, hgUpdate({}));
  const rS = await medianOf(reps, sluice(process.env));
  say(
    fmtTable(head, [
      row('tar -x (working copy)', rTar, rTar, rHg),
      row('hg update', rHg, rTar, rHg),
      row('sluice update', rS, rTar, rHg),
    ]),
  );
  say(
    `sluice update: ${(rS.wallMs / rHg.wallMs).toFixed(2)}x hg's time, ${(rS.wallMs / rTar.wallMs).toFixed(2)}x tar's`,
  );

  const so = buildSlowclose(workDir);
  if (!so) {
    say('(slowclose.so could not be built: no cc; emulated close latency skipped)');
    return '';
  }
  const env = slowcloseEnv(so, workDir, latencyUs);
  say(
    `\n### Checkout with ${latencyUs / 1000} ms emulated close() latency (slowclose.so), ${preset} corpus (1 run each)`,
  );
  const lTar = await medianOf(1, tar(env));
  const limitMs = hgLatencyLimitS * 1000;
  const lHg = await medianOf(1, hgUpdate(env, [], limitMs));
  const lHgOn = await medianOf(1, hgUpdate(env, ['--config', 'worker.backgroundclose=true'], limitMs));
  const lOff = await medianOf(1, sluice(env, ['--background-close', 'off']));
  const lOn = await medianOf(1, sluice(env, ['--background-close', 'on']));
  const lRow = (label, r, base) => [
    ...row(label, r, rTar, rHg).slice(0, 7),
    base && r.code === 0 ? (r.wallMs / base.wallMs).toFixed(2) + 'x' : '',
  ];
  say(
    fmtTable(
      [...head.slice(0, 7), 'vs its no-latency time'],
      [
        lRow('tar -x (closes inline)', lTar, rTar),
        lRow('hg update', lHg, rHg),
        lRow('hg update, worker.backgroundclose=true', lHgOn, rHg),
        lRow('sluice update, closer off', lOff, rS),
        lRow('sluice update, closer on', lOn, rS),
      ],
    ),
  );
  if (lHg.timedOut || lHgOn.timedOut)
    say(`(hg update under the latency was stopped after ${hgLatencyLimitS} s: its row is skipped)`);
  return '';
}
