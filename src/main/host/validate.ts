// Validation of everything that crosses the IPC boundary into the host (Electron main via the
// preload, or the web host via its WebSocket). The renderer is treated like any other untrusted
// input: a payload reaches a handler (and so the engine) only after the channel's schema
// (ipc-schemas.ts) checked its shape, types and ranges, and unknown fields are refused rather than
// ignored, so a typo in the renderer fails loudly instead of silently dropping an option. What
// reaches the handler is the schema's output: only the fields that were checked. Pure Node: no
// electron import.

import { isAbsolute } from 'node:path';
import * as v from 'valibot';
import { SluiceError } from '../engine/errors';
import { INVOKE_CHANNELS, type InvokeChannel, type InvokeMap } from '../../shared/ipc';
import type { AppState } from '../../shared/app-state';
import type { JobRequest } from '../../shared/jobs';
import { ipcSchemas } from './ipc-schemas';

export { LIMITS } from './ipc-schemas';

export class ValidationError extends SluiceError {
  constructor(message: string) {
    super('USAGE', message);
  }
}

type ArgsOf<C extends InvokeChannel> = InvokeMap[C]['args'];

/**
 * The first problem a schema found, as `where.field[i].sub: what` (`request.closer.threads` reads
 * `request.closer: unknown field "threads"`). `names` name a channel's arguments by position.
 */
function toValidationError(
  issue: v.BaseIssue<unknown>,
  where: string,
  names?: readonly string[],
): ValidationError {
  const path = issue.path ?? [];
  // an unknown or missing field: the message names it; the path stops at its object
  const items = path.slice(0, path.length > 0 && path.at(-1)!.origin === 'key' ? -1 : undefined);
  let at = where;
  items.forEach((item, i) => {
    const key = String(item.key);
    if (i === 0 && names) at += ` ${names[Number(key)] ?? key}`;
    else at += item.type === 'array' ? `[${key}]` : `.${key}`;
  });
  return new ValidationError(`${at}: ${issue.message}`);
}

function parse<S extends v.GenericSchema>(
  schema: S,
  input: unknown,
  where: string,
  names?: readonly string[],
): v.InferOutput<S> {
  const result = v.safeParse(schema, input, { abortEarly: true });
  if (!result.success) throw toValidationError(result.issues[0], where, names);
  return result.output;
}

/** Checks a job request; returns it rebuilt from the validated fields only. */
export function validateJobRequest(
  request: unknown,
  pathIsAbsolute: (p: string) => boolean = isAbsolute,
  where = 'request',
): JobRequest {
  return parse(ipcSchemas(pathIsAbsolute).jobRequest, request, where);
}

/** The app's saved state (state:set, state.json); returns it rebuilt from the validated fields. */
export function validateAppState(
  state: unknown,
  pathIsAbsolute: (p: string) => boolean = isAbsolute,
  where = 'state',
): AppState {
  return parse(ipcSchemas(pathIsAbsolute).appState, state, where);
}

export function isInvokeChannel(channel: unknown): channel is InvokeChannel {
  return typeof channel === 'string' && (INVOKE_CHANNELS as readonly string[]).includes(channel);
}

/**
 * Runs job:start's validation once on an apply and a clone request of no consequence, so the
 * schemas' code is compiled while the host is idle rather than on the user's first job. Returns
 * whether both passed, i.e. whether the accepting path ran (false when `pathIsAbsolute` takes
 * neither root below); it never throws.
 */
export function warmUpValidation(pathIsAbsolute: (p: string) => boolean = isAbsolute): boolean {
  const root = ['/', 'C:\\'].find((r) => pathIsAbsolute(r));
  if (root === undefined) return false;
  const dest = `${root}sluice-warm-up`;
  const closer = { backgroundClose: 'auto', closeThreads: 48 };
  try {
    validateInvoke(
      'job:start',
      [{ kind: 'apply', bundlePath: `${dest}.hg`, dest, closer, verify: false }],
      pathIsAbsolute,
    );
    validateInvoke(
      'job:start',
      [{ kind: 'clone', url: 'https://example.invalid/repo', dest, closer, verify: false }],
      pathIsAbsolute,
    );
    return true;
  } catch {
    return false;
  }
}

/** An argument's name (the title its schema carries), for messages. */
function argName(item: v.GenericSchema): string {
  const pipe = (item as { pipe?: readonly { type: string; title?: string }[] }).pipe ?? [];
  return pipe.find((p) => p.type === 'title')?.title ?? '';
}

function isOptional(item: v.GenericSchema): boolean {
  return item.type === 'optional';
}

/**
 * The argument list trimmed of trailing undefined (what an omitted optional argument looks like
 * after structured clone), refused when its length is outside what the channel takes.
 */
function checkArity(channel: string, args: unknown[], items: readonly v.GenericSchema[]): unknown[] {
  const max = items.length;
  const min = items.filter((item) => !isOptional(item)).length;
  let n = args.length;
  while (n > min && args[n - 1] === undefined) n--;
  if (n < min || n > max) {
    throw new ValidationError(
      `${channel}: ` +
        (min === max
          ? `expected ${min} argument(s), got ${args.length}`
          : `expected ${min} to ${max} arguments, got ${args.length}`),
    );
  }
  return args.slice(0, n);
}

/** Checks a call's channel and arguments; returns the arguments rebuilt from validated values only. */
export function validateInvoke<C extends InvokeChannel>(
  channel: C,
  args: unknown,
  pathIsAbsolute?: (p: string) => boolean,
): ArgsOf<C>;
export function validateInvoke(
  channel: unknown,
  args: unknown,
  pathIsAbsolute?: (p: string) => boolean,
): unknown[];
export function validateInvoke(
  channel: unknown,
  args: unknown,
  pathIsAbsolute: (p: string) => boolean = isAbsolute,
): unknown[] {
  if (!isInvokeChannel(channel))
    throw new ValidationError(`invoke: unknown channel ${JSON.stringify(String(channel).slice(0, 100))}`);
  if (!Array.isArray(args)) throw new ValidationError(`${channel}: arguments must be an array`);
  const schema = ipcSchemas(pathIsAbsolute).invokeArgs[channel] as v.StrictTupleSchema<
    v.TupleItems,
    undefined
  >;
  const given = checkArity(channel, args, schema.items);
  // the schema sees every slot (an omitted optional one as undefined); the result keeps only the given
  const slots = [...given, ...new Array<undefined>(schema.items.length - given.length)];
  const valid = parse(schema, slots, channel, schema.items.map(argName));
  return valid.slice(0, given.length);
}

/** What a host knows about the frame an IPC message came from. */
export interface SenderFrame {
  /** the frame's URL at the time of the message */
  url: string;
  /** true when the frame is the top frame of its page (not an iframe) */
  isTopFrame: boolean;
  /** the webContents the message came from */
  webContentsId: number;
}

export interface TrustedRenderer {
  /** our window's webContents id */
  webContentsId: number;
  /** the renderer's origin: `file://` for the packaged app, the dev server's origin under electron-vite dev */
  origin: string;
  /** for file:// origins: the directory the renderer was loaded from (file URLs share one opaque origin) */
  fileRoot?: string;
  /** compare file paths without regard to case (Windows, macOS default volumes) */
  caseInsensitivePaths?: boolean;
}

/**
 * Only our own window's top frame may talk to the host: not an iframe, not another window, not a
 * page the renderer navigated to (navigation is blocked too; this is the second lock). Mirrors
 * VS Code's validation of the sender in one place (ipcMain wrappers in vs/base/parts/ipc/electron-main).
 */
export function isTrustedSender(frame: SenderFrame | null | undefined, trusted: TrustedRenderer): boolean {
  if (!frame || !frame.isTopFrame || frame.webContentsId !== trusted.webContentsId) return false;
  let url: URL;
  try {
    url = new URL(frame.url);
  } catch {
    return false;
  }
  if (trusted.origin === 'file://') {
    if (url.protocol !== 'file:') return false;
    if (trusted.fileRoot === undefined) return true;
    const root = new URL(trusted.fileRoot.endsWith('/') ? trusted.fileRoot : `${trusted.fileRoot}/`);
    const norm = (p: string) => {
      let d: string;
      try {
        d = decodeURIComponent(p);
      } catch {
        return null;
      }
      return trusted.caseInsensitivePaths ? d.toLowerCase() : d;
    };
    const path = norm(url.pathname);
    const rootPath = norm(root.pathname);
    return path !== null && rootPath !== null && !path.includes('/../') && path.startsWith(rootPath);
  }
  return url.origin === trusted.origin;
}
