// A served repository with symbolic links planted in it (its owner is not the server's user):
// neither a stream clone nor a pull may send a file from elsewhere on the server. hg's store vfs refuses a
// path through a linked folder ("traverses symbolic link"); Sluice also refuses a linked revlog
// file (hg follows it) and leaves out a linked cache, phaseroots or cache folder (hg reads as
// many bytes of the target as the link's own length).
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/main/engine/errors';
import { JobContext } from '../../src/main/engine/context/job-context';
import { cloneFromUrl } from '../../src/main/engine/operations/clone/clone';
import { writeStreamBundle } from '../../src/main/engine/streamclone/generate';
import { startServer } from '../../src/main/engine/operations/serve/http-server';
import { extractFixture, removeDir, tempDir } from '../interop/wire-support';

const SECRET = 'the server user’s private key';
let work = '';
let secretFile = '';
let secretDir = '';

beforeAll(() => {
  work = tempDir('served-symlinks');
  secretFile = join(work, 'secret.txt');
  writeFileSync(secretFile, SECRET);
  secretDir = join(work, 'elsewhere');
  mkdirSync(secretDir);
  writeFileSync(join(secretDir, 'x.i'), SECRET);
});

afterAll(() => removeDir(work));

let n = 0;
/** A fresh copy of the fixture, changed by `plant`. */
function plantedRepo(plant: (repo: string) => void): string {
  const parent = join(work, `r${n++}`);
  mkdirSync(parent);
  const repo = extractFixture('default', parent);
  plant(repo);
  return repo;
}

/** Every file under `dir`, read: none may hold the secret. */
function holdsSecret(dir: string): boolean {
  if (!existsSync(dir)) return false;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && readFileSync(join(e.parentPath, e.name), 'utf8').includes(SECRET)) return true;
  }
  return false;
}

/** Clones `repo` through `sluice serve` by stream v1 and v2: each a failure or a clone without the secret. */
async function streamClones(repo: string): Promise<(SluiceError | null)[]> {
  const server = await startServer({ repo });
  try {
    const results: (SluiceError | null)[] = [];
    for (const stream of ['v1', 'v2'] as const) {
      const parent = join(work, `c${n++}`);
      const err = await cloneFromUrl(
        { kind: 'clone', url: server.url, dest: join(parent, 'clone'), stream },
        new JobContext({ fileEvents: false }),
        { idleTimeoutMs: 5000 },
      ).then(
        () => null,
        (e: unknown) => e as SluiceError,
      );
      if (err) expect(err).toBeInstanceOf(SluiceError);
      expect(holdsSecret(parent), `stream ${stream}`).toBe(false);
      results.push(err);
    }
    expect((await fetch(`${server.url}?cmd=heads`)).status).toBe(200); // still serving
    return results;
  } finally {
    await server.close();
  }
}

async function bundleError(repo: string): Promise<SluiceError> {
  const out = join(work, `b${n++}.hg`);
  const err = await writeStreamBundle(repo, out, { type: 'v2' }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SluiceError);
  return err as SluiceError;
}

const store = (repo: string): string => join(repo, '.hg', 'store');

describe('links in the store of a served repository', () => {
  it('a revlog file that is a link to a file elsewhere: no stream sends it (UNSAFE_PATH on the server)', async () => {
    const repo = plantedRepo((r) => {
      symlinkSync(secretFile, join(store(r), 'data', 'zz.i'));
      appendFileSync(join(store(r), 'fncache'), 'data/zz.i\n');
    });
    const [v1, v2] = await streamClones(repo);
    expect(v1?.code).toBe('HTTP');
    expect(v2?.code).toBe('HTTP');
    const err = await bundleError(repo);
    expect(err.code).toBe('UNSAFE_PATH');
    expect(err.message).toMatch(/data\/zz\.i.*not a regular file/);
  });

  it('a store folder that is a link to a folder elsewhere: no stream goes through it (hg: traverses symbolic link)', async () => {
    const repo = plantedRepo((r) => {
      symlinkSync(secretDir, join(store(r), 'data', 'sub'));
      appendFileSync(join(store(r), 'fncache'), 'data/sub/x.i\n');
    });
    const [v1, v2] = await streamClones(repo);
    expect(v1?.code).toBe('HTTP');
    expect(v2?.code).toBe('HTTP');
    const err = await bundleError(repo);
    expect(err.code).toBe('UNSAFE_PATH');
    expect(err.message).toMatch(/traverses symbolic link "data\/sub"/);
  });
});

describe('links where a stream sends whole files (v2)', () => {
  it('a cache file, the cache folder, or phaseroots that is a link: left out, the clones work', async () => {
    const cacheFile = plantedRepo((r) => {
      rmSync(join(r, '.hg', 'cache', 'branch2-served'), { force: true });
      symlinkSync(secretFile, join(r, '.hg', 'cache', 'branch2-served'));
    });
    const cacheDir = plantedRepo((r) => {
      rmSync(join(r, '.hg', 'cache'), { recursive: true, force: true });
      const planted = join(work, `cache${n++}`);
      mkdirSync(planted);
      writeFileSync(join(planted, 'tags2-served'), SECRET);
      symlinkSync(planted, join(r, '.hg', 'cache'));
    });
    const phaseroots = plantedRepo((r) => {
      rmSync(join(store(r), 'phaseroots'), { force: true });
      symlinkSync(secretFile, join(store(r), 'phaseroots'));
    });
    expect(await streamClones(cacheFile)).toEqual([null, null]);
    expect(await streamClones(cacheDir)).toEqual([null, null]);
    // (the server itself reads phaseroots for its phases: a bundle shows what a stream copies)
    for (const repo of [cacheFile, cacheDir, phaseroots]) {
      const out = join(work, `b${n++}.hg`);
      await writeStreamBundle(repo, out, { type: 'v2', publishing: false });
      expect(readFileSync(out, 'utf8')).not.toContain(SECRET);
    }
  });
});

describe('a clone bundles manifest that is a link', () => {
  it('is not read: the clonebundles command answers nothing and is not advertised', async () => {
    const repo = plantedRepo((r) => symlinkSync(secretFile, join(r, '.hg', 'clonebundles.manifest')));
    const server = await startServer({ repo });
    try {
      const manifest = await (await fetch(`${server.url}?cmd=clonebundles`)).text();
      expect(manifest).toBe('');
      expect(await (await fetch(`${server.url}?cmd=capabilities`)).text()).not.toMatch(/clonebundles/);
    } finally {
      await server.close();
    }
  });
});

describe('links in the store of a served repository, pulled (changegroup)', () => {
  /** another repository on the server (the same fixture: what is linked would pass every check) */
  let victim = '';
  beforeAll(() => {
    const parent = join(work, 'victim');
    mkdirSync(parent);
    victim = extractFixture('default', parent);
  });

  it.each([
    ['a store folder', 'data/~2econfig', /traverses symbolic link "data\/~2econfig"/],
    ['a revlog index', 'data/co~6e.txt.i', /"data\/con\.txt" is a symbolic link/],
    ['a revlog data file', 'data/big.bin.d', /"data\/big\.bin" is a symbolic link/],
  ] as const)(
    '%s linked to another repository’s: REMOTE_ABORT, nothing at DEST',
    async (_what, rel, message) => {
      const repo = plantedRepo((r) => {
        rmSync(join(store(r), rel), { recursive: true });
        symlinkSync(join(store(victim), rel), join(store(r), rel));
      });
      const server = await startServer({ repo });
      try {
        const parent = join(work, `c${n++}`);
        const err = await cloneFromUrl(
          { kind: 'clone', url: server.url, dest: join(parent, 'clone'), pull: true },
          new JobContext({ fileEvents: false }),
          { idleTimeoutMs: 5000 },
        ).then(
          () => null,
          (e: unknown) => e as SluiceError,
        );
        expect(err).toBeInstanceOf(SluiceError);
        expect(err!.code, err!.message).toBe('REMOTE_ABORT');
        expect(err!.message).toMatch(message);
        expect(existsSync(parent) ? readdirSync(parent) : []).toEqual([]);
      } finally {
        await server.close();
      }
    },
  );
});

describe('state files of a served repository that are not regular files', () => {
  // A FIFO blocked the server's reads (and a libuv thread) for good; /dev/zero was read until
  // memory ran out. Each is refused at once: that request fails, the next after the repair works.
  it.skipIf(process.platform === 'win32')(
    'a FIFO or a link to /dev/zero as phaseroots, bookmarks, obsstore or hgrc: 500 at once, then served again (skipped on Windows: no FIFO, no /dev/zero)',
    async () => {
      const repo = plantedRepo(() => {});
      const server = await startServer({ repo });
      try {
        const heads = async () =>
          (await fetch(`${server.url}?cmd=heads`, { signal: AbortSignal.timeout(5000) })).status;
        expect(await heads()).toBe(200);
        for (const rel of ['store/phaseroots', 'bookmarks', 'store/obsstore', 'hgrc']) {
          const path = join(repo, '.hg', rel);
          const saved = existsSync(path) ? readFileSync(path) : null;
          for (const plant of [() => execFileSync('mkfifo', [path]), () => symlinkSync('/dev/zero', path)]) {
            rmSync(path, { force: true });
            plant();
            expect(await heads(), rel).toBe(500);
            rmSync(path);
            if (saved) writeFileSync(path, saved);
            expect(await heads(), rel).toBe(200);
          }
        }
      } finally {
        await server.close();
      }
    },
  );

  it.skipIf(process.platform === 'win32')(
    'a FIFO as the fncache: a stream of the repository fails at once (skipped on Windows: no FIFO)',
    async () => {
      const repo = plantedRepo((r) => {
        rmSync(join(store(r), 'fncache'));
        execFileSync('mkfifo', [join(store(r), 'fncache')]);
      });
      const err = await bundleError(repo);
      expect(err.code).toBe('UNSAFE_PATH');
      expect(err.message).toMatch(/fncache is not a regular file/);
    },
  );
});
