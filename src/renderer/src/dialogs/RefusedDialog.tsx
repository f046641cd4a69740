// A file that Sluice will not apply, refused before anything starts, with the reason in words.

import type { BundleInfo } from '../../../shared/jobs';
import { Dialog } from '../components/Dialog';
import { ErrorDetails } from '../components/ErrorDetails';
import { baseName } from '../lib/paths';
import type { UiError } from '../lib/errors';
import { useSluiceShallow } from '../store/react';
import { BundleFacts } from './ApplyDialog';

export function RefusedDialog({ path, error, info }: { path: string; error: UiError; info?: BundleInfo }) {
  const { closeDialog, pickBundle } = useSluiceShallow((s) => ({
    closeDialog: s.closeDialog,
    pickBundle: s.pickBundle,
  }));
  return (
    <Dialog
      title={`Sluice cannot apply “${baseName(path)}”`}
      role="alertdialog"
      onClose={closeDialog}
      size="small"
      testId="refused-dialog"
      footer={
        <>
          <button
            type="button"
            className="button"
            onClick={() => {
              closeDialog();
              void pickBundle();
            }}
          >
            Choose another bundle…
          </button>
          <button type="button" className="button primary" onClick={closeDialog}>
            OK
          </button>
        </>
      }
    >
      <p className="refused-lead">Nothing was written.</p>
      <ErrorDetails error={error} />
      {info ? <BundleFacts info={info} /> : null}
    </Dialog>
  );
}
