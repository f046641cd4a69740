// An error as the user sees it: what happened in words, what to do, and the engine's detail.

import { explainFailure, type UiError } from '../lib/errors';
import { Icon } from './Icon';
import type { ReactNode } from 'react';

/** `backticked` parts of a hint as <code>. */
function withCode(text: string): ReactNode {
  const parts = text.split('`');
  return parts.map((part, i) => (i % 2 === 1 ? <code key={i}>{part}</code> : part));
}

export function ErrorDetails({
  error,
  actions,
  compact,
}: {
  error: UiError;
  actions?: ReactNode;
  compact?: boolean;
}) {
  const ex = explainFailure(error);
  return (
    <div className={`error-details${compact ? ' compact' : ''}`} role="alert">
      <Icon name="error" className="error-icon" />
      <div className="error-text">
        <p className="error-title">{ex.title}</p>
        <p className="error-hint">{withCode(ex.hint)}</p>
        <p className="error-raw">
          <code>{error.code}</code> {error.message}
        </p>
      </div>
      {actions ? <div className="error-actions">{actions}</div> : null}
    </div>
  );
}
