// The engine's job API for hosts (CLI, the app's engine worker, the web host).
export {
  JobContext,
  type JobContextOptions,
  type JobEventInput,
  type CredentialsPrompt,
} from '../context/job-context';
export { ProgressTracker } from '../context/progress';
export { runJob, type JobResult } from './run-job';
export { inspectBundle } from '../operations/apply/inspect';
