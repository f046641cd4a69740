// Builders of engine events for tests, shaped like the engine emits them.

import type {
  DoneEvent,
  ErrorEvent,
  FileEntry,
  FilesEvent,
  PhaseEvent,
  ProgressEvent,
  RetryEvent,
  StartEvent,
} from '../../../src/shared/events';

export function startEv(jobId: string, time: number, o: Partial<StartEvent> = {}): StartEvent {
  return {
    type: 'start',
    jobId,
    time,
    kind: 'clone',
    format: 'stream-v2',
    files: 10,
    bytes: 1_000_000,
    requirements: ['revlogv1', 'store'],
    source: 'http://127.0.0.1:8000/repo',
    dest: '/tmp/dest',
    ...o,
  };
}

export function progressEv(
  jobId: string,
  elapsedMs: number,
  bytes: number,
  files: number,
  o: Partial<ProgressEvent> = {},
): ProgressEvent {
  return {
    type: 'progress',
    jobId,
    time: 1_000_000 + elapsedMs,
    bytes,
    files,
    totalBytes: 1_000_000,
    totalFiles: 10,
    bytesPerSec: elapsedMs > 0 ? (bytes * 1000) / elapsedMs : 0,
    elapsedMs,
    ...o,
  };
}

export function filesEv(jobId: string, entries: FileEntry[]): FilesEvent {
  return { type: 'files', jobId, time: 1_000_000, entries };
}

export function phaseEv(jobId: string, phase: PhaseEvent['phase']): PhaseEvent {
  return { type: 'phase', jobId, time: 1_000_000, phase };
}

export function doneEv(jobId: string, o: Partial<DoneEvent> = {}): DoneEvent {
  return {
    type: 'done',
    jobId,
    time: 1_002_000,
    wallMs: 2000,
    userCpuMs: 800,
    systemCpuMs: 300,
    bytes: 1_000_000,
    files: 10,
    result: '/tmp/dest',
    ...o,
  };
}

export function errorEv(jobId: string, code: string, message = code.toLowerCase()): ErrorEvent {
  return { type: 'error', jobId, time: 1_001_000, code, message };
}

export function entries(n: number, offset = 0): FileEntry[] {
  return Array.from({ length: n }, (_, i) => ({
    vfs: 's' as const,
    name: `data/file${i + offset}.i`,
    size: 64 + i,
  }));
}

export function retryEv(jobId: string, time: number, o: Partial<RetryEvent> = {}): RetryEvent {
  return {
    type: 'retry',
    jobId,
    time,
    attempt: 1,
    maxAttempts: 5,
    waitMs: 4000,
    reason: 'socket hang up',
    bytes: 400_000,
    totalBytes: 1_000_000,
    ...o,
  };
}
