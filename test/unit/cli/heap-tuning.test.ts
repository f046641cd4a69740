import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../support/env';

// A real node process plays a changegroup apply: it makes 1 MiB ArrayBuffers that stay alive for
// 8 more (long enough to be promoted by the scavenges its young garbage runs) and gives the event
// loop a turn after each. Its peak external memory shows how many dead ones pile up; V8 alone
// lets ~70 MiB of them wait for a major GC, on a quiet machine and under load alike. The
// collector's GCs are told apart from V8's own by their forced flag.
describe('tuneHeapForMemory collectBuffersEvery', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-heap-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const script = join(dir, 'run.mjs');
  writeFileSync(
    script,
    `
const { tuneHeapForMemory } = await import(${JSON.stringify(pathToFileURL(join(ROOT, 'src/cli/heap-tuning.ts')).href)});
const { getHeapStatistics } = await import('node:v8');
const { PerformanceObserver, constants } = await import('node:perf_hooks');
const [collector, steps] = [process.argv[2], Number(process.argv[3])];
if (collector === 'on') tuneHeapForMemory({ collectBuffersEvery: 4 << 20 });
let forced = 0;
new PerformanceObserver((list) => {
  for (const { detail } of list.getEntries())
    if (detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR && detail.flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) forced++;
}).observe({ entryTypes: ['gc'] });
const alive = new Array(8).fill(null);
let [sink, peak] = [0, 0];
const before = getHeapStatistics().external_memory;
for (let i = 0; i < steps; i++) {
  alive[i % alive.length] = new Uint8Array(1 << 20).fill(i);
  for (let j = 0; j < 20000; j++) sink += [j, i].length;
  peak = Math.max(peak, getHeapStatistics().external_memory - before);
  await new Promise((r) => setTimeout(r, 5));
}
await new Promise((r) => setTimeout(r, 100)); // the collector looks every 20 ms; GC entries come later
console.log(JSON.stringify({ peak, forced, sink: sink > 0 }));
`,
  );
  const run = (collector: 'on' | 'off', steps: number) => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', script, collector, String(steps)], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as { peak: number; forced: number };
  };

  it('forces a major GC each time the external memory has grown by the given bytes: dead buffers stay few', () => {
    const on = run('on', 100);
    expect(on.forced).toBeGreaterThanOrEqual(5); // 100 MiB made, 8 alive: ~10-13 measured
    expect(on.peak).toBeLessThan(32 << 20); // 8 alive + 4 of growth + what a late look lets in: 17-21 measured
  });

  it('forces none while the growth stays below the given bytes', () => {
    expect(run('on', 3).forced).toBe(0);
  });

  it('the control: without it nothing forces a GC and dead buffers pile up', () => {
    const off = run('off', 100);
    expect(off.forced).toBe(0);
    expect(off.peak).toBeGreaterThan(48 << 20); // 70-75 MiB measured
  });
});
