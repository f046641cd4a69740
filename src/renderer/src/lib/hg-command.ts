// The `hg` command line equivalent to a clone request, shown in the clone dialog so a user can
// compare with (or fall back to) Mercurial itself: `hg clone --stream` (or `--pull`), `-U` without
// a checkout, `-u REV` for a chosen revision. Options map to hg's own config knobs.

import type { CloneRequest } from '../../../shared/jobs';

/** A word quoted for the platform's shell (POSIX sh, or cmd/PowerShell double quotes on Windows). */
export function shellQuote(word: string, platform?: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  if (platform === 'win32') return `"${word.replace(/"/g, '""')}"`;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

export function hgCloneCommand(request: CloneRequest, platform?: string): string {
  const config: string[] = [];
  // hg uses bundle2's stream v2 whenever the server offers it; v1 only without bundle2
  if (request.stream === 'v1') config.push('devel.legacy.exchange=bundle1');
  const closer = request.closer;
  // auto is hg's own default (on for Windows only), so it adds nothing
  if (closer?.backgroundClose === 'on') {
    config.push('worker.backgroundclose=true');
    if (closer.closeThreads !== undefined)
      config.push(`worker.backgroundclosethreadcount=${closer.closeThreads}`);
  }
  if (closer?.backgroundClose === 'off') config.push('worker.backgroundclose=false');
  if (request.cloneBundles === false) config.push('ui.clonebundles=false');
  if (request.obsmarkers) config.push('experimental.evolution=all');
  const q = (w: string) => shellQuote(w, platform);
  // a clone job checks out unless told not to (CloneRequest.update)
  const checkout = request.update === false ? ['-U'] : request.updateRev ? ['-u', q(request.updateRev)] : [];
  const clone = [
    'hg',
    ...config.flatMap((c) => ['--config', q(c)]),
    'clone',
    request.pull ? '--pull' : '--stream',
    ...checkout,
    q(request.url),
    q(request.dest),
  ].join(' ');
  return request.verify ? `${clone} && hg verify -R ${q(request.dest)}` : clone;
}
