// What a screen shows while it has nothing to list: an icon, a heading, and what to do about it.

import type { ReactNode } from 'react';
import { Icon, type IconName } from './Icon';

export function EmptyState({
  icon,
  title,
  testId,
  large = false,
  children,
}: {
  icon: IconName;
  title: string;
  testId: string;
  /** the first-run welcome (Transfers) rather than an empty list */
  large?: boolean;
  /** the explanation (and actions) under the heading */
  children: ReactNode;
}) {
  return (
    <div className={large ? 'empty-state' : 'empty-state small'} data-testid={testId}>
      <div className="empty-art" aria-hidden="true">
        <Icon name={icon} size={large ? 40 : 36} />
      </div>
      <h2>{title}</h2>
      {children}
    </div>
  );
}
