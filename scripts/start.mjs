// `npm start`: builds the app when the build is missing or older than the sources, then runs it:
// in Electron when its binary is installed and runs, otherwise (e.g. a headless machine, or an
// install without the Electron download) as the web host, which serves the same renderer at
// http://127.0.0.1:PORT with the same API and prints the URL to open (it carries an access token).
//
//   npm start                       Electron, or the web host when Electron is missing
//   npm start -- --web              the web host even when Electron is there
//   npm start -- --port 8123        the web host on a fixed port (default: a free one)
//   npm start -- path/to/some.hg    open a bundle at start (Electron)
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const args = process.argv.slice(2);
const forceWeb = args.includes('--web');
const passArgs = args.filter((a) => a !== '--web');

// The app's CommonJS entries (out/main/main.cjs, web-host.cjs) size libuv's threadpool themselves.
const env = { ...process.env };

const outputs = [
  'out/main/main.cjs',
  'out/main/bootstrap.cjs',
  'out/main/index.js',
  'out/main/engine-worker.js',
  'out/main/web-host.cjs',
  'out/main/web-host.js',
  'out/main/bridge.js',
  'out/preload/index.cjs',
  'out/renderer/index.html',
].map((p) => join(root, p));
const sources = [join(root, 'src'), join(root, 'electron.vite.config.ts'), join(root, 'package.json')];

function newestMtime(path) {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs;
  for (const name of readdirSync(path)) {
    if (/\.test\.tsx?$/.test(name)) continue;
    newest = Math.max(newest, newestMtime(join(path, name)));
  }
  return newest;
}

function buildIsCurrent() {
  if (!outputs.every((p) => existsSync(p))) return false;
  const oldestOutput = Math.min(...outputs.map((p) => statSync(p).mtimeMs));
  return sources.every((s) => !existsSync(s) || newestMtime(s) <= oldestOutput);
}

if (!buildIsCurrent()) {
  console.log('start: building the app (electron-vite build)…');
  const r = spawnSync(process.platform === 'win32' ? 'npx.cmd' : 'npx', ['electron-vite', 'build'], {
    cwd: root,
    stdio: 'inherit',
    env,
    shell: process.platform === 'win32',
  });
  if (r.status !== 0) {
    console.error('start: the build failed, see above');
    process.exit(r.status ?? 1);
  }
}

/**
 * The Electron binary's path when it is installed and runs here, else null with the reason. Found
 * like the electron package's index.js does, minus its fallback: requiring 'electron' from Node
 * starts a ~100 MB download when the binary is missing.
 */
function electronBinary() {
  let dir;
  try {
    dir = dirname(require.resolve('electron/package.json'));
  } catch {
    return { path: null, reason: 'the electron package is not installed' };
  }
  const pathFile = join(dir, 'path.txt');
  const executable = existsSync(pathFile) ? readFileSync(pathFile, 'utf8').trim() : '';
  const override = process.env.ELECTRON_OVERRIDE_DIST_PATH;
  const path = override
    ? join(override, executable || 'electron')
    : executable
      ? join(dir, 'dist', executable)
      : null;
  if (!path || !existsSync(path)) {
    return {
      path: null,
      reason: 'its binary was not downloaded (get it with `node node_modules/electron/install.js`)',
    };
  }
  const r = spawnSync(path, ['--version'], {
    env: { ...env, ELECTRON_RUN_AS_NODE: '1' },
    timeout: 15_000,
    encoding: 'utf8',
  });
  if (r.status !== 0)
    return {
      path: null,
      reason: `the Electron binary does not run here (${r.error?.message ?? (r.stderr || `exit ${r.status}`).trim()})`,
    };
  return { path, reason: null };
}

function run(command, commandArgs) {
  const child = spawn(command, commandArgs, { cwd: root, stdio: 'inherit', env });
  const forward = (signal) => child.kill(signal);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

const electron = forceWeb ? { path: null, reason: '--web was given' } : electronBinary();
if (electron.path) {
  console.log(`start: launching Electron (${electron.path})`);
  run(electron.path, ['.', ...passArgs]);
} else {
  console.log(`start: Electron is missing: ${electron.reason}.`);
  console.log('start: starting the web host instead: the same app in your browser, bound to 127.0.0.1.');
  run(process.execPath, [join(root, 'out', 'main', 'web-host.cjs'), ...passArgs]);
}
