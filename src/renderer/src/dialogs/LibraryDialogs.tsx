// The repository library's two small dialogs: "Add existing" (a path, or the host's folder picker),
// and "where is it" for hosts that cannot open a folder or a terminal (the web host).

import { useState, type FormEvent } from 'react';
import { Dialog, FormFooter } from '../components/Dialog';
import { FolderField } from '../components/fields';
import { Icon } from '../components/Icon';
import { copyText } from '../store/library';
import { useSluice, useSluiceShallow } from '../store/react';
import { validateDestination } from '../store/requests';

export function AddRepositoryDialog() {
  const { closeDialog, addRepository } = useSluiceShallow((s) => ({
    closeDialog: s.closeDialog,
    addRepository: s.addRepository,
  }));
  const [path, setPath] = useState('');
  const [showError, setShowError] = useState(false);
  const error = validateDestination(path)
    ? 'Enter the absolute path of a repository folder (the one holding .hg).'
    : null;
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (error) {
      setShowError(true);
      return;
    }
    if (await addRepository(path.trim())) closeDialog();
  };
  return (
    <Dialog
      title="Add an existing repository"
      size="small"
      onClose={closeDialog}
      testId="add-repository-dialog"
      footer={<FormFooter formId="add-repository-form" onCancel={closeDialog} label="Add" />}
    >
      <form id="add-repository-form" onSubmit={(e) => void submit(e)} noValidate>
        <FolderField
          id="add-repository-path"
          label="Repository folder"
          value={path}
          onChange={setPath}
          placeholder="/home/me/src/project"
          error={showError ? error : null}
        />
        <p className="empty-hint">
          <Icon name="drop" />
          <span>Or drop the folder on the Repositories screen (desktop app).</span>
        </p>
      </form>
    </Dialog>
  );
}

export function RevealDialog({
  path,
  what,
  command,
}: {
  path: string;
  what: 'folder' | 'terminal';
  command?: string;
}) {
  const closeDialog = useSluice((s) => s.closeDialog);
  const notify = useSluice((s) => s.notify);
  const text = what === 'terminal' && command ? command : path;
  const copy = () =>
    copyText(text).then(
      () =>
        notify({
          tone: 'success',
          text: what === 'terminal' ? 'Copied the command' : 'Copied the path',
          detail: text,
        }),
      (e: unknown) => notify({ tone: 'error', text: 'Could not copy', detail: String(e) }),
    );
  return (
    <Dialog
      title={what === 'terminal' ? 'Open a terminal there' : 'Where the folder is'}
      size="small"
      onClose={closeDialog}
      testId="reveal-dialog"
      footer={
        <>
          <button type="button" className="button" onClick={closeDialog}>
            Done
          </button>
          <button type="button" className="button primary" onClick={() => void copy()}>
            {what === 'terminal' ? 'Copy command' : 'Copy path'}
          </button>
        </>
      }
    >
      <p>
        {what === 'terminal'
          ? 'Sluice could not start a terminal here (the web host does not start programs for a browser page). In a terminal, run:'
          : 'A browser page cannot open your file manager. The folder is at:'}
      </p>
      <p className="reveal-path mono" data-testid="reveal-path">
        {text}
      </p>
    </Dialog>
  );
}
