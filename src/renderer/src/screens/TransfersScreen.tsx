// Transfers: every job the host runs or ran this session, newest first; the first-run empty state
// offers a one-click sample clone.

import { useState } from 'react';
import { useSluice, useSluiceShallow } from '../store/react';
import { isTerminal } from '../store/transfers';
import { TransferRow } from '../components/TransferRow';
import { Icon } from '../components/Icon';
import { EmptyState } from '../components/EmptyState';
import { DensityToggle, ScreenFrame } from '../components/ScreenFrame';

export function TransfersScreen() {
  const jobOrder = useSluice((s) => s.jobOrder);
  const counts = useSluiceShallow((s) => {
    let active = 0;
    let finished = 0;
    for (const id of s.jobOrder) {
      if (isTerminal(s.jobs[id]!.state)) finished++;
      else active++;
    }
    return { active, finished };
  });
  const clearFinished = useSluice((s) => s.clearFinished);
  const compact = useSluice((s) => s.density === 'compact');

  return (
    <ScreenFrame
      id="transfers"
      title="Transfers"
      subtitle={
        jobOrder.length === 0 ? 'Nothing running' : `${counts.active} active · ${counts.finished} finished`
      }
      liveSubtitle
      tools={
        <div className="header-tools">
          <DensityToggle />
          {counts.finished > 0 ? (
            <button type="button" className="button ghost" onClick={clearFinished}>
              Clear finished
            </button>
          ) : null}
        </div>
      }
    >
      {jobOrder.length === 0 ? (
        <EmptyTransfers />
      ) : (
        <ul className={`transfer-list${compact ? ' compact' : ''}`} aria-label="Transfers">
          {jobOrder.map((id) => (
            <TransferRow key={id} jobId={id} />
          ))}
        </ul>
      )}
    </ScreenFrame>
  );
}

function EmptyTransfers() {
  const { cloneSample, openDialog, pickBundle } = useSluiceShallow((s) => ({
    cloneSample: s.cloneSample,
    openDialog: s.openDialog,
    pickBundle: s.pickBundle,
  }));
  const [starting, setStarting] = useState(false);
  return (
    <EmptyState icon="transfers" title="Clone your first repository" testId="empty-transfers" large>
      <p>
        Sluice streams a Mercurial repository&rsquo;s store straight to disk, byte for byte like{' '}
        <code>hg clone --stream</code>. Try it on the bundled sample repository, or bring your own.
      </p>
      <div className="empty-actions">
        <button
          type="button"
          className="button primary large"
          disabled={starting}
          onClick={() => {
            setStarting(true);
            void cloneSample().finally(() => setStarting(false));
          }}
        >
          <Icon name="sample" /> {starting ? 'Starting…' : 'Clone the sample repository'}
        </button>
        <button type="button" className="button large" onClick={() => openDialog({ type: 'clone' })}>
          <Icon name="clone" /> Clone from URL…
        </button>
        <button type="button" className="button large" onClick={() => void pickBundle()}>
          <Icon name="bundle" /> Apply a bundle…
        </button>
      </div>
      <p className="empty-hint">
        <Icon name="drop" />
        <span>
          Or drop a stream bundle (<code>.hg</code>) anywhere in this window.
        </span>
      </p>
    </EmptyState>
  );
}
