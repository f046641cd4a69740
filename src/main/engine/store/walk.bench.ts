// Benchmark of listStreamFiles (not part of the test suite):
//   npx tsx src/main/engine/store/walk.bench.ts /dev/shm/corpus-medium [runs]
//   npx tsx src/main/engine/store/walk.bench.ts --synthetic 100000 /dev/shm/sluice-walk-synth
// The synthetic mode builds (once, and leaves in place) a fncache store of N small files with
// realistic names, to time the walk at 100k files without generating a large hg corpus.

import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { encodeStorePath } from './encoding.js';
import { serializeFncache } from './fncache.js';
import { listStreamFiles } from './walk.js';

function buildSynthetic(root: string, count: number): void {
  if (existsSync(join(root, '.hg', 'store', 'fncache'))) return;
  const store = join(root, '.hg', 'store');
  mkdirSync(store, { recursive: true });
  writeFileSync(
    join(root, '.hg', 'requires'),
    'dotencode\nfncache\ngeneraldelta\nrevlogv1\nsparserevlog\nstore\n',
  );
  const names: string[] = [];
  const madeDirs = new Set<string>();
  for (let i = 0; i < count; i++) {
    const name = `data/src/Module${i % 97}/sub${i % 13}/Component_${i}.java.i`;
    names.push(name);
    const path = join(store, encodeStorePath(name));
    const dir = dirname(path);
    if (!madeDirs.has(dir)) {
      mkdirSync(dir, { recursive: true });
      madeDirs.add(dir);
    }
    writeFileSync(path, 'x'.repeat(64 + (i % 200)));
  }
  writeFileSync(join(store, 'fncache'), serializeFncache(names));
  writeFileSync(join(store, '00manifest.i'), 'x'.repeat(100));
  writeFileSync(join(store, '00changelog.i'), 'x'.repeat(100));
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  let repo: string;
  if (args[0] === '--synthetic') {
    const count = Number(args[1] ?? 100_000);
    repo = args[2] ?? '/dev/shm/sluice-walk-synth';
    const t0 = performance.now();
    buildSynthetic(repo, count);
    console.log(`synthetic store ready in ${Math.round(performance.now() - t0)} ms`);
  } else {
    repo = args[0] ?? '/dev/shm/corpus-medium';
  }
  const runs = Number(args[args[0] === '--synthetic' ? 3 : 1] ?? 5);
  const variants = [
    { statStrategy: 'auto' as const, concurrency: 64 },
    { statStrategy: 'async' as const, concurrency: 16 },
    { statStrategy: 'async' as const, concurrency: 64 },
  ];
  for (const version of ['v1', 'v2'] as const) {
    for (const { statStrategy, concurrency } of variants) {
      const times: number[] = [];
      let files = 0;
      let bytes = 0;
      for (let r = 0; r < runs; r++) {
        const t0 = performance.now();
        const list = await listStreamFiles(repo, { version, concurrency, statStrategy });
        times.push(performance.now() - t0);
        files = list.files.length;
        bytes = list.bytes;
      }
      times.sort((a, b) => a - b);
      console.log(
        `${version} ${statStrategy} (concurrency ${concurrency}): ${files} files, ${bytes} bytes, ` +
          `median ${times[Math.floor(times.length / 2)]!.toFixed(0)} ms (min ${times[0]!.toFixed(0)}, max ${times[times.length - 1]!.toFixed(0)})`,
      );
    }
  }
}

void main();
