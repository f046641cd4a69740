// Test-only helpers shared by the per-area support files (format, revlog, store), the fuzz
// suite, the interop tests and the e2e fixtures (not imported by engine code): the golden
// fixtures, the probe of every external tool (hg, nginx, sshd, chromium, cc, ...), temp dirs, a
// PRNG. One definition here so the copies cannot drift apart.

import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root, and its sibling `../shared` (bench corpus generator, slowclose shim, docs). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const SHARED = resolve(ROOT, '..', 'shared');
export const MAKE_CORPUS = join(SHARED, 'bench', 'make-corpus.sh');
export const FIXTURES = join(ROOT, 'test', 'fixtures', 'hg');
export const SHAPES = ['default', 'legacy'] as const;
export type Shape = (typeof SHAPES)[number];

/** The stream bundles scripts/make-fixtures.sh writes for each shape. */
export const FIXTURE_BUNDLES = [
  'packed1.hg',
  'stream-v2.hg',
  'stream-v2-zstd.hg',
  'stream-v2-gzip.hg',
  'stream-v2-bzip2.hg',
  'stream-v2-phases.hg',
] as const;

export function fixture(shape: Shape, name: string): Buffer {
  return readFileSync(join(FIXTURES, shape, name));
}

/** True when `cmd args` runs and exits 0 (false when it is missing). */
export function probe(cmd: string, args: string[]): boolean {
  try {
    return spawnSync(cmd, args, { stdio: 'ignore', timeout: 30_000 }).status === 0;
  } catch {
    return false;
  }
}

/**
 * The Python that has the `mercurial` module: Debian's, not a PATH python3 from pyenv or a venv;
 * SLUICE_HG_PYTHON where hg came from pip (the workflows).
 */
export const HG_PYTHON = process.env.SLUICE_HG_PYTHON ?? '/usr/bin/python3';

/** CI=true (or 1): every external tool must be there; a missing one fails instead of skipping. */
export const IN_CI = process.env.CI === 'true' || process.env.CI === '1';
/**
 * SLUICE_REQUIRE_ELECTRON=1: the Electron binary must be there (the workflows set it where npm ci
 * installs one); without it a run without Electron says loudly that the Electron specs did not run.
 */
export const REQUIRE_ELECTRON = process.env.SLUICE_REQUIRE_ELECTRON === '1';

const executable = (path: string): string | undefined => {
  try {
    accessSync(path, constants.X_OK);
    return path;
  } catch {
    return undefined;
  }
};
const onPath = (cmd: string, args: string[]): string | undefined => (probe(cmd, args) ? cmd : undefined);

/**
 * The installed Electron binary, found the way the electron package's index.js finds it but
 * without its fallback: requiring 'electron' from Node downloads the binary when it is missing,
 * which a test run must never do.
 */
function installedElectron(): string | undefined {
  let dir: string;
  try {
    dir = dirname(createRequire(join(ROOT, 'package.json')).resolve('electron/package.json'));
  } catch {
    return undefined;
  }
  const pathFile = join(dir, 'path.txt');
  const executable = existsSync(pathFile) ? readFileSync(pathFile, 'utf8').trim() : '';
  const override = process.env.ELECTRON_OVERRIDE_DIST_PATH;
  const full = override
    ? join(override, executable || 'electron')
    : executable
      ? join(dir, 'dist', executable)
      : undefined;
  return full && existsSync(full) ? full : undefined;
}

/**
 * Every external tool a test may need, defined once: what it is called in a skip title and how to
 * find it (a command on PATH or an absolute path). Probed lazily, once per process.
 */
const TOOLS = {
  hg: { title: 'hg', find: () => onPath('hg', ['--version', '-q']) },
  'hg-python': {
    title: `${HG_PYTHON} with the mercurial module`,
    find: () => (probe(HG_PYTHON, ['-c', 'import mercurial.store']) ? HG_PYTHON : undefined),
  },
  nginx: { title: 'nginx', find: () => executable('/usr/sbin/nginx') ?? onPath('nginx', ['-v']) },
  sshd: { title: 'sshd (/usr/sbin/sshd)', find: () => executable('/usr/sbin/sshd') },
  ssh: { title: 'ssh (the OpenSSH client)', find: () => onPath('ssh', ['-V']) },
  chromium: {
    title: 'chromium',
    find: () => executable(process.env.SLUICE_CHROMIUM ?? '/usr/bin/chromium'),
  },
  cc: { title: 'a C compiler (cc)', find: () => onPath(process.env.CC ?? 'cc', ['--version']) },
  zstd: { title: 'the zstd command', find: () => onPath('zstd', ['--version']) },
  // a permission test needs a user other than root (root writes through chmod -w): as root, setpriv
  // runs the command as nobody; as anyone else no tool is needed
  unprivileged: {
    title: 'setpriv (util-linux), to run as a user other than root',
    find: () => (process.getuid?.() !== 0 ? 'self' : onPath('setpriv', ['--version'])),
  },
  'make-corpus': {
    title: `${MAKE_CORPUS} (the sibling ../shared folder)`,
    find: () => executable(MAKE_CORPUS),
  },
  // required by SLUICE_REQUIRE_ELECTRON=1, not by CI=true: a CI job may run without a display
  electron: { title: 'the Electron binary', find: installedElectron },
} satisfies Record<string, { title: string; find: () => string | undefined }>;
export type Tool = keyof typeof TOOLS;
export const TOOL_NAMES = Object.keys(TOOLS) as Tool[];

/**
 * SLUICE_CI_WITHOUT=nginx,sshd: tools a CI runner cannot provide (a Windows runner has no
 * /usr/sbin/sshd). Under CI=true they skip, loudly, instead of failing; every other tool is still
 * required. A name that is not a tool fails at once, so a typo cannot hide a missing one.
 */
export function parseCiWithout(value: string | undefined): ReadonlySet<Tool> {
  const names = (value ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  const unknown = names.filter((t) => !(t in TOOLS));
  if (unknown.length) throw new Error(`SLUICE_CI_WITHOUT names no tool: ${unknown.join(', ')}`);
  return new Set(names as Tool[]);
}
const CI_WITHOUT = parseCiWithout(process.env.SLUICE_CI_WITHOUT);

/** Whether a missing `tool` fails the run here instead of skipping the tests that need it. */
export function required(tool: Tool): boolean {
  return tool === 'electron' ? REQUIRE_ELECTRON : IN_CI && !CI_WITHOUT.has(tool);
}

const found = new Map<Tool, string | undefined>();
/** The command or path that runs `tool`, or undefined when it is not installed. */
export function toolPath(tool: Tool): string | undefined {
  if (!found.has(tool)) found.set(tool, TOOLS[tool].find());
  return found.get(tool);
}

/** The tools of `tools` that are not installed. */
const absent = (tools: Tool[]): Tool[] => tools.filter((t) => toolPath(t) === undefined);

/**
 * For `describe.skipIf` / `it.skipIf`: true when one of `tools` is missing, so the tests that
 * need it skip (give the title `skipNote(...)`). When the tool is `required` (CI=true; Electron:
 * SLUICE_REQUIRE_ELECTRON=1) a missing tool throws instead, which fails the file or suite that
 * needs it: CI never skips.
 */
export function missing(...tools: Tool[]): boolean {
  const gone = absent(tools);
  const needed = gone.filter(required);
  if (needed.length) {
    const why = [...new Set(needed.map((t) => (t === 'electron' ? 'SLUICE_REQUIRE_ELECTRON=1' : 'CI=true')))];
    throw new Error(
      `${why.join(', ')}: ${needed.map((t) => TOOLS[t].title).join(', ')} not installed, and these tests need it`,
    );
  }
  return gone.length > 0;
}

/** A title suffix naming what is missing (' (skipped: hg not installed)'), '' when all are here. */
export function skipNote(...tools: Tool[]): string {
  const gone = absent(tools);
  const where = gone.some((t) => CI_WITHOUT.has(t)) ? ' on this runner (SLUICE_CI_WITHOUT)' : '';
  return gone.length ? ` (skipped: ${gone.map((t) => TOOLS[t].title).join(', ')} not installed${where})` : '';
}

export const HG_ENV = { ...process.env, HGPLAIN: '1', HGUSER: 'Test <test@example.com>', HGRCPATH: '' };

export interface RunResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs hg (HGPLAIN, no user config); never throws on a non-zero exit. */
export function hgSync(args: string[], cwd?: string): RunResult {
  const r = spawnSync('hg', args, { cwd, env: HG_ENV, encoding: 'utf8', maxBuffer: 256 << 20 });
  return { status: r.status ?? -1, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

/** makeTempDir of one test area: a new dir `sluice-<area>-<label>-XXXXXX` under os.tmpdir(). */
export function tempDirMaker(area: string): (label: string) => string {
  return (label) => mkdtempSync(join(tmpdir(), `sluice-${area}-${label}-`));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** Extracts test/fixtures/hg/<shape>/repo.tar.gz (a repo's .hg: requires, store, cache) into `dir`. */
export function extractFixtureRepo(shape: Shape, dir: string): string {
  const res = spawnSync('tar', ['-xzf', join(FIXTURES, shape, 'repo.tar.gz'), '-C', dir]);
  if (res.status !== 0) throw new Error(`tar failed: ${res.stderr}`);
  return dir;
}

/** Extracts the fixture repo of `shape` into a new dir `<parent>/<shape>`; returns that dir. */
export function extractFixture(shape: Shape, parent: string): string {
  const dest = join(parent, shape);
  mkdirSync(dest, { recursive: true });
  return extractFixtureRepo(shape, dest);
}

/** Async chunks with an await between them (like a socket or a file read loop). */
export async function* chunked(pieces: readonly Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const p of pieces) {
    await Promise.resolve();
    yield p;
  }
}

/** Small deterministic PRNG (mulberry32) so a failing random case can be replayed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
