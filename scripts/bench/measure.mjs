// Runs one command and reports what it cost: wall, user and system CPU and peak RSS of the child
// (its whole process tree, from wait4's rusage). Node cannot read a child's rusage, so a tiny
// Python wrapper (python3 is always there where hg is) runs the command and prints RUSAGE_CHILDREN.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

const WRAPPER = `
import os, sys, time, resource, signal, subprocess, json
limit = float(sys.argv[1]) or None
t = time.perf_counter()
# its own process group, so a timeout stops the command's forked workers too (hg update's)
p = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
timed_out = False
try:
    err = p.communicate(timeout=limit)[1]
except subprocess.TimeoutExpired:
    timed_out = True
    os.killpg(p.pid, signal.SIGKILL)
    err = p.communicate()[1]
wall = time.perf_counter() - t
r = resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stderr.write(err.decode('utf-8', 'replace')[-4000:])
print(json.dumps({"code": 124 if timed_out else p.returncode, "timedOut": timed_out, "wall": wall, "user": r.ru_utime, "sys": r.ru_stime, "maxrss_kb": r.ru_maxrss}))
`;

/**
 * @param {string} cmd
 * @param {string[]} args
 * @param {{ env?: NodeJS.ProcessEnv, cwd?: string, timeoutMs?: number }} [opts] timeoutMs: the command's
 *   process group is killed then, and the result has code 124 and timedOut
 * @returns {Promise<{ code: number, timedOut: boolean, wallMs: number, userMs: number, sysMs: number, maxRssKb: number, stderr: string }>}
 */
export function measure(cmd, args, opts = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, ['-c', WRAPPER, String((opts.timeoutMs ?? 0) / 1000), cmd, ...args], {
      env: opts.env ?? process.env,
      cwd: opts.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', () => {
      try {
        const r = JSON.parse(out.trim().split('\n').pop());
        resolve({
          code: r.code,
          timedOut: r.timedOut,
          wallMs: r.wall * 1000,
          userMs: r.user * 1000,
          sysMs: r.sys * 1000,
          maxRssKb: r.maxrss_kb,
          stderr: err,
        });
      } catch {
        reject(new Error(`measure: no result from ${cmd} ${args.join(' ')}: ${err.slice(-2000)}`));
      }
    });
  });
}

/** Median by wall time of `reps` runs; `prepare(i)` makes a fresh destination for run i. */
export async function medianOf(reps, run) {
  const results = [];
  for (let i = 0; i < reps; i++) results.push(await run(i));
  const failed = results.find((r) => r.code !== 0);
  if (failed) return failed;
  results.sort((a, b) => a.wallMs - b.wallMs);
  return results[Math.floor(results.length / 2)];
}

export function fmtTable(headers, rows) {
  const cells = [headers, ...rows].map((r) => r.map((c) => String(c)));
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  const line = (r) =>
    '| ' + r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ') + ' |';
  const sep =
    '|' + widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : '-'.repeat(w + 1) + ':')).join('|') + '|';
  return [line(cells[0]), sep, ...cells.slice(1).map(line)].join('\n');
}

/**
 * A bench section's own command line, `[CORPUS] [--reps N]` (other --flags are left to the caller):
 * the corpus is the first word that is neither a flag nor the value of --reps; reps defaults to 3.
 * @param {string[]} args
 * @returns {{ corpus: string | undefined, reps: number }}
 */
export function sectionArgs(args) {
  const repsAt = args.indexOf('--reps');
  const reps = repsAt >= 0 ? Number(args[repsAt + 1]) : 3;
  const corpus = args.find((a, i) => !a.startsWith('--') && args[i - 1] !== '--reps');
  return { corpus, reps };
}

/** The Python that runs hg (its shebang), so that `import mercurial` works. */
export function hgPython() {
  const hg = spawnSync('sh', ['-c', 'command -v hg'], { encoding: 'utf8' }).stdout.trim();
  const first = spawnSync('head', ['-n', '1', hg], { encoding: 'utf8' }).stdout;
  return /^#!\s*(\S*python\S*)/.exec(first)?.[1] ?? 'python3';
}
