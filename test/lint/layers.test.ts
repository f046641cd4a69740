// The layer rules of eslint.config.js, run through ESLint's Node API with the repository's own
// config (what `npm run lint` runs) on files placed, by path, in the engine and the renderer.
import { describe, expect, it } from 'vitest';
import { broken } from './lint-support';

const ENGINE = 'src/main/engine/format/layer-probe.ts';
const RENDERER = 'src/renderer/src/components/LayerProbe.tsx';

describe('lint: the engine imports no Electron, React or renderer code', () => {
  it.each([
    ["import { app } from 'electron';\nexport const a = app;\n", 'no-restricted-imports'],
    [
      "import type { BrowserWindow } from 'electron/main';\nexport type W = BrowserWindow;\n",
      'no-restricted-imports',
    ],
    ["import { useState } from 'react';\nexport const u = useState;\n", 'no-restricted-imports'],
    ["import { create } from 'zustand';\nexport const c = create;\n", 'no-restricted-imports'],
    ["import { api } from '../../../renderer/src/api';\nexport const a = api;\n", 'no-restricted-imports'],
    ["export const load = () => import('electron');\n", 'no-restricted-syntax'],
    ["export const e = require('electron');\n", 'no-restricted-syntax'],
  ])('%s fails with %s', async (code, rule) => {
    const messages = await broken(ENGINE, code);
    expect(
      messages.some((m) => m.startsWith(`${rule}: `) && m.includes('src/main/engine runs in plain Node')),
      messages.join('\n'),
    ).toBe(true);
  });

  it('node modules and the shared contract are fine', async () => {
    const code =
      "import { open } from 'node:fs/promises';\nimport type { SluiceEvent } from '../../../shared/events';\n" +
      'export const x: [typeof open, SluiceEvent?] = [open];\n';
    expect(await broken(ENGINE, code)).toEqual([]);
  });
});

describe('lint: the renderer imports no Node modules or Electron', () => {
  it.each([
    "import { readFile } from 'node:fs/promises';\nexport const r = readFile;\n",
    "import { join } from 'path';\nexport const j = join;\n",
    "import { posix } from 'path/posix';\nexport const p = posix;\n",
    "import { ipcRenderer } from 'electron';\nexport const i = ipcRenderer;\n",
    "import { startServer } from '../../../main/engine/wire/server';\nexport const s = startServer;\n",
    "export const cp = require('child_process');\n",
    "export const load = () => import('node:os');\n",
  ])('%s fails', async (code) => {
    const messages = await broken(RENDERER, code);
    expect(
      messages.some((m) => m.includes('src/renderer runs in a sandboxed page')),
      messages.join('\n'),
    ).toBe(true);
  });

  it('React, zustand and the shared contract are fine', async () => {
    const code =
      "import { useState } from 'react';\nimport { formatHgBytes } from '../../../shared/events';\n" +
      'export const x = [useState, formatHgBytes];\n';
    expect(await broken(RENDERER, code)).toEqual([]);
  });
});

describe('lint: inside the engine, a request flows down once', () => {
  const MECHANISM = 'src/main/engine/revlog/layer-probe.ts';
  const OPERATION = 'src/main/engine/operations/pull/layer-probe.ts';

  it.each([
    "import { pull } from '../operations/pull/pull';\nexport const p = pull;\n",
    "import { runJob } from '../job/run-job';\nexport const r = runJob;\n",
  ])('a mechanism importing upwards fails: %s', async (code) => {
    const messages = await broken(MECHANISM, code);
    expect(
      messages.some((m) => m.startsWith('no-restricted-imports: ') && m.includes('below the operations')),
      messages.join('\n'),
    ).toBe(true);
  });

  it('an operation importing the job runner fails', async () => {
    const messages = await broken(
      OPERATION,
      "import { runJob } from '../../job/run-job';\nexport const r = runJob;\n",
    );
    expect(
      messages.some((m) => m.includes('operations sit below the job runner')),
      messages.join('\n'),
    ).toBe(true);
  });

  it('operations use mechanisms and the job context freely', async () => {
    const code =
      "import { Revlog } from '../../revlog/revlog';\nimport type { JobContext } from '../../context/job-context';\n" +
      'export const x: [typeof Revlog, JobContext?] = [Revlog];\n';
    expect(await broken(OPERATION, code)).toEqual([]);
  });
});
