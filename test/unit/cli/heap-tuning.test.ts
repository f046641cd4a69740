import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../support/env';

// A real node process: 40 MiB of ArrayBuffers made while the program allocates enough to run
// scavenges, then dropped, and the event loop left to turn for up to 6 s (a CI run on 2 busy
// cores once took more than 3 s to show the memory freed). Only a garbage collection frees them,
// and nothing but the collector under test starts one while nothing is allocated (V8's memory
// reducer waits 8 s).
describe('tuneHeapForMemory collectBuffersEvery', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-heap-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const script = join(dir, 'run.mjs');
  writeFileSync(
    script,
    `
const { tuneHeapForMemory } = await import(${JSON.stringify(pathToFileURL(join(ROOT, 'src/cli/heap-tuning.ts')).href)});
const { getHeapStatistics } = await import('node:v8');
if (process.argv[2] === 'on') tuneHeapForMemory({ collectBuffersEvery: 4 << 20 });
let keep = [];
let sink = 0;
for (let i = 0; i < 40; i++) {
  keep.push(new Uint8Array(1 << 20).fill(i));
  for (let j = 0; j < 20000; j++) sink += [j, i].length;
}
const held = getHeapStatistics().external_memory;
keep = null;
const deadline = Date.now() + (process.argv[2] === 'on' ? 6000 : 1000);
while (Date.now() < deadline && getHeapStatistics().external_memory > held - (30 << 20)) {
  await new Promise((r) => setTimeout(r, 25));
}
console.log(JSON.stringify({ held, after: getHeapStatistics().external_memory, sink: sink > 0 }));
`,
  );
  const run = (mode: 'on' | 'off') => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', script, mode], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as { held: number; after: number };
  };

  it('frees dead ArrayBuffers once the external memory has grown by the given bytes', () => {
    const on = run('on');
    expect(on.held).toBeGreaterThan(40 << 20);
    expect(on.after).toBeLessThan(on.held - (30 << 20));
  });

  it('leaves them to V8 without it (the control: nothing else collects them here)', () => {
    const off = run('off');
    expect(off.held).toBeGreaterThan(40 << 20);
    expect(off.after).toBeGreaterThan(off.held - (10 << 20));
  });
});
