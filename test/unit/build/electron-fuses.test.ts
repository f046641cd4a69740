// The afterPack hook flips the fuses in a binary laid out as Electron's: no Electron binary exists
// here, so each test writes a file holding Electron's fuse sentinel and wire (as @electron/fuses
// finds it in a real binary) where electron-builder puts the packaged app, and reads it back with
// @electron/fuses.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FuseState, FuseV1Options, getCurrentFuseWire } from '@electron/fuses';
import afterPack, {
  electronBinaryPath,
  fuseConfig,
  fusesForBuild,
  fusesNotSet,
  SLUICE_FUSES,
} from '../../../build/electron-fuses.mjs';

const SENTINEL = 'dL7pKGdnNz796PbbjQWNKmHXBZaB9tsX';
// Electron's defaults for the first nine V1 fuses: RunAsNode, NODE_OPTIONS, --inspect and the
// last (WasmTrapHandlers) on, the rest off
const DEFAULTS = '101100001';

async function fakeElectron(path: string): Promise<Buffer> {
  const bytes = Buffer.concat([
    Buffer.from('\x7fELF...code...'),
    Buffer.from(SENTINEL),
    Buffer.from([1, DEFAULTS.length]),
    Buffer.from(DEFAULTS),
    Buffer.from('...more code'),
  ]);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, bytes);
  return bytes;
}

const context = (appOutDir: string, electronPlatformName: string, arch = 1) => ({
  appOutDir,
  electronPlatformName,
  arch,
  packager: { appInfo: { productFilename: 'Sluice' }, executableName: 'sluice' },
});

describe('Electron fuses (build/electron-fuses.mjs)', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-fuses-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('are the six settings docs/security.md names', () => {
    expect(SLUICE_FUSES).toEqual({
      RunAsNode: false,
      EnableNodeOptionsEnvironmentVariable: false,
      EnableNodeCliInspectArguments: false,
      EnableCookieEncryption: true,
      EnableEmbeddedAsarIntegrityValidation: true,
      OnlyLoadAppFromAsar: true,
    });
    expect(Object.isFrozen(SLUICE_FUSES)).toBe(true);
    const config = fuseConfig(false) as unknown as Record<number, boolean>;
    expect(config[FuseV1Options.RunAsNode]).toBe(false);
    expect(config[FuseV1Options.OnlyLoadAppFromAsar]).toBe(true);
    expect(config[FuseV1Options.LoadBrowserProcessSpecificV8Snapshot]).toBeUndefined();
  });

  it('finds the binary where electron-builder puts it on each platform', () => {
    expect(electronBinaryPath(context('/o', 'linux'))).toBe(join('/o', 'sluice'));
    expect(electronBinaryPath(context('/o', 'win32'))).toBe(join('/o', 'Sluice.exe'));
    expect(electronBinaryPath(context('/o', 'darwin'))).toBe(join('/o', 'Sluice.app'));
  });

  it.each([
    ['linux', 'sluice'],
    ['win32', 'Sluice.exe'],
    ['darwin', 'Sluice.app/Contents/Frameworks/Electron Framework.framework/Electron Framework'],
  ])('afterPack flips them in the %s binary and leaves the other fuses alone', async (platform, file) => {
    const path = join(dir, file);
    const before = await fakeElectron(path);
    const binary = electronBinaryPath(context(dir, platform));
    // the release workflow's check (build/check-fuses.mjs) on a binary as Electron ships it
    expect(await fusesNotSet(binary)).toEqual([
      'RunAsNode=on',
      'EnableNodeOptionsEnvironmentVariable=on',
      'EnableNodeCliInspectArguments=on',
      'EnableCookieEncryption=off',
      'EnableEmbeddedAsarIntegrityValidation=off',
      'OnlyLoadAppFromAsar=off',
    ]);
    await afterPack(context(dir, platform));
    expect(await fusesNotSet(binary)).toEqual([]);
    const after = await readFile(path);
    expect(after.length).toBe(before.length);
    const wire = (await getCurrentFuseWire(
      platform === 'darwin' ? join(dir, 'Sluice.app') : path,
    )) as unknown as Record<number, number>;
    const on = FuseState.ENABLE;
    const off = FuseState.DISABLE;
    expect(wire[FuseV1Options.RunAsNode]).toBe(off);
    expect(wire[FuseV1Options.EnableNodeOptionsEnvironmentVariable]).toBe(off);
    expect(wire[FuseV1Options.EnableNodeCliInspectArguments]).toBe(off);
    expect(wire[FuseV1Options.EnableCookieEncryption]).toBe(on);
    expect(wire[FuseV1Options.EnableEmbeddedAsarIntegrityValidation]).toBe(on);
    expect(wire[FuseV1Options.OnlyLoadAppFromAsar]).toBe(on);
    // untouched: the V8 snapshot and file-protocol fuses, WasmTrapHandlers, and every byte outside the wire
    expect(wire[FuseV1Options.LoadBrowserProcessSpecificV8Snapshot]).toBe(off);
    expect(wire[FuseV1Options.GrantFileProtocolExtraPrivileges]).toBe(off);
    expect(wire[8]).toBe(on);
    const wireAt = before.indexOf(SENTINEL) + SENTINEL.length + 2;
    expect(after.subarray(0, wireAt)).toEqual(before.subarray(0, wireAt));
    expect(after.subarray(wireAt + DEFAULTS.length)).toEqual(before.subarray(wireAt + DEFAULTS.length));
  });

  it('SLUICE_FUSES_FOR_PLAYWRIGHT=1 keeps --inspect on and nothing else; check-fuses refuses that build', async () => {
    expect(fusesForBuild({})).toBe(SLUICE_FUSES);
    expect(fusesForBuild({ SLUICE_FUSES_FOR_PLAYWRIGHT: '1' })).toEqual({
      ...SLUICE_FUSES,
      EnableNodeCliInspectArguments: true,
    });
    const path = join(dir, 'sluice');
    await fakeElectron(path);
    process.env.SLUICE_FUSES_FOR_PLAYWRIGHT = '1';
    try {
      await afterPack(context(dir, 'linux'));
    } finally {
      delete process.env.SLUICE_FUSES_FOR_PLAYWRIGHT;
    }
    expect(await fusesNotSet(path, fusesForBuild({ SLUICE_FUSES_FOR_PLAYWRIGHT: '1' }))).toEqual([]);
    // the release check (strict fuses) would fail on it
    expect(await fusesNotSet(path)).toEqual(['EnableNodeCliInspectArguments=on']);
  });

  it('refuses a binary without the fuse wire instead of packaging it unflipped', async () => {
    await writeFile(join(dir, 'sluice'), 'not electron');
    await expect(afterPack(context(dir, 'linux'))).rejects.toThrow(/sentinel/);
  });
});
