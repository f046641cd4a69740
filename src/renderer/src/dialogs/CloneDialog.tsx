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

/** The clone form's fields, as typed; the destination follows the URL until the user edits it. */
function useCloneForm(initial: Partial<CloneRequest> | undefined) {
  const recentCloneDirs = useSluice((s) => s.recentCloneDirs);
  const defaults = useSluice((s) => s.defaults);
  const appInfo = useSluice((s) => s.appInfo);
  const [url, setUrl] = useState(initial?.url ?? '');
  const [dest, setDestValue] = useState(initial?.dest ?? '');
  const [destTouched, setDestTouched] = useState(Boolean(initial?.dest));
  // Settings' default, or what a failed clone used ("Edit & retry"): never a previous dialog's choice
  const [stream, setStream] = useState<StreamVersionChoice>(initial?.stream ?? defaults.stream);
  const [cloneBundles, setCloneBundles] = useState(initial?.cloneBundles ?? true);
  const [obsmarkers, setObsmarkers] = useState(initial?.obsmarkers ?? false);
  // hg clone checks out a working copy unless -U; -u REV picks the revision
  const [checkout, setCheckout] = useState(initial?.update ?? true);
  const [updateRev, setUpdateRev] = useState(initial?.updateRev ?? '');
  const [pull, setPull] = useState(initial?.pull ?? false);
  const [options, setOptions] = useState<TransferOptionValues>(() => transferOptionsFrom(initial, defaults));

  const urlError = validateCloneUrl(url);
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
    if (!destTouched && suggestedDest) setDestValue(suggestedDest);
  }, [destTouched, suggestedDest]);

  const request = (): CloneRequest => ({
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
  const setDest = (v: string) => {
    setDestValue(v);
    setDestTouched(true);
  };
  return {
    ...{ url, setUrl, urlError, dest, setDest, stream, setStream, cloneBundles, setCloneBundles },
    ...{ obsmarkers, setObsmarkers, checkout, setCheckout, updateRev, setUpdateRev, pull, setPull },
    ...{ options, setOptions, request },
  };
}

type CloneForm = ReturnType<typeof useCloneForm>;

/** "Test connection": what the server at the form's URL offers, for that URL only. */
function useProbe(form: CloneForm, onInvalidUrl: () => void) {
  const probeServer = useSluice((s) => s.probeServer);
  const [probe, setProbe] = useState<Probe>({ state: 'idle' });
  const test = async () => {
    if (form.urlError) return onInvalidUrl();
    const target = form.url.trim();
    setProbe({ state: 'probing', url: target });
    try {
      setProbe({ state: 'ok', url: target, info: await probeServer(target) });
    } catch (e) {
      setProbe({ state: 'error', url: target, error: toUiError(e) });
    }
  };
  const result = probe.state === 'ok' && probe.url === form.url.trim() ? probe.info : undefined;
  return { probe, test, result };
}

export function CloneDialog({
  initial,
  fromLink = false,
}: {
  initial?: Partial<CloneRequest>;
  /** filled from a link a web page can make: say so, and leave the options folded */
  fromLink?: boolean;
}) {
  const { closeDialog, startJob, setScreen, notify, rememberCloneJob } = useSluiceShallow((s) => ({
    closeDialog: s.closeDialog,
    startJob: s.startJob,
    setScreen: s.setScreen,
    notify: s.notify,
    rememberCloneJob: s.rememberCloneJob,
  }));
  const platform = useSluice((s) => s.appInfo?.platform);
  const form = useCloneForm(initial);
  const [showErrors, setShowErrors] = useState(false);
  const [urlTouched, setUrlTouched] = useState(false);
  const [submitting, setSubmitting] = useState(false);
  const [submitError, setSubmitError] = useState<UiError | null>(null);
  const probe = useProbe(form, () => {
    setUrlTouched(true);
    document.getElementById('clone-url')?.focus();
  });
  const destCheck = useDestinationCheck(form.dest.trim(), !validateDestination(form.dest));
  const destError = validateDestination(form.dest) ?? destinationProblem(destCheck);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (form.urlError || destError) {
      setShowErrors(true);
      document.getElementById(form.urlError ? 'clone-url' : 'clone-dest')?.focus();
      return;
    }
    setSubmitting(true);
    setSubmitError(null);
    const request = form.request();
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
        {fromLink ? (
          <p className="field-hint" data-testid="from-link">
            Filled in from a link. Check the URL, the folder and the revision before you clone.
          </p>
        ) : null}
        <UrlField
          form={form}
          error={showErrors || urlTouched ? form.urlError : null}
          onBlur={() => form.url.trim() !== '' && setUrlTouched(true)}
          probing={probe.probe.state === 'probing'}
          onTest={() => void probe.test()}
        />
        <ProbePanel probe={probe.probe} url={form.url.trim()} stream={form.stream} />
        <DestinationFields form={form} error={showErrors ? destError : destinationProblem(destCheck)} />
        <CheckoutFields form={form} />
        <CloneOptions form={form} open={Boolean(initial) && !fromLink} offered={probe.result} />
        <HgCommandLine
          request={form.urlError || validateDestination(form.dest) ? null : form.request()}
          platform={platform}
        />
        {submitError ? <ErrorDetails error={submitError} compact /> : null}
      </form>
    </Dialog>
  );
}

function UrlField({
  form,
  error,
  onBlur,
  probing,
  onTest,
}: {
  form: CloneForm;
  error: string | null;
  onBlur: () => void;
  probing: boolean;
  onTest: () => void;
}) {
  const recentUrls = useSluice((s) => s.recentUrls);
  return (
    <>
      <TextField
        id="clone-url"
        label="Repository URL"
        type="url"
        inputMode="url"
        value={form.url}
        onChange={(v) => form.setUrl(v)}
        placeholder="https://hg.example.org/repo"
        error={error}
        onBlur={onBlur}
        required
        list="clone-recent-urls"
        after={
          <button type="button" className="button" onClick={onTest} disabled={probing}>
            <Icon name="plug" /> {probing ? 'Testing…' : 'Test connection'}
          </button>
        }
      />
      <datalist id="clone-recent-urls">
        {recentUrls.map((u) => (
          <option key={u} value={u} />
        ))}
      </datalist>
    </>
  );
}

function DestinationFields({ form, error }: { form: CloneForm; error: string | null }) {
  const appInfo = useSluice((s) => s.appInfo);
  const recentCloneDirs = useSluice((s) => s.recentCloneDirs);
  return (
    <>
      <FolderField
        id="clone-dest"
        label="Destination folder"
        value={form.dest}
        onChange={form.setDest}
        // the host's check shows as soon as it answers; the path-shape check after a submit
        error={error}
        placeholder={
          appInfo ? joinPath(appInfo.defaultCloneDir, '<repository name>', appInfo.platform) : undefined
        }
        hint="A new folder; Sluice writes into a temporary folder beside it and renames it when the clone is complete."
      />
      <RecentFolders
        dirs={recentCloneDirs}
        name={form.urlError ? 'repository' : repoNameFromUrl(form.url.trim())}
        platform={appInfo?.platform}
        onPick={form.setDest}
      />
    </>
  );
}

function CheckoutFields({ form }: { form: CloneForm }) {
  return (
    <>
      <CheckboxField
        id="clone-checkout"
        label="Check out working copy"
        checked={form.checkout}
        onChange={form.setCheckout}
      />
      {form.checkout ? (
        <TextField
          id="clone-update-rev"
          label="Revision to check out"
          value={form.updateRev}
          onChange={form.setUpdateRev}
          placeholder="@ bookmark, else the tip of default"
          hint="A bookmark, tag, branch, revision number or changeset id (hg clone -u)."
        />
      ) : null}
    </>
  );
}

function CloneOptions({ form, open, offered }: { form: CloneForm; open: boolean; offered?: ServerInfo }) {
  return (
    <details className="options" open={open}>
      <summary>Options</summary>
      <div className="options-grid">
        <StreamChoice
          value={form.stream}
          onChange={form.setStream}
          offered={offered ? { v1: offered.streamV1, v2: offered.streamV2 } : undefined}
        />
        <TransferOptions
          value={form.options}
          onChange={form.setOptions}
          verifyLabel="Verify the repository after cloning (like hg verify)"
        />
        <CheckboxField
          id="clone-bundles"
          label="Use a clone bundle when the server advertises one"
          checked={form.cloneBundles}
          onChange={form.setCloneBundles}
        />
        <CheckboxField
          id="clone-obsmarkers"
          label="Take obsolescence markers (for evolve users; stream v2 only)"
          checked={form.obsmarkers}
          onChange={form.setObsmarkers}
        />
        <CheckboxField
          id="clone-pull"
          label="Use pull protocol (like hg clone --pull; servers without stream clones are pulled from anyway)"
          checked={form.pull}
          onChange={form.setPull}
        />
      </div>
    </details>
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
