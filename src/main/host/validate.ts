// Validation of everything that crosses the IPC boundary into the host (Electron main via the
// preload, or the web host via its WebSocket). The renderer is treated like any other untrusted
// input: a payload reaches a handler (and so the engine) only after its shape, types and ranges
// were checked here, and unknown fields are refused rather than ignored, so a typo in the renderer
// fails loudly instead of silently dropping an option. Pure Node: no electron import.

import { isAbsolute } from 'node:path';
import { SluiceError } from '../engine/errors';
import { parseSshUrl } from '../engine/client/ssh-command';
import { INVOKE_CHANNELS, type InvokeChannel, type InvokeMap } from '../../shared/ipc';
import type { CloserOptions, JobRequest } from '../../shared/jobs';
import {
  APP_STATE_LIMITS,
  type AppState,
  type PersistedComparison,
  type PersistedSettings,
} from '../../shared/app-state';

/** Limits of what the host accepts; the engine has its own, these only keep absurd input out. */
export const LIMITS = {
  pathChars: 4096,
  urlChars: 8192,
  labelChars: 200,
  idChars: 64,
  userChars: 1024,
  passwordChars: 4096,
  fileNameChars: 255,
  /** file:writeText exports (logs, comparison CSV); more is a bug in the renderer */
  textBytes: 32 * 1024 * 1024,
  closeThreads: [1, 64] as const,
  /** a simulated slow close (comparisons): NTFS with a scanner is 1-10 ms */
  simulateCloseMs: [0, 100] as const,
  /** a line of a job's debug log, and a page of them (JobLogStore's bounds) */
  logLine: [0, 10_000_000] as const,
  logPage: [0, 2000] as const,
  minFileCount: [0, 100_000_000] as const,
  maxQueue: [1, 1_000_000] as const,
  /** bundle2 payload chunk size: hg writes 4096 (before 4.5) or 32768; 512 B..16 MiB is generous */
  chunkSize: [512, 16 * 1024 * 1024] as const,
  /** network timeouts: 1 s .. 1 day */
  timeoutMs: [1000, 86_400_000] as const,
  /** a revision symbol (hg REV): bookmark, tag, branch name, number or node */
  revChars: 1024,
};

export class ValidationError extends SluiceError {
  constructor(message: string) {
    super('USAGE', message);
  }
}

function fail(where: string, what: string): never {
  throw new ValidationError(`${where}: ${what}`);
}

type Obj = Record<string, unknown>;

function isPlainObject(v: unknown): v is Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

function expectObject(v: unknown, where: string, allowed: readonly string[]): Obj {
  if (!isPlainObject(v)) fail(where, 'expected an object');
  for (const key of Object.keys(v)) {
    if (!allowed.includes(key)) fail(where, `unknown field "${key}"`);
  }
  return v;
}

/** C0 controls and DEL: never typed by a person, and NUL truncates paths in C APIs. */
function hasControlChars(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

export function expectString(v: unknown, where: string, maxChars: number): string {
  if (typeof v !== 'string') fail(where, 'expected a string');
  if (v.length > maxChars) fail(where, `longer than ${maxChars} characters`);
  return v;
}

function expectBoolean(v: unknown, where: string): boolean {
  if (typeof v !== 'boolean') fail(where, 'expected true or false');
  return v;
}

function expectInt(v: unknown, where: string, [min, max]: readonly [number, number]): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) fail(where, 'expected an integer');
  if (v < min || v > max) fail(where, `must be between ${min} and ${max}`);
  return v;
}

function expectOneOf<const T extends string>(v: unknown, where: string, values: readonly T[]): T {
  if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) {
    fail(where, `expected one of ${values.map((x) => JSON.stringify(x)).join(', ')}`);
  }
  return v as T;
}

/**
 * An absolute local path. Relative paths would resolve against the host's cwd (which the user
 * never sees), NUL bytes truncate paths in C APIs, and control characters are never typed by a
 * person, so all are refused. `pathIsAbsolute` is the platform's rule (win32 on Windows).
 */
export function expectAbsolutePath(
  v: unknown,
  where: string,
  pathIsAbsolute: (p: string) => boolean = isAbsolute,
): string {
  const p = expectString(v, where, LIMITS.pathChars);
  if (p === '') fail(where, 'empty path');
  if (hasControlChars(p)) fail(where, 'control characters in path');
  if (!pathIsAbsolute(p)) fail(where, `not an absolute path: ${JSON.stringify(p)}`);
  return p;
}

/** An http(s) URL (clone bundles, proxies); repository URLs that may be ssh:// go through expectRepoUrl. */
export function expectHttpUrl(v: unknown, where: string): string {
  const s = expectString(v, where, LIMITS.urlChars);
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    fail(where, `not a valid URL: ${JSON.stringify(s.slice(0, 200))}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    fail(where, `only http and https URLs are allowed, not ${url.protocol}`);
  if (!url.hostname) fail(where, 'URL without a host');
  if (hasControlChars(s) || /\s/.test(s)) fail(where, 'whitespace or control characters in URL');
  return s;
}

/**
 * A repository URL for clone, pull and "Test connection": http(s), or ssh://[user@]host[:port]/path
 * as hg reads it (the engine's own parser: no password, no host or user starting with '-', which
 * ssh would take for an option). The ssh command itself never comes from a request.
 */
export function expectRepoUrl(v: unknown, where: string): string {
  const s = expectString(v, where, LIMITS.urlChars);
  // a local repository (hg's localpeer): an absolute path or a file:/// URL; the app has no
  // current directory, so a relative path is refused rather than resolved against main's
  if (/^file:/i.test(s) || !/^[a-z][a-z0-9+.-]+:/i.test(s)) {
    if (hasControlChars(s)) fail(where, 'control characters in a path');
    if (/^file:/i.test(s) ? !/^file:\/\/(localhost)?\//i.test(s) : !isAbsolute(s))
      fail(where, 'a local repository needs an absolute path or a file:/// URL');
    return s;
  }
  if (!/^ssh:\/\//i.test(s)) return expectHttpUrl(s, where);
  if (hasControlChars(s) || /\s/.test(s)) fail(where, 'whitespace or control characters in URL');
  try {
    parseSshUrl(s);
  } catch (e) {
    fail(where, (e as Error).message);
  }
  return s;
}

export function expectId(v: unknown, where: string): string {
  const s = expectString(v, where, LIMITS.idChars);
  if (!/^[A-Za-z0-9_-]+$/.test(s)) fail(where, 'expected an identifier ([A-Za-z0-9_-])');
  return s;
}

/** A revision symbol: a non-empty string without control characters (hg refuses those in names). */
function expectRev(v: unknown, where: string): string {
  const s = expectString(v, where, LIMITS.revChars);
  if (s === '' || hasControlChars(s)) fail(where, 'expected a revision (non-empty, no control characters)');
  return s;
}

function expectCloser(v: unknown, where: string): Partial<CloserOptions> {
  const o = expectObject(v, where, [
    'backgroundClose',
    'closeThreads',
    'minFileCount',
    'maxQueue',
    'simulateCloseMs',
  ]);
  const out: Partial<CloserOptions> = {};
  if (o.backgroundClose !== undefined)
    out.backgroundClose = expectOneOf(o.backgroundClose, `${where}.backgroundClose`, ['on', 'off', 'auto']);
  if (o.closeThreads !== undefined)
    out.closeThreads = expectInt(o.closeThreads, `${where}.closeThreads`, LIMITS.closeThreads);
  if (o.minFileCount !== undefined)
    out.minFileCount = expectInt(o.minFileCount, `${where}.minFileCount`, LIMITS.minFileCount);
  if (o.maxQueue !== undefined) out.maxQueue = expectInt(o.maxQueue, `${where}.maxQueue`, LIMITS.maxQueue);
  if (o.simulateCloseMs !== undefined)
    out.simulateCloseMs = expectInt(o.simulateCloseMs, `${where}.simulateCloseMs`, LIMITS.simulateCloseMs);
  return out;
}

/** Copies only the validated fields, so what reaches the engine is exactly what was checked. */
export function validateJobRequest(
  v: unknown,
  pathIsAbsolute: (p: string) => boolean = isAbsolute,
  where = 'request',
): JobRequest {
  if (!isPlainObject(v)) fail(where, 'expected an object');
  const kind = expectOneOf(v.kind, `${where}.kind`, ['apply', 'clone', 'pull', 'bundle', 'verify', 'update']);
  const timeouts = (o: Record<string, unknown>) => ({
    ...(o.connectTimeoutMs !== undefined && {
      connectTimeoutMs: expectInt(o.connectTimeoutMs, `${where}.connectTimeoutMs`, LIMITS.timeoutMs),
    }),
    ...(o.idleTimeoutMs !== undefined && {
      idleTimeoutMs: expectInt(o.idleTimeoutMs, `${where}.idleTimeoutMs`, LIMITS.timeoutMs),
    }),
  });
  const abs = (x: unknown, field: string) => expectAbsolutePath(x, `${where}.${field}`, pathIsAbsolute);
  switch (kind) {
    case 'apply': {
      const o = expectObject(v, where, [
        'kind',
        'bundlePath',
        'dest',
        'closer',
        'verify',
        'update',
        'updateRev',
      ]);
      return {
        kind,
        bundlePath: abs(o.bundlePath, 'bundlePath'),
        dest: abs(o.dest, 'dest'),
        ...(o.closer !== undefined && { closer: expectCloser(o.closer, `${where}.closer`) }),
        ...(o.verify !== undefined && { verify: expectBoolean(o.verify, `${where}.verify`) }),
        ...(o.update !== undefined && { update: expectBoolean(o.update, `${where}.update`) }),
        ...(o.updateRev !== undefined && { updateRev: expectRev(o.updateRev, `${where}.updateRev`) }),
      };
    }
    case 'clone': {
      const o = expectObject(v, where, [
        'kind',
        'url',
        'dest',
        'stream',
        'closer',
        'verify',
        'caFile',
        'insecure',
        'cloneBundles',
        'obsmarkers',
        'pull',
        'connectTimeoutMs',
        'idleTimeoutMs',
        'update',
        'updateRev',
      ]);
      return {
        kind,
        url: expectRepoUrl(o.url, `${where}.url`),
        dest: abs(o.dest, 'dest'),
        ...(o.stream !== undefined && {
          stream: expectOneOf(o.stream, `${where}.stream`, ['auto', 'v1', 'v2']),
        }),
        ...(o.closer !== undefined && { closer: expectCloser(o.closer, `${where}.closer`) }),
        ...(o.verify !== undefined && { verify: expectBoolean(o.verify, `${where}.verify`) }),
        ...(o.caFile !== undefined && { caFile: abs(o.caFile, 'caFile') }),
        ...(o.insecure !== undefined && { insecure: expectBoolean(o.insecure, `${where}.insecure`) }),
        ...(o.cloneBundles !== undefined && {
          cloneBundles: expectBoolean(o.cloneBundles, `${where}.cloneBundles`),
        }),
        ...(o.obsmarkers !== undefined && { obsmarkers: expectBoolean(o.obsmarkers, `${where}.obsmarkers`) }),
        ...(o.pull !== undefined && { pull: expectBoolean(o.pull, `${where}.pull`) }),
        ...(o.update !== undefined && { update: expectBoolean(o.update, `${where}.update`) }),
        ...(o.updateRev !== undefined && { updateRev: expectRev(o.updateRev, `${where}.updateRev`) }),
        ...timeouts(o),
      };
    }
    case 'pull': {
      const o = expectObject(v, where, [
        'kind',
        'repo',
        'source',
        'update',
        'incoming',
        'caFile',
        'insecure',
        'connectTimeoutMs',
        'idleTimeoutMs',
      ]);
      return {
        kind,
        repo: abs(o.repo, 'repo'),
        ...(o.source !== undefined && { source: expectRepoUrl(o.source, `${where}.source`) }),
        ...(o.update !== undefined && { update: expectBoolean(o.update, `${where}.update`) }),
        ...(o.incoming !== undefined && { incoming: expectBoolean(o.incoming, `${where}.incoming`) }),
        ...(o.caFile !== undefined && { caFile: abs(o.caFile, 'caFile') }),
        ...(o.insecure !== undefined && { insecure: expectBoolean(o.insecure, `${where}.insecure`) }),
        ...timeouts(o),
      };
    }
    case 'bundle': {
      const o = expectObject(v, where, ['kind', 'repo', 'out', 'type', 'compression', 'chunkSize']);
      return {
        kind,
        repo: abs(o.repo, 'repo'),
        out: abs(o.out, 'out'),
        ...(o.type !== undefined && { type: expectOneOf(o.type, `${where}.type`, ['packed1', 'v2']) }),
        ...(o.compression !== undefined && {
          compression: expectOneOf(o.compression, `${where}.compression`, ['none', 'gzip', 'zstd']),
        }),
        ...(o.chunkSize !== undefined && {
          chunkSize: expectInt(o.chunkSize, `${where}.chunkSize`, LIMITS.chunkSize),
        }),
      };
    }
    case 'verify': {
      const o = expectObject(v, where, ['kind', 'repo']);
      return { kind, repo: abs(o.repo, 'repo') };
    }
    case 'update': {
      const o = expectObject(v, where, ['kind', 'repo', 'rev', 'closer']);
      return {
        kind,
        repo: abs(o.repo, 'repo'),
        ...(o.rev !== undefined && { rev: expectRev(o.rev, `${where}.rev`) }),
        ...(o.closer !== undefined && { closer: expectCloser(o.closer, `${where}.closer`) }),
      };
    }
  }
}

function expectFileName(v: unknown, where: string): string {
  const s = expectString(v, where, LIMITS.fileNameChars);
  if (s === '' || s === '.' || s === '..') fail(where, 'empty or dot file name');
  if (/[/\\]/.test(s) || hasControlChars(s)) fail(where, 'a file name, not a path, is expected');
  return s;
}

function expectCredentialsAnswer(v: unknown, where: string): { user: string; password: string } | null {
  if (v === null) return null;
  const o = expectObject(v, where, ['user', 'password']);
  return {
    user: expectString(o.user, `${where}.user`, LIMITS.userChars),
    password: expectString(o.password, `${where}.password`, LIMITS.passwordChars),
  };
}

type ArgsOf<C extends InvokeChannel> = InvokeMap[C]['args'];
type ArgValidators = {
  [C in InvokeChannel]: (args: unknown[], pathIsAbsolute: (p: string) => boolean) => ArgsOf<C>;
};

function arity(channel: string, args: unknown[], min: number, max: number): void {
  // Trailing undefined is what an omitted optional argument looks like after structured clone.
  let n = args.length;
  while (n > min && args[n - 1] === undefined) n--;
  if (n < min || n > max) {
    fail(
      channel,
      min === max
        ? `expected ${min} argument(s), got ${args.length}`
        : `expected ${min} to ${max} arguments, got ${args.length}`,
    );
  }
}

const VALIDATORS: ArgValidators = {
  'app:info': (a) => (arity('app:info', a, 0, 0), []),
  'job:start': (a, abs) => {
    arity('job:start', a, 1, 2);
    const request = validateJobRequest(a[0], abs, 'job:start request');
    const label = a[1] === undefined ? undefined : expectString(a[1], 'job:start label', LIMITS.labelChars);
    return label === undefined ? [request] : [request, label];
  },
  'job:cancel': (a) => (arity('job:cancel', a, 1, 1), [expectId(a[0], 'job:cancel jobId')]),
  'job:list': (a) => (arity('job:list', a, 0, 0), []),
  'job:log': (a) => {
    arity('job:log', a, 3, 4);
    const page = [
      expectId(a[0], 'job:log jobId'),
      expectInt(a[1], 'job:log from', LIMITS.logLine),
      expectInt(a[2], 'job:log count', LIMITS.logPage),
    ] as const;
    return a[3] === undefined ? [...page] : [...page, expectString(a[3], 'job:log query', LIMITS.labelChars)];
  },
  'job:exportLog': (a) => {
    arity('job:exportLog', a, 3, 3);
    return [
      expectId(a[0], 'job:exportLog jobId'),
      expectFileName(a[1], 'job:exportLog suggestedName'),
      expectString(a[2], 'job:exportLog header', LIMITS.pathChars * 2),
    ];
  },
  'bundle:inspect': (a, abs) => (
    arity('bundle:inspect', a, 1, 1),
    [expectAbsolutePath(a[0], 'bundle:inspect path', abs)]
  ),
  'server:probe': (a) => (arity('server:probe', a, 1, 1), [expectRepoUrl(a[0], 'server:probe url')]),
  'sample:get': (a) => (arity('sample:get', a, 0, 0), []),
  'history:list': (a) => (arity('history:list', a, 0, 0), []),
  'history:clear': (a) => (arity('history:clear', a, 0, 0), []),
  'dialog:pickDirectory': (a, abs) => {
    arity('dialog:pickDirectory', a, 0, 1);
    return a[0] === undefined ? [] : [expectAbsolutePath(a[0], 'dialog:pickDirectory defaultPath', abs)];
  },
  'dialog:pickBundle': (a) => (arity('dialog:pickBundle', a, 0, 0), []),
  'shell:openPath': (a, abs) => (
    arity('shell:openPath', a, 1, 1),
    [expectAbsolutePath(a[0], 'shell:openPath path', abs)]
  ),
  'shell:openExternal': (a) => (
    arity('shell:openExternal', a, 1, 1),
    [expectHttpUrl(a[0], 'shell:openExternal url')]
  ),
  'file:writeText': (a) => {
    arity('file:writeText', a, 2, 2);
    const name = expectFileName(a[0], 'file:writeText suggestedName');
    const text = expectString(a[1], 'file:writeText text', LIMITS.textBytes);
    return [name, text];
  },
  'credentials:answer': (a) => {
    arity('credentials:answer', a, 2, 3);
    const answer: [string, { user: string; password: string } | null] = [
      expectId(a[0], 'credentials:answer requestId'),
      expectCredentialsAnswer(a[1], 'credentials:answer answer'),
    ];
    return a[2] === undefined ? answer : [...answer, expectBoolean(a[2], 'credentials:answer remember')];
  },
  'credentials:list': (a) => (arity('credentials:list', a, 0, 0), []),
  'credentials:forget': (a) => {
    arity('credentials:forget', a, 1, 1);
    const origin = expectHttpUrl(a[0], 'credentials:forget origin');
    if (new URL(origin).origin !== origin) fail('credentials:forget origin', 'expected scheme://host[:port]');
    return [origin];
  },
  'downloads:list': (a) => (arity('downloads:list', a, 0, 0), []),
  'downloads:remove': (a) => {
    arity('downloads:remove', a, 0, 1);
    if (a[0] === undefined) return [];
    const key = expectString(a[0], 'downloads:remove key', 32);
    if (!/^[0-9a-f]{32}$/.test(key)) fail('downloads:remove key', 'expected 32 hex digits');
    return [key];
  },
  'library:list': (a) => (arity('library:list', a, 0, 0), []),
  'library:add': (a, abs) => libraryPath('library:add')(a, abs),
  'library:remove': (a, abs) => libraryPath('library:remove')(a, abs),
  'library:trash': (a, abs) => libraryPath('library:trash')(a, abs),
  'library:openTerminal': (a, abs) => libraryPath('library:openTerminal')(a, abs),
  'library:copySource': (a, abs) => libraryPath('library:copySource')(a, abs),
  'dest:check': (a, abs) => libraryPath('dest:check')(a, abs),
  'state:get': (a) => (arity('state:get', a, 0, 0), []),
  'state:set': (a, abs) => (arity('state:set', a, 1, 1), [validateAppState(a[0], abs, 'state:set')]),
};

/**
 * The app's saved state (src/shared/app-state.ts), from the renderer or from state.json: every
 * setting checked as the settings dialog allows it, comparisons bounded in count and size.
 */
export function validateAppState(
  v: unknown,
  pathIsAbsolute: (p: string) => boolean = isAbsolute,
  where = 'state',
): AppState {
  const o = expectObject(v, where, ['settings', 'comparisons']);
  if (JSON.stringify(o).length > APP_STATE_LIMITS.stateBytes)
    fail(where, `larger than ${APP_STATE_LIMITS.stateBytes} bytes`);
  const out: AppState = {};
  if (o.settings !== undefined)
    out.settings = expectSettings(o.settings, pathIsAbsolute, `${where} settings`);
  if (o.comparisons !== undefined) out.comparisons = expectComparisons(o.comparisons, `${where} comparisons`);
  return out;
}

function expectSettings(v: unknown, abs: (p: string) => boolean, where: string): PersistedSettings {
  const o = expectObject(v, where, [
    'theme',
    'defaults',
    'stallSeconds',
    'density',
    'cloneDir',
    'recentUrls',
    'recentCloneDirs',
  ]);
  const d = expectObject(o.defaults, `${where} defaults`, [
    'stream',
    'backgroundClose',
    'closeThreads',
    'verify',
  ]);
  return {
    theme: expectOneOf(o.theme, `${where} theme`, ['system', 'light', 'dark']),
    defaults: {
      stream: expectOneOf(d.stream, `${where} defaults.stream`, ['auto', 'v1', 'v2']),
      backgroundClose: expectOneOf(d.backgroundClose, `${where} defaults.backgroundClose`, [
        'auto',
        'on',
        'off',
      ]),
      closeThreads: expectInt(d.closeThreads, `${where} defaults.closeThreads`, LIMITS.closeThreads),
      verify: expectBoolean(d.verify, `${where} defaults.verify`),
    },
    stallSeconds: expectInt(o.stallSeconds, `${where} stallSeconds`, [3, 600]),
    density: expectOneOf(o.density, `${where} density`, ['comfortable', 'compact']),
    ...(o.cloneDir !== undefined && { cloneDir: expectAbsolutePath(o.cloneDir, `${where} cloneDir`, abs) }),
    recentUrls: expectList(o.recentUrls, `${where} recentUrls`, APP_STATE_LIMITS.recentUrls, (x, w) =>
      expectString(x, w, LIMITS.urlChars),
    ),
    recentCloneDirs: expectList(
      o.recentCloneDirs,
      `${where} recentCloneDirs`,
      APP_STATE_LIMITS.recentCloneDirs,
      (x, w) => expectAbsolutePath(x, w, abs),
    ),
  };
}

function expectList<T>(v: unknown, where: string, max: number, item: (x: unknown, where: string) => T): T[] {
  if (!Array.isArray(v)) fail(where, 'expected a list');
  if (v.length > max) fail(where, `more than ${max} entries`);
  return v.map((x, i) => item(x, `${where}[${i}]`));
}

function expectComparisons(v: unknown, where: string): PersistedComparison[] {
  return expectList(v, where, APP_STATE_LIMITS.comparisons, (x, w) => {
    if (!isPlainObject(x)) fail(w, 'expected an object');
    return { ...x, id: expectId(x.id, `${w} id`) };
  });
}

const libraryPath =
  <
    C extends
      | 'library:add'
      | 'library:remove'
      | 'library:trash'
      | 'library:openTerminal'
      | 'library:copySource'
      | 'dest:check',
  >(
    channel: C,
  ) =>
  (a: unknown[], abs: (p: string) => boolean): [string] => (
    arity(channel, a, 1, 1),
    [expectAbsolutePath(a[0], `${channel} path`, abs)]
  );

export function isInvokeChannel(channel: unknown): channel is InvokeChannel {
  return typeof channel === 'string' && (INVOKE_CHANNELS as readonly string[]).includes(channel);
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
    fail('invoke', `unknown channel ${JSON.stringify(String(channel).slice(0, 100))}`);
  if (!Array.isArray(args)) fail(channel, 'arguments must be an array');
  return VALIDATORS[channel](args, pathIsAbsolute) as unknown[];
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
