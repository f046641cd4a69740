// electron-builder's afterPack hook (electron-builder.yml): flips Sluice's Electron fuses on the
// packaged binary, after electron-builder has recorded the asar's integrity hash and before it
// signs, so the signature covers the flipped binary. Plain JavaScript: electron-builder imports it.
import { join } from 'node:path';
import { flipFuses, FuseState, FuseV1Options, FuseVersion, getCurrentFuseWire } from '@electron/fuses';

/**
 * The fuses Sluice sets, by @electron/fuses' FuseV1Options name; the rest keep Electron's default.
 * Off: running the binary as plain Node, NODE_OPTIONS and --inspect (each would let another program
 * run code as Sluice). On: cookie encryption, and loading the app only from an app.asar whose hash
 * matches the one recorded in the binary.
 */
export const SLUICE_FUSES = Object.freeze({
  RunAsNode: false,
  EnableNodeOptionsEnvironmentVariable: false,
  EnableNodeCliInspectArguments: false,
  EnableCookieEncryption: true,
  EnableEmbeddedAsarIntegrityValidation: true,
  OnlyLoadAppFromAsar: true,
});

/**
 * The fuses a package build sets. `SLUICE_FUSES_FOR_PLAYWRIGHT=1` keeps --inspect on and nothing
 * else: Playwright's _electron drives the app through it, so the workflow's launch test of the
 * packaged app needs a build with that one fuse left as Electron ships it. Such a build is never
 * an artifact: the installers are built without the variable, and check-fuses.mjs reads them back.
 */
export function fusesForBuild(env = process.env) {
  return env.SLUICE_FUSES_FOR_PLAYWRIGHT === '1'
    ? Object.freeze({ ...SLUICE_FUSES, EnableNodeCliInspectArguments: true })
    : SLUICE_FUSES;
}

/** electron-builder's Arch enum (builder-util): the slices whose ad-hoc signature must be redone */
const ARCH_ARM64 = 3;
const ARCH_UNIVERSAL = 4;

/** @electron/fuses' configuration for `fuses` (default: this build's). */
export function fuseConfig(resetAdHocDarwinSignature, fuses = fusesForBuild()) {
  const config = { version: FuseVersion.V1, resetAdHocDarwinSignature };
  for (const [name, on] of Object.entries(fuses)) {
    if (FuseV1Options[name] === undefined) throw new Error(`@electron/fuses has no fuse ${name}`);
    config[FuseV1Options[name]] = on;
  }
  return config;
}

/** The packaged binary (or macOS .app) an afterPack context describes, as electron-builder names it. */
export function electronBinaryPath(context) {
  const { appOutDir, electronPlatformName: platform, packager } = context;
  if (platform === 'darwin' || platform === 'mas')
    return join(appOutDir, `${packager.appInfo.productFilename}.app`);
  if (platform === 'win32') return join(appOutDir, `${packager.appInfo.productFilename}.exe`);
  return join(appOutDir, packager.executableName);
}

/** The fuses of a packaged binary (or .app) that differ from `fuses`, as `Name=on|off` strings. */
export async function fusesNotSet(binary, fuses = SLUICE_FUSES) {
  const wire = await getCurrentFuseWire(binary);
  return Object.entries(fuses)
    .filter(([name, on]) => wire[FuseV1Options[name]] !== (on ? FuseState.ENABLE : FuseState.DISABLE))
    .map(([name]) => `${name}=${wire[FuseV1Options[name]] === FuseState.ENABLE ? 'on' : 'off'}`);
}

export default async function afterPack(context) {
  const binary = electronBinaryPath(context);
  // Apple silicon refuses a binary whose ad-hoc signature no longer matches; signing redoes it later
  const darwin = context.electronPlatformName === 'darwin' || context.electronPlatformName === 'mas';
  const reset = darwin && (context.arch === ARCH_ARM64 || context.arch === ARCH_UNIVERSAL);
  const fuses = fusesForBuild();
  await flipFuses(binary, fuseConfig(reset, fuses));
  const settings = Object.entries(fuses).map(([name, on]) => `${name}=${on ? 'on' : 'off'}`);
  const variant =
    fuses === SLUICE_FUSES ? '' : ' (SLUICE_FUSES_FOR_PLAYWRIGHT=1: a launch-test build, not for release)';
  console.log(`electron fuses flipped in ${binary}: ${settings.join(', ')}${variant}`);
}
