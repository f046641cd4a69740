// Apply a stream bundle: what the bundle is (read from its header by bundle:inspect, before anything
// is written), where it goes, how files are closed.

import { useState, type FormEvent } from 'react';
import type { ApplyRequest, BundleInfo } from '../../../shared/jobs';
import { formatHgBytes } from '../../../shared/events';
import { Dialog, FormFooter } from '../components/Dialog';
import { FolderField, TransferOptions, type TransferOptionValues } from '../components/fields';
import { ErrorDetails } from '../components/ErrorDetails';
import { BUNDLE_TYPE_LABEL, COMPRESSION_LABEL } from '../components/labels';
import { toUiError, type UiError } from '../lib/errors';
import { formatBytes, formatCount } from '../lib/format';
import { baseName, joinPath, repoNameFromBundle, dirName } from '../lib/paths';
import { useSluice, useSluiceShallow } from '../store/react';
import { closerFromDefaults, transferOptionsFrom, validateDestination } from '../store/requests';

export function BundleFacts({ info }: { info: BundleInfo }) {
  return (
    <dl className="facts" data-testid="bundle-facts">
      <dt>File</dt>
      <dd className="path" title={info.path}>
        {baseName(info.path)}
      </dd>
      <dt>Type</dt>
      <dd>{BUNDLE_TYPE_LABEL[info.type]}</dd>
      <dt>Compression</dt>
      <dd>{COMPRESSION_LABEL[info.compression]}</dd>
      {info.type === 'changegroup' ? (
        <>
          <dt>Changesets</dt>
          <dd data-testid="bundle-changesets">
            {info.changesets !== undefined ? formatCount(info.changesets) : 'unknown'}
            {info.changegroupVersion ? (
              <span className="muted"> (changegroup {info.changegroupVersion})</span>
            ) : null}
          </dd>
        </>
      ) : (
        <>
          <dt>Files</dt>
          <dd data-testid="bundle-files">{formatCount(info.files)}</dd>
          <dt>Data</dt>
          <dd>
            {formatBytes(info.bytes)}{' '}
            <span className="muted">({formatHgBytes(info.bytes)} as hg counts it)</span>
          </dd>
        </>
      )}
      <dt>Size on disk</dt>
      <dd>
        {formatBytes(info.sizeOnDisk)}
        {info.missingBytes ? (
          <p className="probe-warning" role="alert" data-testid="bundle-truncated">
            This bundle is truncated: it declares {formatBytes(info.bytes)} of data but holds only{' '}
            {formatBytes(info.sizeOnDisk)} on disk (at least {formatBytes(info.missingBytes)} missing). The
            apply would fail partway; download or copy it again.
          </p>
        ) : null}
      </dd>
      <dt>Requirements</dt>
      <dd data-testid="bundle-requirements">
        {info.type === 'changegroup' ? (
          <span className="muted">
            None of its own: a changegroup carries changesets, not a store. A new repository gets Sluice’s
            defaults (as hg init); an existing one keeps its own.
          </span>
        ) : (
          <ul className="chips">
            {info.requirements.map((r) => (
              <li key={r} className={`chip${info.unsupported.includes(r) ? ' chip-bad' : ''}`}>
                {r}
                {info.unsupported.includes(r) ? (
                  <span className="visually-hidden"> (not supported)</span>
                ) : null}
              </li>
            ))}
          </ul>
        )}
      </dd>
    </dl>
  );
}

export function ApplyDialog({
  info,
  initialDest,
  initial,
}: {
  info: BundleInfo;
  initialDest?: string;
  /** a failed apply's request ("Edit & retry"): its options win over the defaults */
  initial?: Partial<ApplyRequest>;
}) {
  const { closeDialog, startJob, setScreen } = useSluiceShallow((s) => ({
    closeDialog: s.closeDialog,
    startJob: s.startJob,
    setScreen: s.setScreen,
  }));
  const defaults = useSluice((s) => s.defaults);
  const appInfo = useSluice((s) => s.appInfo);
  const [dest, setDest] = useState(
    () =>
      initialDest ??
      (appInfo
        ? joinPath(appInfo.defaultCloneDir, repoNameFromBundle(info.path), appInfo.platform)
        : joinPath(dirName(info.path), repoNameFromBundle(info.path))),
  );
  const [options, setOptions] = useState<TransferOptionValues>(() => transferOptionsFrom(initial, defaults));
  const [showErrors, setShowErrors] = useState(false);
  const [submitting, setSubmitting] = useState(false);
  const [error, setError] = useState<UiError | null>(null);
  const destError = validateDestination(dest);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (destError) {
      setShowErrors(true);
      document.getElementById('apply-dest')?.focus();
      return;
    }
    setSubmitting(true);
    const request: ApplyRequest = {
      kind: 'apply',
      bundlePath: info.path,
      dest: dest.trim(),
      closer: closerFromDefaults(options),
      verify: options.verify,
    };
    try {
      // Settings holds the defaults: a choice made here is for this apply only
      await startJob(request, undefined, 'user');
      closeDialog();
      setScreen('transfers');
    } catch (err) {
      setError(toUiError(err));
    } finally {
      setSubmitting(false);
    }
  };

  return (
    <Dialog
      title={info.type === 'changegroup' ? 'Apply changegroup bundle' : 'Apply stream bundle'}
      onClose={closeDialog}
      testId="apply-dialog"
      footer={
        <FormFooter
          formId="apply-form"
          onCancel={closeDialog}
          icon="apply"
          label={submitting ? 'Starting…' : 'Apply bundle'}
          disabled={submitting}
        />
      }
    >
      <form id="apply-form" onSubmit={(e) => void submit(e)} noValidate>
        <BundleFacts info={info} />
        <FolderField
          id="apply-dest"
          label={info.type === 'changegroup' ? 'Repository folder' : 'New repository folder'}
          value={dest}
          onChange={setDest}
          error={showErrors ? destError : null}
          hint={
            info.type === 'changegroup'
              ? 'An existing repository, whose changesets it adds to (as hg unbundle), or a new or empty folder.'
              : 'Must not exist yet, or be an empty folder: a stream bundle makes a whole repository.'
          }
        />
        <details className="options">
          <summary>Options</summary>
          <div className="options-grid">
            <TransferOptions
              value={options}
              onChange={setOptions}
              verifyLabel="Verify the repository after applying"
            />
          </div>
        </details>
        {error ? <ErrorDetails error={error} compact /> : null}
      </form>
    </Dialog>
  );
}
