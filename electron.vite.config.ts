// Build of the three runtimes (electron-vite): main (Electron main, the engine worker and the web
// host, all Node), preload (sandboxed, so one CommonJS file) and the renderer (React). Works
// without the Electron binary: electron-vite only reads electron's package.json for its targets.

import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build as esbuild } from 'esbuild';
import { defineConfig } from 'electron-vite';
import react from '@vitejs/plugin-react';
import type { Plugin } from 'vite';
import { contentSecurityPolicy } from './src/main/host/csp';

const root = fileURLToPath(new URL('.', import.meta.url));

/** Bundles the web host's browser bridge (src/web-host/bridge-client.ts) into out/main/bridge.js. */
function webBridgePlugin(): Plugin {
  return {
    name: 'sluice:web-bridge',
    apply: 'build',
    async generateBundle() {
      const result = await esbuild({
        entryPoints: [resolve(root, 'src/web-host/bridge-client.ts')],
        bundle: true,
        format: 'iife',
        platform: 'browser',
        target: 'chrome120',
        write: false,
        legalComments: 'none',
      });
      this.emitFile({ type: 'asset', fileName: 'bridge.js', source: result.outputFiles[0]!.text });
    },
  };
}

/**
 * The CommonJS entries of the app (package.json `main` is out/main/main.cjs; the web host starts
 * from out/main/web-host.cjs): each sizes libuv's threadpool through src/main/bootstrap.ts, bundled
 * to out/main/bootstrap.cjs, before importing its ES module (why: engine/closer/threadpool.ts).
 */
function commonJsEntriesPlugin(): Plugin {
  return {
    name: 'sluice:commonjs-entries',
    apply: 'build',
    async generateBundle() {
      const result = await esbuild({
        entryPoints: [resolve(root, 'src/main/bootstrap.ts')],
        bundle: true,
        format: 'cjs',
        platform: 'node',
        target: 'node22',
        write: false,
        legalComments: 'none',
      });
      this.emitFile({ type: 'asset', fileName: 'bootstrap.cjs', source: result.outputFiles[0]!.text });
      const entry = (module: string) =>
        `'use strict';\n// Sizes libuv's threadpool, then starts ${module} (see src/main/bootstrap.ts).\n` +
        `require('./bootstrap.cjs').startApp(require('node:url').pathToFileURL(require('node:path').join(__dirname, '${module}')).href);\n`;
      this.emitFile({ type: 'asset', fileName: 'main.cjs', source: entry('index.js') });
      this.emitFile({ type: 'asset', fileName: 'web-host.cjs', source: entry('web-host.js') });
    },
  };
}

/**
 * Puts the renderer's CSP (src/main/host/csp.ts, the one definition) into index.html as a <meta>,
 * so it holds even where no header sets it. A policy written into index.html by hand is refused:
 * two policies drift apart (e2e/csp.spec.ts checks the built file).
 */
function cspMetaPlugin(): Plugin {
  return {
    name: 'sluice:csp-meta',
    apply: 'build',
    transformIndexHtml(html) {
      if (/http-equiv=["']Content-Security-Policy["']/i.test(html))
        throw new Error(
          'src/renderer/index.html must not carry a CSP: the build injects src/main/host/csp.ts',
        );
      return {
        html,
        tags: [
          {
            tag: 'meta',
            attrs: {
              'http-equiv': 'Content-Security-Policy',
              content: contentSecurityPolicy({ forMeta: true }),
            },
            injectTo: 'head-prepend',
          },
        ],
      };
    },
  };
}

export default defineConfig({
  main: {
    build: {
      outDir: 'out/main',
      rolldownOptions: {
        input: {
          index: resolve(root, 'src/main/index.ts'),
          'engine-worker': resolve(root, 'src/main/host/engine-worker.ts'),
          // verify's filelog scans (src/main/engine/operations/verify/scan-pool.ts looks for it beside the bundle)
          'verify-worker': resolve(root, 'src/main/engine/operations/verify/filelog-worker.ts'),
          // checkout's file writers (src/main/engine/working-copy/write-pool.ts looks for it beside the bundle)
          'checkout-worker': resolve(root, 'src/main/engine/working-copy/checkout-worker.ts'),
          // the library's recursive watches on Linux (src/main/host/watch-worker.ts looks for it beside the bundle)
          'watch-worker': resolve(root, 'src/main/host/watch-worker-entry.ts'),
          'web-host': resolve(root, 'src/web-host/main.ts'),
        },
      },
    },
    // The main chunks are ES modules; electron-vite's ESM shim declares `require` (createRequire) in
    // any chunk that calls require(), so the sources load packages by `import` (dependencies stay
    // external, electron-vite's default) and none declares a `require` of its own.
    plugins: [webBridgePlugin(), commonJsEntriesPlugin()],
  },
  preload: {
    build: {
      outDir: 'out/preload',
      rolldownOptions: {
        input: { index: resolve(root, 'src/preload/index.ts') },
        // A sandboxed preload is run as a classic script: CommonJS, one file, nothing external but electron.
        output: { format: 'cjs', entryFileNames: '[name].cjs' },
      },
    },
  },
  renderer: {
    root: 'src/renderer',
    base: './',
    build: {
      outDir: 'out/renderer',
      rolldownOptions: { input: { index: resolve(root, 'src/renderer/index.html') } },
    },
    plugins: [react(), cspMetaPlugin()],
  },
});
