// A job's debug log (hg --debug style lines): filter, follow the tail, export the whole log (the
// host writes it from its copy; the renderer only ever holds the lines on screen).

import { useCallback, useState } from 'react';
import { Dialog } from '../components/Dialog';
import { CheckboxField, SearchField } from '../components/fields';
import { Icon } from '../components/Icon';
import { LogView } from '../components/LogView';
import { KIND_LABEL } from '../components/labels';
import { baseName } from '../lib/paths';
import { useSluice, useSluiceShallow } from '../store/react';
import { describeRequest } from '../store/transfers';

export function LogDialog({ jobId }: { jobId: string }) {
  const { closeDialog, exportJobLog } = useSluiceShallow((s) => ({
    closeDialog: s.closeDialog,
    exportJobLog: s.exportJobLog,
  }));
  const job = useSluiceShallow((s) => {
    const j = s.jobs[jobId];
    if (j) return { kind: j.kind, source: j.source, dest: j.dest, label: j.label, state: j.state };
    // a job of an earlier session, opened from the history: the host still has its log
    const r = s.history.find((h) => h.jobId === jobId);
    const d = r ? describeRequest(r.request) : undefined;
    return {
      kind: d?.kind ?? 'apply',
      source: d?.source ?? '',
      dest: d?.dest,
      label: r?.label,
      state: r?.state,
    };
  });
  const running = useSluice((s) => {
    const st = s.jobs[jobId]?.state;
    return st === 'running' || st === 'queued';
  });
  const [query, setQuery] = useState('');
  // a live log follows its tail; a finished one opens at the top, where hg's output starts
  const [follow, setFollow] = useState(running);
  const [counts, setCounts] = useState({ shown: 0, total: 0, dropped: 0 });
  const onCounts = useCallback((c: typeof counts) => setCounts(c), []);
  const name = job.label ?? baseName(job.dest ?? job.source) ?? jobId;

  const exportLog = () => {
    const header = `# Sluice ${KIND_LABEL[job.kind].toLowerCase()} ${job.source}${job.dest ? ` -> ${job.dest}` : ''} (job ${jobId}, ${job.state})`;
    const safe = name.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^-|-$/g, '') || 'job';
    void exportJobLog(jobId, `${safe}-debug.log`, header);
  };

  return (
    <Dialog
      title={
        <>
          Debug log <span className="dialog-title-sub">{name}</span>
        </>
      }
      onClose={closeDialog}
      size="full"
      testId="log-dialog"
      initialFocusId="log-filter"
    >
      <div className="log-toolbar" role="toolbar" aria-label="Log tools">
        <SearchField
          id="log-filter"
          label="Filter lines"
          placeholder="Filter lines (e.g. data/ or .d )"
          value={query}
          onChange={setQuery}
          spellCheck={false}
          autoComplete="off"
        />
        <span className="log-count" aria-live="polite" data-testid="log-count">
          {query.trim()
            ? `${counts.shown.toLocaleString('en-US')} of ${counts.total.toLocaleString('en-US')} lines`
            : `${counts.total.toLocaleString('en-US')} lines`}
          {counts.dropped > 0 ? ` (first ${counts.dropped.toLocaleString('en-US')} dropped)` : ''}
        </span>
        <CheckboxField
          id="log-follow"
          label={running ? 'Follow live' : 'Follow end'}
          checked={follow}
          onChange={setFollow}
          compact
        />
        <button type="button" className="button" onClick={exportLog}>
          <Icon name="download" /> Export…
        </button>
      </div>
      <LogView jobId={jobId} query={query} follow={follow} onFollowChange={setFollow} onCounts={onCounts} />
    </Dialog>
  );
}
