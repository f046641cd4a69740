// The store helpers the applier uses, in one place (owner of the real ones: STORE,
// src/main/engine/store/). apply-stream.ts imports only from this file.

export { storePathEncoder, encodeDir, type StorePathEncoder } from '../store/encoding';
export { serializeFncache } from '../store/fncache';
export {
  cloneRequirements,
  streamRequirementsError,
  writeRequirements,
  DEFAULT_NEW_REPO_REQUIREMENTS,
} from '../store/requirements';
export { createRepoSkeleton } from '../store/repo-layout';
