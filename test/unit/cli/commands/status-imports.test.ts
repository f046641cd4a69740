// What `sluice status` loads before it prints: the modules its command reaches by static imports,
// as the CLI's esbuild build (scripts/build-cli.mjs, with splitting) chunks them. A status the
// dirstate alone answers must not compile the job runner, the revlogs or load node:crypto.
import { build, type Metafile } from 'esbuild';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../../support/env';

/** Inputs and externals reachable from the entry's chunk through static imports only. */
function staticClosure(meta: Metafile, entry: string): { inputs: Set<string>; externals: Set<string> } {
  const inputs = new Set<string>();
  const externals = new Set<string>();
  const seen = new Set<string>();
  const visit = (out: string): void => {
    if (seen.has(out)) return;
    seen.add(out);
    const o = meta.outputs[out]!;
    for (const i of Object.keys(o.inputs)) inputs.add(i);
    for (const imp of o.imports) {
      if (imp.kind !== 'import-statement') continue;
      if (imp.external) externals.add(imp.path);
      else visit(imp.path);
    }
  };
  const start = Object.keys(meta.outputs).find((o) => meta.outputs[o]!.entryPoint === entry);
  visit(start!);
  return { inputs, externals };
}

describe('sluice status start path', () => {
  it('statically reaches no job runner, revlog or node:crypto; the parent check is loaded on demand', async () => {
    // the CLI's entry, as built: its commands are dynamic imports sharing chunks
    const entry = 'src/cli/commands/status.ts';
    const result = await build({
      absWorkingDir: ROOT,
      entryPoints: ['src/cli/main.ts'],
      outdir: join(ROOT, 'out', 'status-imports-test'),
      write: false,
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      packages: 'external',
      metafile: true,
      logLevel: 'silent',
    });
    const { inputs, externals } = staticClosure(result.metafile, entry);
    expect(inputs).toContain('src/main/engine/working-copy/status-walk.ts');
    const heavy = [...inputs].filter((i) =>
      /job\/run-job|revlog\/revlog\.ts|status-parent|dirstate-v2/.test(i),
    );
    expect(heavy).toEqual([]);
    expect([...externals].filter((e) => /crypto|worker_threads|zlib/.test(e))).toEqual([]);
    // the revlog side is still in the build, behind a dynamic import
    expect(Object.keys(result.metafile.inputs)).toContain(
      'src/main/engine/operations/status/status-parent.ts',
    );
  });
});
