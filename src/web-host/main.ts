// `node out/main/web-host.cjs [--port N] [--data-dir DIR]`: the app without Electron (web-host.cjs
// sizes libuv's threadpool, then imports this module, bundled to out/main/web-host.js). Serves the
// built renderer and the bridged API on 127.0.0.1 and prints the URL (with its access token).
// scripts/start.mjs runs this when the Electron binary is missing; the e2e fixtures run it too.
import { mkdir, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { defaultCloneDir, defaultDataDir } from '../main/host/data-dir';
import { deepLinkFromArgv } from '../main/host/deep-link';
import { EngineHost } from '../main/host/engine-host';
import { WebHost } from './web-host';
import { WebPlatform } from './web-platform';

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    port: { type: 'string', default: process.env.SLUICE_PORT ?? '0' },
    'data-dir': { type: 'string' },
    'clone-dir': { type: 'string' },
    'no-sample': { type: 'boolean', default: false },
  },
});

// This file is bundled to out/main/web-host.js, beside engine-worker.js and bridge.js.
const here = dirname(fileURLToPath(import.meta.url));
const appRoot = resolve(here, '..', '..');
const dataDir = resolve(args['data-dir'] ?? defaultDataDir());
// The user's alone, as Electron's userData (Chromium makes it 0700): job logs, history and uploaded
// bundles are no other local user's business. A folder that exists keeps its mode.
await mkdir(dataDir, { recursive: true, mode: 0o700 });
const pkg = JSON.parse(await readFile(join(appRoot, 'package.json'), 'utf8')) as { version: string };

// a sluice:// link or a bundle named on the command line, checked as Electron's argv is
let openAtStart = deepLinkFromArgv(['', ...positionals], process.platform, process.cwd());

const engineHost = new EngineHost({
  platform: new WebPlatform(
    pkg.version,
    resolve(args['clone-dir'] ?? defaultCloneDir()),
    join(dataDir, 'exports'),
  ),
  dataDir,
  sampleBundle: join(appRoot, 'build', 'sample', 'sample.hg'),
  worker: { script: join(here, 'engine-worker.js') },
});
const web = new WebHost({
  engineHost,
  rendererDir: join(appRoot, 'out', 'renderer'),
  bridgeScript: await readFile(join(here, 'bridge.js'), 'utf8'),
  uploadDir: join(dataDir, 'uploads'),
  // What the command line named opens in the first page that connects (like Electron's argv).
  onConnect: (push) => {
    if (openAtStart) push({ channel: 'link:opened', payload: openAtStart });
    openAtStart = null;
  },
});
const { url } = await web.listen(Number(args.port));

console.log(`Sluice is running in your browser (web host, no Electron): open\n\n    ${url}\n`);
console.log(`data: ${dataDir}`);
// One line for scripts and the e2e fixtures to read.
console.log(`SLUICE_WEB_URL=${url}`);
// Without the sample (benchmarks, some specs) the engine worker still starts now: the first job
// after the window opens must not wait for it.
if (args['no-sample']) engineHost.prepareFirstJob();
else engineHost.warmUp();

let stopping = false;
async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  console.log(`web host: ${signal}, stopping (cancelling running jobs)`);
  await web.close();
  await engineHost.dispose();
  process.exit(0);
}
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
