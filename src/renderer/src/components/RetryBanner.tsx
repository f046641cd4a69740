// A transfer that lost its connection and waits before trying again: a countdown to the engine's
// next attempt, why the last one failed, and how much of the download is kept.

import { useEffect, useState } from 'react';
import { useSluice } from '../store/react';
import { retrySecondsLeft } from '../store/transfers';
import { formatBytes } from '../lib/format';
import { Icon } from './Icon';

export function RetryBanner({ jobId }: { jobId: string }) {
  const retry = useSluice((s) => s.jobs[jobId]?.retry);
  const [now, setNow] = useState(() => Date.now());
  // one timer per row, for as long as this wait lasts: a new retry event or its clearing (progress,
  // the end) replaces or removes it
  useEffect(() => {
    if (!retry) return;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [retry]);
  if (!retry) return null;
  const left = retrySecondsLeft(retry, now);
  const kept =
    retry.totalBytes !== null
      ? `${formatBytes(retry.bytes)} of ${formatBytes(retry.totalBytes)}`
      : formatBytes(retry.bytes);
  return (
    <div className="stall-banner retry-banner" role="status" data-testid="retry-banner">
      <Icon name="warning" />
      <span>
        <strong data-testid="retry-countdown">
          {left > 0 ? `Connection lost — retrying in ${left} s` : 'Connection lost — retrying now'} (attempt{' '}
          {retry.attempt} of {retry.maxAttempts})
        </strong>
        <br />
        <span className="retry-reason">{retry.reason}</span>
        <br />
        <span data-testid="retry-kept">kept so far: {kept}</span>
      </span>
    </div>
  );
}
