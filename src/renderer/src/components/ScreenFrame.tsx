// The frame every screen shares: a section named by its h1, the subtitle under it, tools on the right.

import type { ReactNode } from 'react';
import { useSluiceShallow } from '../store/react';
import { Icon } from './Icon';

export function ScreenFrame({
  id,
  title,
  subtitle,
  liveSubtitle,
  tools,
  children,
}: {
  /** prefix of the heading's id (`${id}-heading`), which labels the section */
  id: string;
  title: string;
  subtitle: ReactNode;
  /** announce subtitle changes (the Transfers counts change on their own) */
  liveSubtitle?: boolean;
  tools?: ReactNode;
  children: ReactNode;
}) {
  const headingId = `${id}-heading`;
  return (
    <section className="screen" aria-labelledby={headingId}>
      <header className="screen-header">
        <div>
          <h1 id={headingId}>{title}</h1>
          <p className="screen-subtitle" aria-live={liveSubtitle ? 'polite' : undefined}>
            {subtitle}
          </p>
        </div>
        {tools}
      </header>
      {children}
    </section>
  );
}

/** The Transfers and Repositories lists' density: rows with their details, or one line each (saved). */
export function DensityToggle() {
  const { density, setDensity } = useSluiceShallow((s) => ({ density: s.density, setDensity: s.setDensity }));
  const compact = density === 'compact';
  return (
    <button
      type="button"
      className="button ghost"
      aria-pressed={compact}
      title={compact ? 'Show rows with their details' : 'Show one line per row'}
      onClick={() => setDensity(compact ? 'comfortable' : 'compact')}
    >
      <Icon name="log" /> Compact
    </button>
  );
}
