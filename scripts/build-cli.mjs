// Bundles the CLI (and the engine it carries) into out/cli with esbuild, so `npx sluice` starts
// fast without a TypeScript loader. Run by `npm install` (prepare) and `npm run build`.
import { build } from 'esbuild';
import { existsSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

// node:http and node:https come through process.getBuiltinModule instead of an ES import: an ES
// import of a builtin builds its module facade, which reads every export, and node:http's lazy
// WebSocket/MessageEvent getters then load all of undici (~50-100 ms of CPU at every start of a
// clone or pull, measured on Node 24). Only plain value exports are re-exported, none of the
// lazy getters; a named import of anything else fails the build.
const lazyBuiltins = {
  name: 'lazy-builtins',
  setup(b) {
    b.onResolve({ filter: /^node:https?$/ }, (a) => ({ path: a.path, namespace: 'lazy-builtin' }));
    b.onLoad({ filter: /.*/, namespace: 'lazy-builtin' }, (a) => {
      const names = Object.entries(Object.getOwnPropertyDescriptors(require(a.path)))
        .filter(([k, d]) => 'value' in d && k !== 'default' && /^[A-Za-z_$][\w$]*$/.test(k))
        .map(([k]) => k);
      const id = JSON.stringify(a.path);
      return {
        contents: [
          `const m = process.getBuiltinModule(${id});`,
          'export default m;',
          ...names.map((n) => `export const ${n} = m.${n};`),
        ].join('\n'),
        loader: 'js',
      };
    });
  },
};

// verify-worker: verify's filelog scans on worker threads (src/main/engine/operations/verify/scan-pool.ts finds it);
// checkout-worker: checkout's file writers (src/main/engine/working-copy/write-pool.ts finds it)
const entryPoints = {
  sluice: 'src/cli/main.ts',
  'verify-worker': 'src/main/engine/operations/verify/filelog-worker.ts',
  'checkout-worker': 'src/main/engine/working-copy/checkout-worker.ts',
};
if (!existsSync(entryPoints.sluice)) {
  console.log('build-cli: src/cli/main.ts not there yet, nothing to build');
  process.exit(0);
}
// chunk names carry content hashes: start clean so old chunks do not pile up
rmSync('out/cli', { recursive: true, force: true });
await build({
  entryPoints,
  outdir: 'out/cli',
  outExtension: { '.js': '.mjs' },
  bundle: true,
  platform: 'node',
  format: 'esm',
  // Commands load on demand (src/cli/main.ts): with splitting, each lazily imported module and
  // the node builtins it needs (node:http, tls, ws for clone/serve) stay out of the start path.
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  target: 'node22',
  packages: 'external',
  plugins: [lazyBuiltins],
  sourcemap: true,
  logLevel: 'warning',
});
// bin/sluice.cjs's first step: size libuv's threadpool before the ES modules load (see there)
await build({
  entryPoints: { bootstrap: 'src/main/bootstrap.ts' },
  outdir: 'out/cli',
  outExtension: { '.js': '.cjs' },
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node22',
  logLevel: 'warning',
});
