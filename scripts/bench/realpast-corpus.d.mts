export interface RealpastVersion {
  pkg: string;
  version: string;
  time: string;
  tarball: string;
}
export interface RealpastPlan {
  compression: 'zstd' | 'zlib';
  split: number;
  versions: RealpastVersion[];
}
export const REALPAST_PRESETS: Record<
  string,
  | { packages: Record<string, number>; split: number; compression: 'zstd' | 'zlib' }
  | { from: string; compression: 'zstd' | 'zlib' }
>;
export function buildFromPlan(dest: string, plan: RealpastPlan): void;
export function buildRealpast(preset: string, dest: string, cache: string): void;
