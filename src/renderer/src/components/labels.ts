// Words the UI uses for engine states and kinds, in one place.

import type { JobKind, JobPhase } from '../../../shared/events';
import type { BundleInfo } from '../../../shared/jobs';
import type { TransferJob } from '../store/types';

export const KIND_LABEL: Record<JobKind, string> = {
  clone: 'Clone',
  pull: 'Pull',
  apply: 'Apply bundle',
  bundle: 'Create bundle',
  verify: 'Verify',
  serve: 'Serve',
  update: 'Check out',
};

export const PHASE_LABEL: Record<JobPhase, string> = {
  connect: 'Connecting',
  discovery: 'Searching for changes',
  download: 'Downloading bundle',
  write: 'Writing files',
  checkout: 'Checking out files',
  changesets: 'Adding changesets',
  manifests: 'Adding manifests',
  files: 'Adding file changes',
  finalize: 'Finalizing',
  verify: 'Verifying',
  generate: 'Generating',
  cleanup: 'Cleaning up',
};

export function stateLabel(
  job: Pick<TransferJob, 'state' | 'phase' | 'stalled' | 'cancelRequested'>,
): string {
  switch (job.state) {
    case 'queued':
      return job.cancelRequested ? 'Cancelling…' : 'Queued';
    case 'running':
      if (job.cancelRequested) return 'Cancelling…';
      if (job.stalled) return 'Stalled';
      return job.phase ? PHASE_LABEL[job.phase] : 'Starting';
    case 'done':
      return 'Done';
    case 'failed':
      return 'Failed';
    case 'cancelled':
      return 'Cancelled';
    case 'interrupted':
      return 'Interrupted';
  }
}

export const COMPRESSION_LABEL: Record<BundleInfo['compression'], string> = {
  UN: 'none',
  GZ: 'gzip',
  BZ: 'bzip2',
  ZS: 'zstd',
};

export const BUNDLE_TYPE_LABEL: Record<BundleInfo['type'], string> = {
  packed1: 'packed1 (HGS1, stream v1)',
  v2: 'bundle2 with stream v2',
  changegroup: 'changegroup (hg bundle)',
};
