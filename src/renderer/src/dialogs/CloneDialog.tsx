// Clone from URL: validates the URL as you type, "Test connection" shows what the server offers,
// the destination defaults to <default clone dir>/<repository name> until you change it.

import { useEffect, useMemo, useState, type FormEvent } from 'react';
import type { CloneRequest, ServerInfo, StreamVersionChoice } from '../../../shared/jobs';
import { Dialog, FormFooter } from '../components/Dialog';
import {
  CheckboxField,
  FolderField,
  StreamChoice,
  TextField,
  TransferOptions,
  type TransferOptionValues,
} from '../components/fields';
import { Icon } from '../components/Icon';
import { ErrorDetails } from '../components/ErrorDetails';
import { toUiError, type UiError } from '../lib/errors';
import { dirName, joinPath, repoNameFromUrl } from '../lib/paths';
import { destinationProblem, HgCommandLine, RecentFolders, useDestinationCheck } from './clone-helpers';
import { useSluice, useSluiceShallow } from '../store/react';
import {
  closerFromDefaults,
  transferOptionsFrom,
  validateCloneUrl,
  validateDestination,
} from '../store/requests';

type Probe =
  | { state: 'idle' }
  | { state: 'probing'; url: string }
  | { state: 'ok'; url: string; info: ServerInfo }
  | { state: 'error'; url: string; error: UiError };

export function CloneDialog({ initial }: { initial?: Partial<CloneRequest> }) {
  const { recentUrls, recentCloneDirs, rememberCloneJob } = useSluiceShallow((s) => ({
    recentUrls: s.recentUrls,
    recentCloneDirs: s.recentCloneDirs,
    rememberCloneJob: s.rememberCloneJob,
  }));
  const { closeDialog, startJob, probeServer, setScreen, notify } = useSluiceShallow((s) => ({
    closeDialog: s.closeDialog,
    startJob: s.startJob,
    probeServer: s.probeServer,
    setScreen: s.setScreen,
    notify: s.notify,
  }));
  const defaults = useSluice((s) => s.defaults);
  const appInfo = useSluice((s) => s.appInfo);

  const [url, setUrl] = useState(initial?.url ?? '');
  const [dest, setDest] = useState(initial?.dest ?? '');
  const [destTouched, setDestTouched] = useState(Boolean(initial?.dest));
  const [stream, setStream] = useState<StreamVersionChoice>(initial?.stream ?? defaults.stream);
  const [cloneBundles, setCloneBundles] = useState(initial?.cloneBundles ?? true);
  const [obsmarkers, setObsmarkers] = useState(initial?.obsmarkers ?? false);
  // hg clone checks out a working copy unless -U; -u REV picks the revision
  const [checkout, setCheckout] = useState(initial?.update ?? true);
  const [updateRev, setUpdateRev] = useState(initial?.updateRev ?? '');
  const [pull, setPull] = useState(initial?.pull ?? false);
  const [options, setOptions] = useState<TransferOptionValues>(() => transferOptionsFrom(initial, defaults));
  const [showErrors, setShowErrors] = useState(false);
  const [urlTouched, setUrlTouched] = useState(false);
  const [probe, setProbe] = useState<Probe>({ state: 'idle' });
  const [submitting, setSubmitting] = useState(false);
  const [submitError, setSubmitError] = useState<UiError | null>(null);

  const urlError = validateCloneUrl(url);
  const destCheck = useDestinationCheck(dest.trim(), !validateDestination(dest));
  const destError = validateDestination(dest) ?? destinationProblem(destCheck);
  // the folder of the last clone, else the clone folder of Settings
  const cloneParent = recentCloneDirs[0] ?? appInfo?.defaultCloneDir;
  const suggestedDest = useMemo(
    () =>
      appInfo && cloneParent && !urlError
        ? joinPath(cloneParent, repoNameFromUrl(url.trim()), appInfo.platform)
        : '',
    [appInfo, cloneParent, url, urlError],
  );

  useEffect(() => {
    if (!destTouched && suggestedDest) setDest(suggestedDest);
  }, [destTouched, suggestedDest]);

  const probeResult = probe.state === 'ok' && probe.url === url.trim() ? probe.info : undefined;

  const testConnection = async () => {
    if (urlError) {
      setUrlTouched(true);
      document.getElementById('clone-url')?.focus();
      return;
    }
    const target = url.trim();
    setProbe({ state: 'probing', url: target });
    try {
      const info = await probeServer(target);
      setProbe({ state: 'ok', url: target, info });
    } catch (e) {
      setProbe({ state: 'error', url: target, error: toUiError(e) });
    }
  };

  const buildRequest = (): CloneRequest => ({
    kind: 'clone',
    url: url.trim(),
    dest: dest.trim(),
    stream,
    closer: closerFromDefaults(options),
    verify: options.verify,
    cloneBundles,
    ...(obsmarkers ? { obsmarkers: true } : {}),
    update: checkout,
    ...(checkout && updateRev.trim() !== '' ? { updateRev: updateRev.trim() } : {}),
    ...(pull ? { pull: true } : {}),
  });

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (urlError || destError) {
      setShowErrors(true);
      document.getElementById(urlError ? 'clone-url' : 'clone-dest')?.focus();
      return;
    }
    setSubmitting(true);
    setSubmitError(null);
    const request = buildRequest();
    try {
      const jobId = await startJob(request, undefined, 'user');
      // Settings holds the defaults: a choice made here is for this clone only
      void rememberCloneJob(jobId, request.url, dirName(request.dest));
      closeDialog();
      setScreen('transfers');
    } catch (err) {
      const ue = toUiError(err);
      setSubmitError(ue);
      notify({ tone: 'error', text: 'The clone did not start', detail: ue.message });
    } finally {
      setSubmitting(false);
    }
  };

  return (
    <Dialog
      title="Clone from URL"
      onClose={closeDialog}
      size="medium"
      testId="clone-dialog"
      footer={
        <FormFooter
          formId="clone-form"
          onCancel={closeDialog}
          icon="clone"
          label={submitting ? 'Starting…' : 'Clone'}
          disabled={submitting}
        />
      }
    >
      <form id="clone-form" onSubmit={(e) => void submit(e)} noValidate>
        <TextField
          id="clone-url"
          label="Repository URL"
          type="url"
          inputMode="url"
          value={url}
          onChange={(v) => setUrl(v)}
          placeholder="https://hg.example.org/repo"
          error={showErrors || urlTouched ? urlError : null}
          onBlur={() => url.trim() !== '' && setUrlTouched(true)}
          required
          list="clone-recent-urls"
          after={
            <button
              type="button"
              className="button"
              onClick={() => void testConnection()}
              disabled={probe.state === 'probing'}
            >
              <Icon name="plug" /> {probe.state === 'probing' ? 'Testing…' : 'Test connection'}
            </button>
          }
        />
        <datalist id="clone-recent-urls">
          {recentUrls.map((u) => (
            <option key={u} value={u} />
          ))}
        </datalist>
        <ProbePanel probe={probe} url={url.trim()} stream={stream} />
        <FolderField
          id="clone-dest"
          label="Destination folder"
          value={dest}
          onChange={(v) => {
            setDest(v);
            setDestTouched(true);
          }}
          // the host's check shows as soon as it answers; the path-shape check after a submit
          error={showErrors ? destError : destinationProblem(destCheck)}
          placeholder={
            appInfo ? joinPath(appInfo.defaultCloneDir, '<repository name>', appInfo.platform) : undefined
          }
          hint="A new folder; Sluice writes into a temporary folder beside it and renames it when the clone is complete."
        />
        <RecentFolders
          dirs={recentCloneDirs}
          name={urlError ? 'repository' : repoNameFromUrl(url.trim())}
          platform={appInfo?.platform}
          onPick={(d) => {
            setDest(d);
            setDestTouched(true);
          }}
        />
        <CheckboxField
          id="clone-checkout"
          label="Check out working copy"
          checked={checkout}
          onChange={setCheckout}
        />
        {checkout ? (
          <TextField
            id="clone-update-rev"
            label="Revision to check out"
            value={updateRev}
            onChange={setUpdateRev}
            placeholder="@ bookmark, else the tip of default"
            hint="A bookmark, tag, branch, revision number or changeset id (hg clone -u)."
          />
        ) : null}
        <details className="options" open={Boolean(initial)}>
          <summary>Options</summary>
          <div className="options-grid">
            <StreamChoice
              value={stream}
              onChange={setStream}
              offered={probeResult ? { v1: probeResult.streamV1, v2: probeResult.streamV2 } : undefined}
            />
            <TransferOptions
              value={options}
              onChange={setOptions}
              verifyLabel="Verify the repository after cloning (like hg verify)"
            />
            <CheckboxField
              id="clone-bundles"
              label="Use a clone bundle when the server advertises one"
              checked={cloneBundles}
              onChange={setCloneBundles}
            />
            <CheckboxField
              id="clone-obsmarkers"
              label="Take obsolescence markers (for evolve users; stream v2 only)"
              checked={obsmarkers}
              onChange={setObsmarkers}
            />
            <CheckboxField
              id="clone-pull"
              label="Use pull protocol (like hg clone --pull; servers without stream clones are pulled from anyway)"
              checked={pull}
              onChange={setPull}
            />
          </div>
        </details>
        <HgCommandLine
          request={urlError || validateDestination(dest) ? null : buildRequest()}
          platform={appInfo?.platform}
        />
        {submitError ? <ErrorDetails error={submitError} compact /> : null}
      </form>
    </Dialog>
  );
}

function yesNo(v: boolean) {
  return v ? (
    <span className="yes">
      <Icon name="check" /> yes
    </span>
  ) : (
    <span className="no">no</span>
  );
}

function ProbePanel({ probe, url, stream }: { probe: Probe; url: string; stream: StreamVersionChoice }) {
  if (probe.state === 'idle') return null;
  if (probe.url !== url) return null;
  if (probe.state === 'probing') {
    return (
      <div className="probe-panel" aria-live="polite" aria-busy="true">
        <span className="spinner" aria-hidden="true" /> Asking {probe.url} what it offers…
      </div>
    );
  }
  if (probe.state === 'error') {
    return (
      <div className="probe-panel" aria-live="polite">
        <ErrorDetails error={probe.error} compact />
      </div>
    );
  }
  const info = probe.info;
  const noStream = !info.streamV1 && !info.streamV2;
  const chosenMissing = (stream === 'v1' && !info.streamV1) || (stream === 'v2' && !info.streamV2);
  return (
    <div className="probe-panel ok" aria-live="polite" data-testid="probe-result">
      <p className="probe-title">
        <Icon name="check" /> Connected. The server offers:
      </p>
      <dl className="facts">
        <dt>Stream clone v1</dt>
        <dd>{yesNo(info.streamV1)}</dd>
        <dt>Stream clone v2</dt>
        <dd>{yesNo(info.streamV2)}</dd>
        <dt>Compression</dt>
        <dd>{info.compression.length ? info.compression.join(', ') : 'none'}</dd>
        <dt>Clone bundles</dt>
        <dd>{info.cloneBundles ? 'advertised' : 'none'}</dd>
        <dt>Requirements</dt>
        <dd>
          {info.streamRequirements.length ? (
            <ul className="chips">
              {info.streamRequirements.map((r) => (
                <li key={r} className="chip">
                  {r}
                </li>
              ))}
            </ul>
          ) : (
            '–'
          )}
        </dd>
        {info.heads !== undefined ? (
          <>
            <dt>Heads</dt>
            <dd>{info.heads}</dd>
          </>
        ) : null}
      </dl>
      {info.authRequired ? (
        <p className="probe-note">
          The server asks for credentials; you will be prompted when the clone starts.
        </p>
      ) : null}
      {noStream ? (
        <p className="probe-note">
          This server offers no stream clone; Sluice will clone it with the pull protocol, as hg does.
        </p>
      ) : null}
      {!noStream && chosenMissing ? (
        <p className="probe-warning">
          The server does not offer stream {stream}; choose Auto or the other format.
        </p>
      ) : null}
    </div>
  );
}
