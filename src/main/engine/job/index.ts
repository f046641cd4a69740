// The engine's job API for hosts (CLI, the app's engine worker, the web host).
export {
  JobContext,
  type JobContextOptions,
  type JobEventInput,
  type CredentialsPrompt,
} from './job-context';
export { ProgressTracker } from './progress';
export { runJob, type JobResult } from './run-job';
export { inspectBundle } from './inspect';
