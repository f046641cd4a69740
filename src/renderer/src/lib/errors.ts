// Error codes (src/main/engine/errors.ts ErrorCode) turned into text a person can act on. The UI
// shows the human sentence first and the engine's message as detail, plus what to try next.

import { withoutBidi } from '../../../shared/shown-text';

export interface UiError {
  code: string;
  /** the engine's own message (technical detail) */
  message: string;
}

interface Explanation {
  title: string;
  hint: string;
  /** whether re-submitting the same request can help */
  retryable: boolean;
}

/** Every bundle kind Sluice applies, in the words of the drop overlay and the "not a bundle" error. */
export const SUPPORTED_BUNDLES =
  'stream bundles (packed1 `HGS1` from `hg debugcreatestreamclonebundle`, bundle2 stream v2 from `hg bundle --type none-v2;stream=v2`) and changegroup bundles (`hg bundle`: HG10 and HG20)';

const EXPLANATIONS: Record<string, Explanation> = {
  BAD_MAGIC: {
    title: 'This is not a Mercurial bundle',
    hint: `Sluice applies ${SUPPORTED_BUNDLES}.`,
    retryable: false,
  },
  TRUNCATED: {
    title: 'The data ended too early',
    hint: 'The file or the download is incomplete. Fetch it again and retry.',
    retryable: true,
  },
  MALFORMED: {
    title: 'The data is damaged',
    hint: 'A field could not be read. The bundle or the server response is corrupt.',
    retryable: false,
  },
  LIMIT: {
    title: 'A size in the data is beyond what Sluice accepts',
    hint: 'The input announces an absurd length; it is damaged or hostile.',
    retryable: false,
  },
  SIZE_MISMATCH: {
    title: 'Sizes in the data do not add up',
    hint: 'The announced file count or byte count disagrees with the content.',
    retryable: false,
  },
  UNSAFE_PATH: {
    title: 'The data contains an unsafe file name',
    hint: 'A file name would escape the repository store. Nothing was written outside the temporary folder.',
    retryable: false,
  },
  UNSUPPORTED_REQUIREMENTS: {
    title: 'The repository needs features Sluice does not support',
    hint: 'Use hg itself for this repository, or produce the stream from a repository with standard requirements.',
    retryable: false,
  },
  UNSUPPORTED_COMPRESSION: {
    title: 'The compression of this bundle is not supported',
    hint: 'Sluice reads uncompressed, gzip, bzip2 and zstd bundles.',
    retryable: false,
  },
  UNKNOWN_PART: {
    title: 'The bundle has a mandatory part Sluice does not know',
    hint: 'It was produced by a newer or extended Mercurial.',
    retryable: false,
  },
  UNKNOWN_PARAM: {
    title: 'The bundle has a mandatory parameter Sluice does not know',
    hint: 'It was produced by a newer or extended Mercurial.',
    retryable: false,
  },
  OBSOLESCENCE_DISABLED: {
    title: 'The bundle carries obsolescence markers this repository may not hold',
    hint: 'Its markers are mandatory (hg bundle writes them so): enable `experimental.evolution` in the repository, as hg unbundle would need, and retry. Nothing was written.',
    retryable: false,
  },
  COMPRESSION: { title: 'The compressed data is corrupt', hint: 'Fetch the bundle again.', retryable: true },
  REMOTE_ABORT: {
    title: 'The server aborted the transfer',
    hint: 'See the server message below.',
    retryable: true,
  },
  DEST_EXISTS: {
    title: 'The destination already exists',
    hint: 'Choose an empty or new folder.',
    retryable: false,
  },
  SOURCE_UNREADABLE: {
    title: 'The bundle cannot be read',
    hint: 'Check the path of the bundle file (the source): it must be a file that exists and that you may read. Nothing was written.',
    retryable: false,
  },
  NOT_A_REPO: {
    title: 'Not a Mercurial repository',
    hint: 'Pick the folder that contains `.hg`.',
    retryable: false,
  },
  IO: {
    title: 'A file operation failed',
    hint: 'Check free space and permissions of the destination.',
    retryable: true,
  },
  CLOSE_FAILED: {
    title: 'Closing a written file failed',
    hint: 'The disk may be full or removed. Nothing was left at the destination.',
    retryable: true,
  },
  ENGINE_CRASHED: {
    title: 'The engine stopped unexpectedly',
    hint: 'Its temporary files were removed. Start the job again: a new engine runs it.',
    retryable: true,
  },
  CANCELLED: { title: 'Cancelled', hint: 'Nothing was left at the destination.', retryable: true },
  HTTP: {
    title: 'The server answered with an error',
    hint: 'Check the URL and that the server is running.',
    retryable: true,
  },
  PROTOCOL: {
    title: 'The server does not speak Mercurial’s protocol as expected',
    hint: 'Make sure the URL points at a Mercurial repository (hg serve, hgweb).',
    retryable: false,
  },
  AUTH: {
    title: 'The server needs credentials',
    hint: 'Retry and enter a user name and password when asked.',
    retryable: true,
  },
  ACCESS_DENIED: {
    title: 'The server refuses to let you clone',
    hint: 'Its repository settings do not allow this pull ([web] allow-pull, allow_read or deny_read in its hgrc); credentials would not help. Ask whoever runs the server.',
    retryable: false,
  },
  TIMEOUT: { title: 'The server stopped answering', hint: 'Check the network and retry.', retryable: true },
  NETWORK: {
    title: 'Could not reach the server',
    hint: 'Check the URL, the network and that the server is running.',
    retryable: true,
  },
  CERTIFICATE: {
    title: "The server's certificate is not trusted",
    hint: "The detail names its subject, issuer and SHA-256 fingerprint. If you trust it, add the `[hostsecurity]` fingerprint line shown to your hgrc (or the repository's), install its issuer in the system CA store, or retry once without the check (Insecure).",
    retryable: true,
  },
  NO_STREAM: {
    title: 'The server does not allow stream clones',
    hint: 'Enable `server.uncompressed` on the server, or clone with hg.',
    retryable: false,
  },
  REVLOG: {
    title: 'A revlog is corrupt',
    hint: 'The source repository is damaged; run `hg verify` on it.',
    retryable: false,
  },
  VERIFY_FAILED: {
    title: 'Verification found problems',
    hint: 'The result does not pass integrity checks. See the log for details.',
    retryable: true,
  },
  USAGE: { title: 'The request is invalid', hint: 'Check the fields of the form.', retryable: false },
};

const UNKNOWN: Explanation = {
  title: 'Something went wrong',
  hint: 'See the detail below.',
  retryable: true,
};

export function explainError(code: string): Explanation {
  return EXPLANATIONS[code] ?? UNKNOWN;
}

/**
 * An error explained from its code and, where one code covers several refusals, its message: an
 * update refused for local changes is USAGE from the engine (hg aborts the same way), and says so
 * with the file the engine names (operations/update/update.ts `dirty`).
 */
export function explainFailure(error: UiError): Explanation {
  if (error.code === 'USAGE') {
    const dirty = /^uncommitted changes in (\d+) files? \((.+)\); commit or revert/s.exec(error.message);
    if (dirty)
      return {
        title: uncommittedTitle(Number(dirty[1]), dirty[2]!),
        hint: 'Commit or revert the working copy’s changes first (`hg commit`, `hg revert`), then update again.',
        retryable: true,
      };
    if (error.message.startsWith('outstanding uncommitted merge'))
      return {
        title: 'Uncommitted merge',
        hint: 'Commit the merge, or discard it with `hg update --clean`, then update again.',
        retryable: true,
      };
  }
  return explainError(error.code);
}

const STATUS_WORDS: Record<string, string> = { M: 'modified', A: 'added', R: 'removed', '!': 'missing' };

/** One file: "Uncommitted changes: a.txt is modified"; more: "Uncommitted changes in 3 files". */
function uncommittedTitle(count: number, listed: string): string {
  const one = /^([MAR!]) (.+)$/s.exec(listed);
  if (count === 1 && one) return `Uncommitted changes: ${one[2]} is ${STATUS_WORDS[one[1]!]}`;
  return `Uncommitted changes in ${count} files`;
}

const CODE_RE = /\b([A-Z][A-Z_]{1,30})\b/;

/**
 * Turns whatever an invoke() rejected with into {code, message}. Hosts differ: the web bridge
 * passes {code, message}; Electron's ipcRenderer.invoke only keeps a message such as
 * "Error invoking remote method 'bundle:inspect': SluiceError: [BAD_MAGIC] not a bundle".
 */
export function toUiError(e: unknown): UiError {
  if (e && typeof e === 'object') {
    const o = e as { code?: unknown; message?: unknown };
    const message = typeof o.message === 'string' ? cleanMessage(o.message) : String(e);
    if (typeof o.code === 'string' && o.code in EXPLANATIONS)
      return { code: o.code, message: stripCode(message, o.code) };
    const fromMessage = codeInMessage(message);
    if (fromMessage) return { code: fromMessage, message: stripCode(message, fromMessage) };
    if (typeof o.code === 'string' && /^[A-Z_]+$/.test(o.code)) return { code: o.code, message };
    return { code: 'UNKNOWN', message };
  }
  const message = cleanMessage(String(e));
  const code = codeInMessage(message);
  return code ? { code, message: stripCode(message, code) } : { code: 'UNKNOWN', message };
}

/** A failed action as a notice (for the store's notify): what did not happen, the engine's message as detail. */
export function errorNotice(text: string, e: unknown): { tone: 'error'; text: string; detail: string } {
  return { tone: 'error', text, detail: toUiError(e).message };
}

function codeInMessage(message: string): string | null {
  const bracket = /\[([A-Z_]+)\]/.exec(message);
  if (bracket && bracket[1]! in EXPLANATIONS) return bracket[1]!;
  const m = CODE_RE.exec(message.replace(/^(Error|SluiceError)\b/g, ''));
  if (m && m[1]! in EXPLANATIONS && /^[A-Z_]+:/.test(message.slice(m.index))) return m[1]!;
  return null;
}

function cleanMessage(message: string): string {
  return withoutBidi(
    message.replace(/^Error invoking remote method '[^']*':\s*/, '').replace(/^(SluiceError|Error):\s*/, ''),
  );
}

function stripCode(message: string, code: string): string {
  return (
    message
      .replace(`[${code}]`, '')
      .replace(new RegExp(`^${code}:\\s*`), '')
      .trim() || code
  );
}
