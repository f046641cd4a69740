// Reads the tip revision of every filelog of a repository (what a checkout of tip reads), node ids
// checked, and prints {"files", "bytes", "ms", "cpuMs"} (the loop only: start-up and the store
// listing excluded; cpuMs = user + sys, steadier than ms on a shared machine). Run by history-bench.mjs through tsx: node --import tsx scripts/bench/read-tips.ts REPO
import { performance } from 'node:perf_hooks';
import { locateRepository } from '../../src/main/engine/store/requirements';
import { walkStore } from '../../src/main/engine/store/walk';
import { Revlog } from '../../src/main/engine/revlog/revlog';

const loc = await locateRepository(process.argv[2]!);
const paths = new Map<string, string>();
for (const f of await walkStore(loc)) paths.set(f.name, f.path);
const radixes = [...paths.keys()]
  .filter((n) => n.startsWith('data/') && n.endsWith('.i'))
  .map((n) => n.slice(0, -2));
const t0 = performance.now();
const cpu0 = process.cpuUsage();
let bytes = 0;
for (const radix of radixes) {
  const rl = await Revlog.open(paths.get(radix + '.i')!, {
    name: radix,
    io: 'sync',
    ...(paths.has(radix + '.d') ? { dataPath: paths.get(radix + '.d')! } : {}),
  });
  if (rl.length) bytes += (await rl.revisionView(rl.length - 1)).length;
  await rl.close();
}
const cpu = process.cpuUsage(cpu0);
console.log(
  JSON.stringify({
    files: radixes.length,
    bytes,
    ms: performance.now() - t0,
    cpuMs: (cpu.user + cpu.system) / 1000,
  }),
);
