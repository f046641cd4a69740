// `node build/check-fuses.mjs [DIST]`: fails unless every packaged Electron binary electron-builder
// left unpacked in DIST (default dist/) has SLUICE_FUSES set. The release workflow runs it after
// `npm run dist`, so the fuses are read back from what was built, not assumed from the config.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fusesNotSet } from './electron-fuses.mjs';

const dist = process.argv[2] ?? 'dist';
const binaries = [];
for (const entry of readdirSync(dist, { withFileTypes: true })) {
  if (!entry.isDirectory()) continue;
  const folder = join(dist, entry.name);
  if (entry.name === 'linux-unpacked' && existsSync(join(folder, 'sluice')))
    binaries.push(join(folder, 'sluice'));
  if (entry.name === 'win-unpacked' && existsSync(join(folder, 'Sluice.exe')))
    binaries.push(join(folder, 'Sluice.exe'));
  if (/^mac(-arm64|-universal)?$/.test(entry.name) && existsSync(join(folder, 'Sluice.app')))
    binaries.push(join(folder, 'Sluice.app'));
}
if (binaries.length === 0) {
  console.error(`check-fuses: no packaged Sluice binary under ${dist}`);
  process.exit(1);
}
let failed = false;
for (const binary of binaries) {
  const wrong = await fusesNotSet(binary);
  if (wrong.length > 0) failed = true;
  console.log(
    `${binary}: ${wrong.length === 0 ? 'fuses as set in build/electron-fuses.mjs' : `WRONG: ${wrong.join(', ')}`}`,
  );
}
process.exit(failed ? 1 : 0);
