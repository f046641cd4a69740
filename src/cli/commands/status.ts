// sluice status [REPO]: hg status's lines (operations/status/status.ts): `M a`, then `  source`
// for a copy with -C, in hg's order (M A R ! ? I C, each sorted), paths relative to the root as hg
// prints them without patterns. --json prints one object per file as NDJSON, hg -Tjson's fields.
import { relative, resolve, sep } from 'node:path';
import { toSluiceError } from '../../main/engine/errors';
import { workingCopyStatus, type StatusResult } from '../../main/engine/operations/status/status';
import { HgConfig, parseBool, readRepoConfig, readUserConfig } from '../../main/engine/store/hgrc';
import { EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, parseCommandArgs, type CliCommand } from '../command';
import { terminalSafe } from '../terminal-safe';

const STATES = [
  ['modified', 'M'],
  ['added', 'A'],
  ['removed', 'R'],
  ['deleted', '!'],
  ['unknown', '?'],
  ['ignored', 'I'],
  ['clean', 'C'],
] as const;
type State = (typeof STATES)[number][0];

const FLAGS = {
  modified: { type: 'boolean', short: 'm' },
  added: { type: 'boolean', short: 'a' },
  removed: { type: 'boolean', short: 'r' },
  deleted: { type: 'boolean', short: 'd' },
  unknown: { type: 'boolean', short: 'u' },
  ignored: { type: 'boolean', short: 'i' },
  clean: { type: 'boolean', short: 'c' },
  all: { type: 'boolean', short: 'A' },
  'no-status': { type: 'boolean', short: 'n' },
  copies: { type: 'boolean', short: 'C' },
  print0: { type: 'boolean', short: '0' },
  quiet: { type: 'boolean', short: 'q' },
  json: { type: 'boolean' },
  repository: { type: 'string', short: 'R' },
} as const;

export const command: CliCommand = {
  name: 'status',
  summary: 'show changed files in the working directory (like hg status)',
  usage: 'sluice status [REPO] [-m] [-a] [-r] [-d] [-u] [-i] [-c] [-A] [-n] [-C] [-0] [-q] [--json]',
  help: `Prints what 'hg status' prints for the working directory of REPO (default: the current
directory): M modified, A added, R removed, ! missing (deleted), ? unknown, I ignored, C clean.
Files whose size and mtime cannot tell are compared with the parent revision; those found clean
are recorded in the dirstate, as hg does, when its lock is free.

  -m -a -r -d -u -i -c   show only files in these states (default: -m -a -r -d -u)
  -A, --all              every state, with copy sources
  -n, --no-status        paths only
  -C, --copies           the source of each copied file on the line after it
  -0, --print0           end each path with NUL instead of a newline
  -q, --quiet            leave unknown files out of the default
  --json                 one JSON object per file (NDJSON): itemtype, path, status, source
  -h, --help             show this help`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(argv, FLAGS, { min: 0, max: 1 });
    const root = resolve(values.repository ?? positionals[0] ?? '.');
    let show: State[] = STATES.map(([s]) => s).filter((s) => values[s]);
    if (values.all)
      show.push(
        ...(values.quiet
          ? (['modified', 'added', 'removed', 'deleted', 'clean'] as const)
          : STATES.map(([s]) => s)),
      );
    if (show.length === 0)
      show = values.quiet
        ? ['modified', 'added', 'removed', 'deleted']
        : ['modified', 'added', 'removed', 'deleted', 'unknown'];
    const warn = (m: string): void => void io.stderr.write(Buffer.from(m, 'latin1'));
    try {
      const user = readUserConfig();
      const repoConfig = await readRepoConfig(root).catch(() => new HgConfig());
      const config = (section: string, key: string): string | undefined =>
        repoConfig.get(section, key) ?? user.get(section, key);
      const result = await workingCopyStatus(root, {
        listUnknown: show.includes('unknown'),
        listIgnored: show.includes('ignored'),
        listClean: show.includes('clean'),
        warn,
        userConfig: user,
        signal: io.signal,
      });
      const statusCopies = parseBool(config('ui', 'statuscopies') ?? 'no') ?? false;
      const copies = (values.copies ?? statusCopies) || Boolean(values.all);
      const showCopies = copies && !values['no-status'];
      const relativeTo = relativePaths(config) ? process.cwd() : undefined;
      write(io.stdout, result, show, {
        json: Boolean(values.json),
        status: !values['no-status'],
        copies: showCopies,
        end: values.print0 ? '\0' : '\n',
        uiPath: (p) => (relativeTo === undefined ? p : uiRelative(root, relativeTo, p)),
      });
      return EXIT_OK;
    } catch (e) {
      const err = toSluiceError(e);
      if (err.code === 'CANCELLED') {
        io.stderr.write('interrupted!\n');
        return EXIT_INTERRUPTED;
      }
      if (values.json)
        io.stdout.write(JSON.stringify({ type: 'error', code: err.code, message: err.message }) + '\n');
      else io.stderr.write(`abort: ${terminalSafe(err.message)}\n`);
      return EXIT_ERROR;
    }
  },
};

/** scmutil.getuipathfn without patterns: root-relative unless commands.status.relative or ui.relative-paths say so. */
function relativePaths(config: (section: string, key: string) => string | undefined): boolean {
  const forced = config('commands', 'status.relative');
  if (forced !== undefined) return parseBool(forced) ?? false;
  const rel = config('ui', 'relative-paths') ?? 'legacy';
  return rel !== 'legacy' && (parseBool(rel) ?? false);
}

/** repo.pathto: a root-relative path as seen from cwd. */
function uiRelative(root: string, cwd: string, path: string): string {
  const rel = relative(cwd, resolve(root, Buffer.from(path, 'latin1').toString('utf8')));
  return Buffer.from(sep === '/' ? rel : rel.replaceAll(sep, '/'), 'utf8').toString('latin1');
}

interface WriteOptions {
  json: boolean;
  status: boolean;
  copies: boolean;
  end: string;
  uiPath: (path: string) => string;
}

/** One write per 64 KiB of output: a large working copy's lines are not written one by one. */
function write(out: NodeJS.WriteStream, result: StatusResult, show: readonly State[], o: WriteOptions): void {
  let text = '';
  const flush = (): void => {
    if (text) out.write(Buffer.from(text, 'latin1'));
    text = '';
  };
  for (const [state, char] of STATES) {
    if (!show.includes(state)) continue;
    for (const path of result[state]) {
      const source = o.copies ? result.copies.get(path) : undefined;
      if (o.json) {
        const item: Record<string, string> = { itemtype: 'file', path: utf8(path), status: char };
        if (result.copies.has(path) && o.copies) item['source'] = utf8(result.copies.get(path)!);
        text += Buffer.from(JSON.stringify(item) + '\n', 'utf8').toString('latin1');
      } else {
        text += (o.status ? `${char} ` : '') + o.uiPath(path) + o.end;
        if (source !== undefined) text += `  ${o.uiPath(source)}${o.end}`;
      }
      if (text.length > 65536) flush();
    }
  }
  flush();
}

function utf8(latin1: string): string {
  return Buffer.from(latin1, 'latin1').toString('utf8');
}
