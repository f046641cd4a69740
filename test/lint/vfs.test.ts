// The in-place write rule of eslint.config.js: engine code outside repo/vfs.ts may not open a file
// to append or update (a hard-linked clone's store file would change its source too), run through
// ESLint's Node API with the repository's own config on files placed, by path, in the engine.
import { describe, expect, it } from 'vitest';
import { broken } from './lint-support';

const PROBE = 'src/main/engine/repo/vfs-probe.ts';
const VFS = 'src/main/engine/repo/vfs.ts';
const VFS_RULE = /^no-restricted-syntax: open repository files to append or update through repo\/vfs\.ts/;

describe('lint: engine code opens files to append or update only through repo/vfs.ts', () => {
  it.each([
    "import { openSync } from 'node:fs';\nexport const fd = openSync('x', 'a');\n",
    "import { openSync } from 'node:fs';\nexport const fd = openSync('x', 'r+');\n",
    "import * as fs from 'node:fs';\nexport const fd = fs.openSync('x', 'a+');\n",
    "import { open } from 'node:fs/promises';\nexport const fh = open('x', 'as');\n",
    "import { openSync, constants } from 'node:fs';\nexport const fd = openSync('x', constants.O_RDWR);\n",
    "import { constants } from 'node:fs';\nexport const f = constants.O_WRONLY | constants.O_APPEND;\n",
    "import { writeFileSync } from 'node:fs';\nwriteFileSync('x', 'y', { flag: 'a' });\n",
    "import { createWriteStream } from 'node:fs';\nexport const s = createWriteStream('x', { flags: 'r+' });\n",
    "import { appendFileSync } from 'node:fs';\nappendFileSync('x', 'y');\n",
    "import { promises } from 'node:fs';\nexport const p = promises.appendFile('x', 'y');\n",
    "import { truncateSync } from 'node:fs';\ntruncateSync('x', 0);\n",
    "import * as fs from 'node:fs';\nfs.truncateSync('x', 0);\n",
  ])('%s fails', async (code) => {
    const messages = await broken(PROBE, code);
    expect(
      messages.some((m) => VFS_RULE.test(m)),
      messages.join('\n'),
    ).toBe(true);
  });

  it('reading, writing a new file, and the vfs itself are fine', async () => {
    const readsAndCreates =
      "import { openSync, readFileSync, writeFileSync } from 'node:fs';\n" +
      "export const fd = openSync('x', 'r');\nexport const w = openSync('y', 'wx');\n" +
      "writeFileSync('z', 'data', { flag: 'wx' });\nexport const t = readFileSync('x');\n";
    expect(await broken(PROBE, readsAndCreates)).toEqual([]);
    const update = "import { openSync } from 'node:fs';\nexport const fd = openSync('x', 'r+');\n";
    expect(await broken(VFS, update)).toEqual([]);
  });
});
