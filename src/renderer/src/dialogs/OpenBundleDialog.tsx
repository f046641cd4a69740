// Where the host has no native file picker (the web host): type the bundle's path, or drop it.

import { useState, type FormEvent } from 'react';
import { Dialog, FormFooter } from '../components/Dialog';
import { TextField } from '../components/fields';
import { Icon } from '../components/Icon';
import { useSluiceShallow } from '../store/react';
import { validateDestination } from '../store/requests';

export function OpenBundleDialog() {
  const { closeDialog, openBundle } = useSluiceShallow((s) => ({
    closeDialog: s.closeDialog,
    openBundle: s.openBundle,
  }));
  const [path, setPath] = useState('');
  const [showError, setShowError] = useState(false);
  const error = validateDestination(path)
    ? 'Enter the absolute path of a bundle file on this machine.'
    : null;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (error) {
      setShowError(true);
      return;
    }
    void openBundle(path.trim());
  };
  return (
    <Dialog
      title="Apply a stream bundle"
      size="small"
      onClose={closeDialog}
      testId="open-bundle-dialog"
      footer={<FormFooter formId="open-bundle-form" onCancel={closeDialog} label="Continue" />}
    >
      <form id="open-bundle-form" onSubmit={submit} noValidate>
        <TextField
          id="open-bundle-path"
          label="Bundle file"
          value={path}
          onChange={setPath}
          placeholder="/home/me/Downloads/repo.hg"
          error={showError ? error : null}
        />
        <p className="empty-hint">
          <Icon name="drop" />
          <span>Or close this and drop the file anywhere in the window.</span>
        </p>
      </form>
    </Dialog>
  );
}
