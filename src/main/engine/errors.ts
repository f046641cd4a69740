// Typed errors of the engine. Every failure that reaches a user or a test is a SluiceError with a
// stable code; parsers of untrusted bytes throw nothing else (the fuzz tests hold them to it).

export type ErrorCode =
  // input shape
  | 'BAD_MAGIC' // not the format announced / expected
  | 'TRUNCATED' // input ended inside a structure
  | 'MALFORMED' // a field that cannot be parsed (bad decimal, missing NUL, bad varint…)
  | 'LIMIT' // a length or count beyond what Sluice accepts (absurd varint, 1 TB entry…)
  | 'SIZE_MISMATCH' // declared counts/sizes disagree with the data
  | 'DIGEST_MISMATCH' // a downloaded file's digest is not the one its manifest gives
  | 'UNSAFE_PATH' // a name that would escape the store or is not a valid store path
  | 'UNSUPPORTED_REQUIREMENTS' // the stream needs requirements Sluice does not support
  | 'UNSUPPORTED_COMPRESSION'
  | 'UNKNOWN_PART' // unknown mandatory bundle2 part
  | 'UNKNOWN_PARAM' // unknown mandatory bundle2 stream or part parameter
  | 'COMPRESSION' // the compressed stream is corrupt
  | 'REMOTE_ABORT' // an error:abort part / hg error frame from the peer
  | 'OBSOLESCENCE_DISABLED' // mandatory obsolescence markers for a repository that may not create them (hg's read-only obsstore)
  // environment
  | 'DEST_EXISTS' // destination exists and is not an empty directory
  | 'SOURCE_UNREADABLE' // the bundle to read is missing, a folder, or not readable (the source, not the destination)
  | 'NOT_A_REPO'
  | 'LOCKED' // the repository lock stayed held by another process (hg or Sluice) past the timeout
  | 'LOCK_UNAVAILABLE' // the lock cannot be created (hg's LockUnavailable: a read-only .hg or store)
  | 'ABANDONED_TRANSACTION' // a journal left by a crash could not be rolled back
  | 'IO'
  | 'CLOSE_FAILED' // a background close failed
  | 'CANCELLED'
  | 'ENGINE_CRASHED' // the app's engine worker thread died under the job (a bug, a heap limit)
  // network
  | 'HTTP' // unexpected HTTP status
  | 'PROTOCOL' // the server does not speak hg's wire protocol as expected
  | 'AUTH' // credentials needed or refused
  | 'ACCESS_DENIED' // refused by the server's configuration, not for credentials (hgweb allow-pull, deny_read)
  | 'TIMEOUT'
  | 'NETWORK'
  | 'CERTIFICATE' // the server's TLS certificate is not trusted (details: host, subject, issuer, fingerprint)
  | 'NO_STREAM' // the server allows no stream clone
  | 'UNRELATED' // the remote repository shares no changeset with the local one
  | 'SSH_HOST_KEY' // ssh refused the server's host key (unknown or changed)
  | 'SSH_REMOTE_COMMAND' // the remote shell has no such command (--remotecmd)
  | 'SSH_FAILED' // the ssh command itself could not run
  | 'UPLOAD_FAILED' // publishing a clone bundle failed (upload-command, delete-command, S3)
  // repository content
  | 'REVLOG' // a revlog is corrupt (details in the message)
  | 'VERIFY_FAILED'
  | 'USAGE';

export class SluiceError extends Error {
  override readonly name = 'SluiceError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export function isSluiceError(e: unknown): e is SluiceError {
  return e instanceof SluiceError;
}

/** Wraps anything thrown into a SluiceError so callers see one type (I/O errors keep their errno). */
export function toSluiceError(e: unknown): SluiceError {
  if (e instanceof SluiceError) return e;
  if (e instanceof Error && (e as NodeJS.ErrnoException).code) {
    const errno = (e as NodeJS.ErrnoException).code;
    if (errno === 'ABORT_ERR') return new SluiceError('CANCELLED', 'cancelled');
    return new SluiceError('IO', e.message, { errno });
  }
  if (e instanceof Error && e.name === 'AbortError') return new SluiceError('CANCELLED', 'cancelled');
  return new SluiceError('IO', e instanceof Error ? e.message : String(e));
}

export function cancelled(): SluiceError {
  return new SluiceError('CANCELLED', 'cancelled');
}
