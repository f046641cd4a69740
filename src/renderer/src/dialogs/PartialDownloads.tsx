// Settings' list of the clone bundle downloads kept for resuming: what each was for, how much is
// kept, and Remove (one) or Clear all (those no clone is using).

import { useEffect } from 'react';
import { formatBytes, formatTimestamp } from '../lib/format';
import { useSluice, useSluiceShallow } from '../store/react';

export function PartialDownloads() {
  const { partials, loadPartials, removePartials } = useSluiceShallow((s) => ({
    partials: s.partials,
    loadPartials: s.loadPartials,
    removePartials: s.removePartials,
  }));
  const anyRemovable = useSluice((s) => s.partials.some((p) => !p.inUse));
  useEffect(() => {
    void loadPartials();
  }, [loadPartials]);
  return (
    <fieldset className="field partial-downloads" data-testid="partial-downloads">
      <legend>Partial downloads</legend>
      {partials.length === 0 ? (
        <p className="field-hint">
          None. A clone bundle download that stops is kept here so the clone can resume.
        </p>
      ) : (
        <>
          <ul className="credential-list">
            {partials.map((p) => (
              <li key={p.key} data-testid="partial-download">
                <span className="mono">{p.url}</span>{' '}
                <span className="muted">
                  for {p.dest}: {formatBytes(p.bytes)}
                  {p.total !== null ? ` of ${formatBytes(p.total)}` : ''}, updated{' '}
                  {formatTimestamp(p.updated)}
                  {p.inUse ? ' · in use' : ''}
                </span>{' '}
                <button
                  type="button"
                  className="button small"
                  disabled={p.inUse}
                  onClick={() => void removePartials(p.key)}
                  aria-label={`Remove the partial download for ${p.dest}`}
                >
                  Remove
                </button>
              </li>
            ))}
          </ul>
          <button
            type="button"
            className="button small"
            disabled={!anyRemovable}
            onClick={() => void removePartials()}
          >
            Clear all
          </button>
        </>
      )}
    </fieldset>
  );
}
