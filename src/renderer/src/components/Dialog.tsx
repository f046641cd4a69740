// Modal dialogs on the native <dialog> element: showModal() makes the rest of the page inert (focus
// cannot leave), puts it in the top layer, and Esc fires `cancel`, which we route to onClose.
// Focus returns to whatever had it before the dialog opened.

import { useEffect, useId, useRef, type ReactNode } from 'react';
import { Icon, type IconName } from './Icon';

interface DialogProps {
  title: ReactNode;
  onClose: () => void;
  children: ReactNode;
  footer?: ReactNode;
  /** alertdialog for refusals and confirmations */
  role?: 'dialog' | 'alertdialog';
  size?: 'small' | 'medium' | 'large' | 'full';
  description?: ReactNode;
  className?: string;
  /** an id of the element that gets focus first (default: the first field or button) */
  initialFocusId?: string;
  testId?: string;
}

export function Dialog({
  title,
  onClose,
  children,
  footer,
  role = 'dialog',
  size = 'medium',
  description,
  className,
  initialFocusId,
  testId,
}: DialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const descId = useId();
  const onCloseRef = useRef(onClose);
  onCloseRef.current = onClose;

  useEffect(() => {
    const dialog = ref.current!;
    const previous = document.activeElement as HTMLElement | null;
    if (!dialog.open) dialog.showModal();
    const first =
      (initialFocusId ? document.getElementById(initialFocusId) : null) ??
      dialog.querySelector<HTMLElement>(
        '[data-autofocus], .dialog-body input:not([disabled]), .dialog-body select, .dialog-body textarea',
      ) ??
      dialog.querySelector<HTMLElement>('.dialog-footer .primary') ??
      dialog.querySelector<HTMLElement>('.dialog-footer button');
    first?.focus();
    const onCancel = (e: Event) => {
      e.preventDefault();
      onCloseRef.current();
    };
    // Chromium's close-watcher rules may close a dialog without a cancellable `cancel` (repeated
    // Esc without user activation): keep the store in step when that happens.
    let closingOurselves = false;
    const onNativeClose = () => {
      if (!closingOurselves) onCloseRef.current();
    };
    dialog.addEventListener('cancel', onCancel);
    dialog.addEventListener('close', onNativeClose);
    return () => {
      closingOurselves = true;
      dialog.removeEventListener('cancel', onCancel);
      dialog.removeEventListener('close', onNativeClose);
      if (dialog.open) dialog.close();
      if (previous && document.contains(previous)) previous.focus();
    };
  }, [initialFocusId]);

  return (
    <dialog
      ref={ref}
      className={`dialog dialog-${size}${className ? ` ${className}` : ''}`}
      role={role === 'alertdialog' ? 'alertdialog' : undefined}
      aria-labelledby={titleId}
      aria-describedby={description ? descId : undefined}
      data-testid={testId}
    >
      <header className="dialog-header">
        <h2 id={titleId}>{title}</h2>
        <button type="button" className="icon-button" onClick={() => onCloseRef.current()} aria-label="Close">
          <Icon name="close" />
        </button>
      </header>
      {description ? (
        <p id={descId} className="dialog-description">
          {description}
        </p>
      ) : null}
      <div className="dialog-body">{children}</div>
      {footer ? <footer className="dialog-footer">{footer}</footer> : null}
    </dialog>
  );
}

/**
 * The footer of a dialog whose body is a form: Cancel, and the submit button. It sits in the footer,
 * outside the <form>, so it names the form by id.
 */
export function FormFooter({
  formId,
  onCancel,
  label,
  icon,
  disabled,
}: {
  formId: string;
  onCancel: () => void;
  label: string;
  icon?: IconName;
  disabled?: boolean;
}) {
  return (
    <>
      <button type="button" className="button" onClick={onCancel}>
        Cancel
      </button>
      <button type="submit" form={formId} className="button primary" disabled={disabled}>
        {icon ? (
          <>
            <Icon name={icon} />{' '}
          </>
        ) : null}
        {label}
      </button>
    </>
  );
}
