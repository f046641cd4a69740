// Pieces of the clone dialog kept apart from its form: the host's destination check as you type
// (GitHub Desktop says "is not empty" before you submit, so do we), recent destination folders, and
// the equivalent `hg` command line.

import { useEffect, useState } from 'react';
import type { CloneRequest } from '../../../shared/jobs';
import type { DestinationCheck } from '../../../shared/library';
import { hgCloneCommand } from '../lib/hg-command';
import { baseName, joinPath } from '../lib/paths';
import { useSluice } from '../store/react';

/** The host's check of `dest` (exists? a file? empty?), debounced; undefined while unknown. */
export function useDestinationCheck(dest: string, enabled: boolean): DestinationCheck | undefined {
  const api = useSluice((s) => s.checkDestination);
  const [result, setResult] = useState<{ dest: string; check: DestinationCheck } | undefined>();
  useEffect(() => {
    if (!enabled) return;
    let live = true;
    const t = setTimeout(() => {
      void api(dest).then((check) => live && check && setResult({ dest, check }));
    }, 200);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [api, dest, enabled]);
  return result && result.dest === dest ? result.check : undefined;
}

/** "Destination folder is not empty": the reason as the field's error text. */
export function destinationProblem(check: DestinationCheck | undefined): string | null {
  if (!check || check.ok) return null;
  return `This folder ${check.reason ?? 'cannot be used'}. Choose another, or a new folder name.`;
}

export function RecentFolders({
  dirs,
  name,
  platform,
  onPick,
}: {
  dirs: string[];
  name: string;
  platform?: string;
  onPick: (dest: string) => void;
}) {
  if (dirs.length === 0) return null;
  return (
    <p className="recent-folders">
      <span className="muted">Recent folders:</span>{' '}
      {dirs.map((d) => (
        <button
          key={d}
          type="button"
          className="button small ghost"
          title={d}
          onClick={() => onPick(joinPath(d, name, platform))}
        >
          {baseName(d) || d}
        </button>
      ))}
    </p>
  );
}

export function HgCommandLine({ request, platform }: { request: CloneRequest | null; platform?: string }) {
  if (!request) return null;
  return (
    <div className="hg-command">
      <p className="field-hint">The same with Mercurial:</p>
      <code className="mono" data-testid="hg-command">
        {hgCloneCommand(request, platform)}
      </code>
    </div>
  );
}
