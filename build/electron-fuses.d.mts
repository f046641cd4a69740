// Types of electron-fuses.mjs (plain JavaScript for electron-builder; see there).
import type { FuseConfig } from '@electron/fuses';

export const SLUICE_FUSES: Readonly<{
  RunAsNode: false;
  EnableNodeOptionsEnvironmentVariable: false;
  EnableNodeCliInspectArguments: false;
  EnableCookieEncryption: true;
  EnableEmbeddedAsarIntegrityValidation: true;
  OnlyLoadAppFromAsar: true;
}>;

export type SluiceFuses = Readonly<Record<keyof typeof SLUICE_FUSES, boolean>>;
export function fusesForBuild(env?: Record<string, string | undefined>): SluiceFuses;
export function fuseConfig(resetAdHocDarwinSignature: boolean, fuses?: SluiceFuses): FuseConfig;

/** the fields of electron-builder's AfterPackContext this hook reads */
export interface PackContext {
  appOutDir: string;
  electronPlatformName: string;
  arch: number;
  packager: { appInfo: { productFilename: string }; executableName: string };
}

export function electronBinaryPath(context: PackContext): string;
export function fusesNotSet(binary: string, fuses?: SluiceFuses): Promise<string[]>;
export default function afterPack(context: PackContext): Promise<void>;
