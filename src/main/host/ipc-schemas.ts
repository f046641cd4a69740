// The schemas of everything that crosses the IPC boundary into the host: one valibot schema per
// invoke channel's argument list, strict objects (an unknown field is refused, not dropped), every
// string and number bounded. The contract's TypeScript types (src/shared/ipc.ts, jobs.ts) are
// checked against what the schemas infer at the end of this file, so the two cannot drift; a new
// channel is one entry of invokeArgs. Pure Node: no electron import.

import { isAbsolute } from 'node:path';
import * as v from 'valibot';
import { parseSshUrl } from '../engine/client/ssh-command';
import { APP_STATE_LIMITS, type AppState } from '../../shared/app-state';
import type { InvokeChannel, InvokeMap } from '../../shared/ipc';
import { FETCH_INTERVALS } from '../../shared/library';
import type {
  ApplyRequest,
  BundleRequest,
  CloneRequest,
  JobRequest,
  PullRequest,
  UpdateRequest,
  VerifyRequest,
} from '../../shared/jobs';

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

function isPlainObject(x: unknown): x is Record<string, unknown> {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) return false;
  const proto = Object.getPrototypeOf(x) as unknown;
  return proto === Object.prototype || proto === null;
}

/** C0 controls and DEL: never typed by a person, and NUL truncates paths in C APIs. */
function hasControlChars(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

/** An object's problem: a field it does not take, one it lacks, or not an object at all. */
function objectMessage(issue: v.BaseIssue<unknown>): string {
  if (issue.expected === 'never') return `unknown field "${String(issue.input)}"`;
  if (issue.input === undefined && issue.expected !== 'Object') return `missing field ${issue.expected}`;
  return 'expected an object';
}

/** A strict object: an unknown field is refused, named in the message. */
function strict<const E extends v.ObjectEntries>(entries: E) {
  return v.strictObject(entries, objectMessage);
}

/** Plain data only: not a class instance, not an array. */
const plainData = v.check((x: unknown) => isPlainObject(x), 'expected an object');

/** A strict object of plain data. */
function plainObject<const E extends v.ObjectEntries>(entries: E) {
  return v.pipe(v.unknown(), plainData, strict(entries));
}

/** A string check with a message of its own per problem (undefined: fine). */
function refine(problem: (s: string) => string | undefined) {
  return v.rawCheck<string>(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const message = problem(dataset.value);
    if (message !== undefined) addIssue({ message });
  });
}

function text(maxChars: number) {
  return v.pipe(v.string('expected a string'), v.maxLength(maxChars, `longer than ${maxChars} characters`));
}

function int([min, max]: readonly [number, number]) {
  return v.pipe(
    v.number('expected an integer'),
    v.integer('expected an integer'),
    v.minValue(min, `must be between ${min} and ${max}`),
    v.maxValue(max, `must be between ${min} and ${max}`),
  );
}

function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  return v.picklist(values, `expected one of ${values.map((x) => JSON.stringify(x)).join(', ')}`);
}

const flag = v.boolean('expected true or false');

const id = v.pipe(
  text(LIMITS.idChars),
  v.regex(/^[A-Za-z0-9_-]+$/, 'expected an identifier ([A-Za-z0-9_-])'),
);

/** A revision symbol: a non-empty string without control characters (hg refuses those in names). */
const rev = v.pipe(
  text(LIMITS.revChars),
  v.check((s) => s !== '' && !hasControlChars(s), 'expected a revision (non-empty, no control characters)'),
);

const fileName = v.pipe(
  text(LIMITS.fileNameChars),
  refine((s) => {
    if (s === '' || s === '.' || s === '..') return 'empty or dot file name';
    if (/[/\\]/.test(s) || hasControlChars(s)) return 'a file name, not a path, is expected';
    return undefined;
  }),
);

function httpUrlProblem(s: string): string | undefined {
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    return `not a valid URL: ${JSON.stringify(s.slice(0, 200))}`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return `only http and https URLs are allowed, not ${url.protocol}`;
  if (!url.hostname) return 'URL without a host';
  if (hasControlChars(s) || /\s/.test(s)) return 'whitespace or control characters in URL';
  return undefined;
}

/**
 * A repository URL for clone, pull and "Test connection": http(s), or ssh://[user@]host[:port]/path
 * as hg reads it (the engine's own parser: no password, no host or user starting with '-', which
 * ssh would take for an option). The ssh command itself never comes from a request.
 */
function repoUrlProblem(s: string): string | undefined {
  // a local repository (hg's localpeer): an absolute path or a file:/// URL; the app has no
  // current directory, so a relative path is refused rather than resolved against main's
  if (/^file:/i.test(s) || !/^[a-z][a-z0-9+.-]+:/i.test(s)) {
    if (hasControlChars(s)) return 'control characters in a path';
    if (/^file:/i.test(s) ? !/^file:\/\/(localhost)?\//i.test(s) : !isAbsolute(s))
      return 'a local repository needs an absolute path or a file:/// URL';
    return undefined;
  }
  if (!/^ssh:\/\//i.test(s)) return httpUrlProblem(s);
  if (hasControlChars(s) || /\s/.test(s)) return 'whitespace or control characters in URL';
  try {
    parseSshUrl(s);
  } catch (e) {
    return (e as Error).message;
  }
  return undefined;
}

/** An http(s) URL (clone bundles, proxies, links); repository URLs that may be ssh:// are repoUrl. */
const httpUrl = v.pipe(text(LIMITS.urlChars), refine(httpUrlProblem));
const repoUrl = v.pipe(text(LIMITS.urlChars), refine(repoUrlProblem));

const closer = plainObject({
  backgroundClose: v.optional(oneOf(['on', 'off', 'auto'])),
  closeThreads: v.optional(int(LIMITS.closeThreads)),
  minFileCount: v.optional(int(LIMITS.minFileCount)),
  maxQueue: v.optional(int(LIMITS.maxQueue)),
  simulateCloseMs: v.optional(int(LIMITS.simulateCloseMs)),
});

const fetchInterval = v.picklist(FETCH_INTERVALS, `expected one of ${FETCH_INTERVALS.join(', ')}`);

/** Library settings: a change names only what it changes. */
const librarySettingsChange = plainObject({
  fetchInterval: v.optional(fetchInterval),
  fetchConcurrency: v.optional(int([1, 16])),
  maxTransfers: v.optional(int([1, 16])),
});

const credentialsAnswer = v.nullable(
  plainObject({ user: text(LIMITS.userChars), password: text(LIMITS.passwordChars) }),
);

/** An argument of a channel, named for error messages (`job:start request.dest: …`). */
function arg<const S extends v.GenericSchema>(name: string, schema: S) {
  return v.pipe(schema, v.title(name));
}

function list<const S extends v.GenericSchema>(item: S, max: number) {
  return v.pipe(v.array(item, 'expected a list'), v.maxLength(max, `more than ${max} entries`));
}

/**
 * The app's saved state (src/shared/app-state.ts), from the renderer or from state.json: every
 * setting checked as the settings dialog allows it, comparisons bounded in count and size (the
 * renderer checks a comparison's fields when it reads them back).
 */
function appStateSchema(path: v.GenericSchema<string>) {
  const settings = plainObject({
    theme: oneOf(['system', 'light', 'dark']),
    defaults: plainObject({
      stream: oneOf(['auto', 'v1', 'v2']),
      backgroundClose: oneOf(['auto', 'on', 'off']),
      closeThreads: int(LIMITS.closeThreads),
      verify: flag,
    }),
    stallSeconds: int([3, 600]),
    density: oneOf(['comfortable', 'compact']),
    cloneDir: v.optional(path),
    recentUrls: list(text(LIMITS.urlChars), APP_STATE_LIMITS.recentUrls),
    recentCloneDirs: list(path, APP_STATE_LIMITS.recentCloneDirs),
  });
  const comparison = v.pipe(v.unknown(), plainData, v.looseObject({ id }, objectMessage));
  const max = APP_STATE_LIMITS.stateBytes;
  return v.pipe(
    v.unknown(),
    plainData,
    v.check((x) => JSON.stringify(x).length <= max, `larger than ${max} bytes`),
    strict({
      settings: v.optional(settings),
      comparisons: v.optional(list(comparison, APP_STATE_LIMITS.comparisons)),
    }),
  );
}

/** Every schema whose checks depend on the platform's rule for absolute paths. */
function pathSchemas(pathIsAbsolute: (p: string) => boolean) {
  /**
   * An absolute local path. Relative paths would resolve against the host's cwd (which the user
   * never sees), NUL bytes truncate paths in C APIs, and control characters are never typed by a
   * person, so all are refused.
   */
  const path = v.pipe(
    text(LIMITS.pathChars),
    refine((p) => {
      if (p === '') return 'empty path';
      if (hasControlChars(p)) return 'control characters in path';
      if (!pathIsAbsolute(p)) return `not an absolute path: ${JSON.stringify(p)}`;
      return undefined;
    }),
  );
  const timeouts = {
    connectTimeoutMs: v.optional(int(LIMITS.timeoutMs)),
    idleTimeoutMs: v.optional(int(LIMITS.timeoutMs)),
  };
  const comparison = v.optional(id);
  const requests = {
    apply: strict({
      kind: v.literal('apply'),
      bundlePath: path,
      dest: path,
      comparison,
      library: v.optional(flag),
      closer: v.optional(closer),
      verify: v.optional(flag),
      update: v.optional(flag),
      updateRev: v.optional(rev),
    }),
    clone: strict({
      kind: v.literal('clone'),
      url: repoUrl,
      dest: path,
      comparison,
      library: v.optional(flag),
      stream: v.optional(oneOf(['auto', 'v1', 'v2'])),
      closer: v.optional(closer),
      verify: v.optional(flag),
      caFile: v.optional(path),
      insecure: v.optional(flag),
      cloneBundles: v.optional(flag),
      obsmarkers: v.optional(flag),
      pull: v.optional(flag),
      update: v.optional(flag),
      updateRev: v.optional(rev),
      ...timeouts,
    }),
    pull: strict({
      kind: v.literal('pull'),
      repo: path,
      source: v.optional(repoUrl),
      update: v.optional(flag),
      incoming: v.optional(flag),
      caFile: v.optional(path),
      insecure: v.optional(flag),
      ...timeouts,
    }),
    bundle: strict({
      kind: v.literal('bundle'),
      repo: path,
      out: path,
      comparison,
      type: v.optional(oneOf(['packed1', 'v2'])),
      compression: v.optional(oneOf(['none', 'gzip', 'zstd'])),
      chunkSize: v.optional(int(LIMITS.chunkSize)),
    }),
    verify: strict({ kind: v.literal('verify'), repo: path }),
    update: strict({
      kind: v.literal('update'),
      repo: path,
      rev: v.optional(rev),
      hidden: v.optional(flag),
      closer: v.optional(closer),
    }),
  };
  const appState = appStateSchema(path);
  const kinds = Object.keys(requests) as [keyof typeof requests, ...(keyof typeof requests)[]];
  const jobRequest = v.pipe(
    v.unknown(),
    plainData,
    v.variant('kind', Object.values(requests), (issue) =>
      issue.path ? `expected one of ${kinds.map((k) => JSON.stringify(k)).join(', ')}` : 'expected an object',
    ),
  );
  return { path, requests, jobRequest, appState };
}

/** One argument list schema per invoke channel (the Record type makes a missing one a compile error). */
function invokeArgs({ path, jobRequest, appState }: ReturnType<typeof pathSchemas>) {
  const onePath = v.strictTuple([arg('path', path)]);
  const none = v.strictTuple([]);
  return {
    'app:info': none,
    'job:start': v.strictTuple([
      arg('request', jobRequest),
      arg('label', v.optional(text(LIMITS.labelChars))),
    ]),
    'job:cancel': v.strictTuple([arg('jobId', id)]),
    'job:list': none,
    'job:move': v.strictTuple([arg('jobId', id), arg('position', int([0, 10_000]))]),
    'job:log': v.strictTuple([
      arg('jobId', id),
      arg('from', int(LIMITS.logLine)),
      arg('count', int(LIMITS.logPage)),
      arg('query', v.optional(text(LIMITS.labelChars))),
    ]),
    'job:exportLog': v.strictTuple([
      arg('jobId', id),
      arg('suggestedName', fileName),
      arg('header', text(LIMITS.pathChars * 2)),
    ]),
    'bundle:inspect': onePath,
    'server:probe': v.strictTuple([arg('url', repoUrl)]),
    'sample:get': none,
    'history:list': none,
    'history:clear': none,
    'dialog:pickDirectory': v.strictTuple([arg('defaultPath', v.optional(path))]),
    'dialog:pickBundle': none,
    'shell:openPath': onePath,
    'shell:openExternal': v.strictTuple([arg('url', httpUrl)]),
    'file:writeText': v.strictTuple([arg('suggestedName', fileName), arg('text', text(LIMITS.textBytes))]),
    'credentials:answer': v.strictTuple([
      arg('requestId', id),
      arg('answer', credentialsAnswer),
      arg('remember', v.optional(flag)),
    ]),
    'credentials:list': none,
    'credentials:forget': v.strictTuple([
      arg(
        'origin',
        v.pipe(
          httpUrl,
          v.check((s) => new URL(s).origin === s, 'expected scheme://host[:port]'),
        ),
      ),
    ]),
    'downloads:list': none,
    'downloads:remove': v.strictTuple([
      arg('key', v.optional(v.pipe(text(32), v.regex(/^[0-9a-f]{32}$/, 'expected 32 hex digits')))),
    ]),
    'comparison:removeFolders': v.strictTuple([arg('run', v.optional(id))]),
    'library:list': none,
    'library:add': onePath,
    'library:remove': onePath,
    'library:trash': onePath,
    'library:deleteFolder': v.strictTuple([arg('path', path), arg('typedName', text(LIMITS.fileNameChars))]),
    'library:openTerminal': onePath,
    'library:copySource': onePath,
    'dest:check': onePath,
    'state:get': none,
    'state:set': v.strictTuple([arg('patch', appState)]),
    'library:fetch': onePath,
    'library:fetchAll': none,
    'library:signIn': onePath,
    'library:settings': none,
    'library:setSettings': v.strictTuple([arg('change', librarySettingsChange)]),
    'library:setFetchInterval': v.strictTuple([
      arg('path', path),
      arg('interval', v.nullable(fetchInterval)),
    ]),
  } satisfies Record<InvokeChannel, v.GenericSchema<unknown[]>>;
}

export type IpcSchemas = {
  jobRequest: ReturnType<typeof pathSchemas>['jobRequest'];
  appState: ReturnType<typeof pathSchemas>['appState'];
  invokeArgs: ReturnType<typeof invokeArgs>;
};

const built = new Map<(p: string) => boolean, IpcSchemas>();

/** The schemas for a platform's rule of absolute paths (built once per rule). */
export function ipcSchemas(pathIsAbsolute: (p: string) => boolean = isAbsolute): IpcSchemas {
  let s = built.get(pathIsAbsolute);
  if (!s) {
    const paths = pathSchemas(pathIsAbsolute);
    s = { jobRequest: paths.jobRequest, appState: paths.appState, invokeArgs: invokeArgs(paths) };
    built.set(pathIsAbsolute, s);
  }
  return s;
}

// The contract's types against the schemas': a field or argument added, removed or retyped on one
// side only fails to compile here.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Agrees<A, B> = Same<A, B> extends true ? Same<keyof A, keyof B> : false;
type Out<S extends v.GenericSchema> = v.InferOutput<S>;
type Requests = ReturnType<typeof pathSchemas>['requests'];
type Closer = NonNullable<ApplyRequest['closer']>;
/** A tuple's slots with optional ones filled: `[a: A, b?: B]` and `[A, B | undefined]` agree. */
type Slots<T extends readonly unknown[]> = { [K in keyof T]-?: Exclude<T[K], undefined> };
type ArgsAgree = {
  [C in InvokeChannel]: Same<Slots<InvokeMap[C]['args']>, Slots<Out<IpcSchemas['invokeArgs'][C]>>>;
};
type AllTrue<T> = false extends T[keyof T] ? false : true;
const contractChecks: {
  apply: Agrees<ApplyRequest, Out<Requests['apply']>>;
  clone: Agrees<CloneRequest, Out<Requests['clone']>>;
  pull: Agrees<PullRequest, Out<Requests['pull']>>;
  bundle: Agrees<BundleRequest, Out<Requests['bundle']>>;
  verify: Agrees<VerifyRequest, Out<Requests['verify']>>;
  update: Agrees<UpdateRequest, Out<Requests['update']>>;
  closer: Agrees<Closer, Out<typeof closer>>;
  jobRequest: Same<JobRequest, Out<IpcSchemas['jobRequest']>>;
  appState: Agrees<AppState, Out<IpcSchemas['appState']>>;
  args: AllTrue<ArgsAgree>;
} = {
  apply: true,
  clone: true,
  pull: true,
  bundle: true,
  verify: true,
  update: true,
  closer: true,
  jobRequest: true,
  appState: true,
  args: true,
};
void contractChecks;
