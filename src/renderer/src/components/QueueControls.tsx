// A queued transfer's place in the host's queue, and moving it: next to start, or one place on.

import { invoke } from '../api';
import { useSluice } from '../store/react';
import { errorNotice } from '../lib/errors';

export function QueueControls({ jobId, title }: { jobId: string; title: string }) {
  const position = useSluice((s) => s.jobs[jobId]?.queuePosition);
  const notify = useSluice((s) => s.notify);
  if (position === undefined) return null;
  const move = (to: number) =>
    void invoke('job:move', jobId, to).catch((err: unknown) =>
      notify(errorNotice(`Could not move ${title} in the queue`, err)),
    );
  return (
    <>
      <span className="queue-position muted" data-testid="queue-position">
        {position === 0 ? 'next in queue' : `#${position + 1} in queue`}
      </span>
      {position > 0 ? (
        <>
          <button
            type="button"
            className="button small"
            onClick={() => move(0)}
            aria-label={`Run ${title} next`}
          >
            Run next
          </button>
          <button
            type="button"
            className="button small"
            onClick={() => move(position - 1)}
            aria-label={`Move ${title} up the queue`}
          >
            ↑
          </button>
        </>
      ) : null}
    </>
  );
}
