// An error as the user sees it: what happened in words, what to do, and the engine's detail.

import { explainError, type UiError } from '../lib/errors';
import { Icon } from './Icon';
import type { ReactNode } from 'react';

export function ErrorDetails({ error, actions, compact }: { error: UiError; actions?: ReactNode; compact?: boolean }) {
  const ex = explainError(error.code);
  return (
    <div className={`error-details${compact ? ' compact' : ''}`} role="alert">
      <Icon name="error" className="error-icon" />
      <div className="error-text">
        <p className="error-title">{ex.title}</p>
        <p className="error-hint">{ex.hint}</p>
        <p className="error-raw">
          <code>{error.code}</code> {error.message}
        </p>
      </div>
      {actions ? <div className="error-actions">{actions}</div> : null}
    </div>
  );
}
