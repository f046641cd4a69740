// Hostile ssh servers: the ssh command is a shell script standing in for `ssh host 'hg -R path
// serve --stdio'` (Sluice runs it as it runs ssh), so a remote can print an endless login banner,
// never answer, claim absurd reply lengths or flood stderr, without an sshd. Each clone ends with
// a typed SluiceError in bounded time and memory, nothing left at DEST, the remote's processes
// gone.
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  constants,
  existsSync,
  openSync,
  readFileSync,
  readdirSync,
  writeFileSync,
} from 'node:fs';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/main/engine/errors';
import { JobContext } from '../../src/main/engine/context/job-context';
import { ROOT, extractFixture, removeDir, tempDirMaker } from '../support/env';
import { createEmptyRepository } from '../../src/main/engine/changegroup';
import { pullFromUrl } from '../../src/main/engine/operations/pull/pull';
import { treeHash } from '../interop/changegroup-support';
import { cloneFromUrl } from '../../src/main/engine/operations/clone/clone';

let work = '';
beforeAll(() => {
  work = tempDirMaker('hostile-ssh-servers')('w');
});
afterAll(() => removeDir(work));

/** the handshake reply of a stream-capable server (hello's framed capabilities, between's `1\n\n`) */
const CAPS = 'capabilities: batch branchmap getbundle known lookup stream';
const hello = (caps: string): string => `printf '%s\\n%s\\n1\\n\\n' ${caps.length + 1} '${caps}'`;
const HELLO = hello(CAPS);

/** How long the remote's processes may take to die once Sluice gave up on them: a hang detector. */
const EXIT_BOUND_MS = 30_000;

/**
 * A FIFO whose write end every process of the remote inherits (the script opens it as fd 9):
 * `exited` resolves true once all of them have exited (EOF on the read end), false if they still
 * run after EXIT_BOUND_MS. Until `release()`, the test holds a write end too, so the read end does
 * not see EOF before the script opened its own.
 */
function exitWatch(fifo: string): { exited: Promise<boolean>; release: () => void } {
  execFileSync('mkfifo', [fifo]);
  const reader = new Socket({
    fd: openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK),
    writable: false,
  });
  const placeholder = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
  let timer: NodeJS.Timeout | undefined;
  const exited = new Promise<boolean>((resolve) => {
    reader.on('end', () => resolve(true));
    reader.on('error', () => resolve(true));
    timer = setTimeout(() => resolve(false), EXIT_BOUND_MS);
    reader.resume();
  }).finally(() => {
    clearTimeout(timer);
    reader.destroy();
  });
  return { exited, release: () => closeSync(placeholder) };
}

let n = 0;
/**
 * Clones ssh://host/repo with `body` (sh) as the ssh command. The script records its pid, and its
 * processes hold a FIFO open, so the test can wait for them all to be gone afterwards.
 */
async function cloneFrom(
  body: string,
  opts: { connectTimeoutMs?: number; idleTimeoutMs?: number; interactive?: boolean } = {},
): Promise<{ err: SluiceError; left: string[]; logs: string[]; alive: boolean; pid: number }> {
  const i = n++;
  const script = join(work, `remote-${i}.sh`);
  const pidFile = join(work, `remote-${i}.pid`);
  const fifo = join(work, `remote-${i}.alive`);
  const watch = exitWatch(fifo);
  writeFileSync(script, `exec 9>${fifo}\necho $$ > ${pidFile}\n${body}\n`);
  const parent = join(work, `p${i}`);
  const logs: string[] = [];
  const ctx = new JobContext({
    fileEvents: false,
    // interactive: ssh keeps the terminal and this process's group (as at a terminal): only its
    // own pid is signalled
    connect: { sshCommand: `sh ${script}`, remoteCommand: 'hg', interactive: opts.interactive ?? false },
    sink: (e) => void (e.type === 'log' && logs.push(e.message)),
  });
  const err = await cloneFromUrl(
    { kind: 'clone', url: 'ssh://host/repo', dest: join(parent, 'clone') },
    ctx,
    {
      connectTimeoutMs: opts.connectTimeoutMs ?? 5000,
      idleTimeoutMs: opts.idleTimeoutMs ?? 5000,
    },
  ).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SluiceError);
  let left: string[] = [];
  try {
    left = readdirSync(parent);
  } catch {
    /* parent never created */
  }
  // the pid is written after the script opened the FIFO: its own write end is in place
  const pid = Number(readFileSync(pidFile, 'utf8'));
  watch.release();
  const alive = !(await watch.exited);
  return { err: err as SluiceError, left, logs, alive, pid };
}

describe('ssh remotes that print before the handshake', () => {
  it('an endless login banner (lines) is given up after 500 lines, as sshpeer._performhandshake does: PROTOCOL', async () => {
    const r = await cloneFrom(`while :; do echo "Welcome to the host, have a nice day"; done`);
    expect(r.err.code, r.err.message).toBe('PROTOCOL');
    expect(r.err.message).toMatch(/no suitable response from remote hg on host/);
    expect(r.left).toEqual([]);
    expect(r.alive).toBe(false);
  });

  it('an endless banner line (no newline) is cut at the line bound: LIMIT', async () => {
    const r = await cloneFrom(`yes | tr -d '\\n'`);
    expect(r.err.code, r.err.message).toBe('LIMIT');
    expect(r.err.message).toMatch(/line longer than \d+ bytes/);
    expect(r.left).toEqual([]);
    expect(r.alive).toBe(false);
  });

  it('a banner trickled a line at a time, never idle: the handshake must be done within the connect timeout (TIMEOUT)', async () => {
    const r = await cloneFrom(`while :; do echo motd; sleep 0.1; done`, {
      connectTimeoutMs: 300,
      idleTimeoutMs: 200,
    });
    // 500 lines would take 50 s: the connect timeout ends it first
    expect(r.err.code, r.err.message).toBe('TIMEOUT');
    expect(r.err.message).toMatch(/^no Mercurial server answered on host within 300 ms/);
    expect(r.left).toEqual([]);
    expect(r.alive).toBe(false);
  });
});

describe('ssh remotes that never answer', () => {
  it('silent from the start (it reads, never writes): TIMEOUT at the connect timeout, the remote killed', async () => {
    const r = await cloneFrom('cat >/dev/null', { connectTimeoutMs: 300 });
    expect(r.err.code, r.err.message).toBe('TIMEOUT');
    expect(r.err.message).toMatch(/^no Mercurial server answered on host within 300 ms/);
    expect(r.left).toEqual([]);
    expect(r.alive).toBe(false);
  });

  it('at a terminal (interactive) too: a remote that prompts for a password and waits is a TIMEOUT naming the host and quoting the prompt, ssh killed (its pid only)', async () => {
    // one process (read is the shell's own), as ssh is: it prompts on stdout without a newline,
    // then reads its stdin forever, as a login shell waiting for a password would
    const r = await cloneFrom(`printf 'Password: '\nwhile read -r line; do :; done`, {
      connectTimeoutMs: 300,
      interactive: true,
    });
    expect(r.err.code, r.err.message).toBe('TIMEOUT');
    expect(r.err.message).toMatch(
      /^no Mercurial server answered on host within 300 ms \(the remote's last output: "Password:"\): ssh or the remote is waiting for something/,
    );
    expect(r.left).toEqual([]);
    expect(r.alive).toBe(false);
  });

  it('a remote that ignores SIGTERM and never answers: killed with SIGKILL after the grace time', async () => {
    const r = await cloneFrom(
      `trap '' TERM\necho 'still here' >&2\nfor i in $(seq 300); do sleep 0.1; done`,
      {
        connectTimeoutMs: 300,
      },
    );
    expect(r.err.code, r.err.message).toBe('TIMEOUT');
    expect(r.err.message).toContain(`(the remote's last output: "still here")`);
    expect(r.left).toEqual([]);
    expect(r.alive).toBe(false);
  });

  it('silent after the handshake: TIMEOUT after the idle timeout', async () => {
    const r = await cloneFrom(`${HELLO}\ncat >/dev/null`, { idleTimeoutMs: 300 });
    expect(r.err.code, r.err.message).toBe('TIMEOUT');
    expect(r.err.message).toMatch(/stopped sending data for 300 ms/);
    expect(r.left).toEqual([]);
    expect(r.alive).toBe(false);
  });
});

describe('ssh remotes claiming absurd lengths', () => {
  it("hello's own length is not trusted (hg reads the handshake as lines): a huge one is harmless", async () => {
    // then silence: the handshake passed, the clone waits for its first reply
    const r = await cloneFrom(`printf '99999999999999999999\\n%s\\n1\\n\\n' '${CAPS}'\ncat >/dev/null`, {
      idleTimeoutMs: 300,
    });
    expect(r.err.code, r.err.message).toBe('TIMEOUT');
    expect(r.logs.join('\n')).toMatch(/capabilities: batch branchmap/);
  });

  it.each([
    ['a 13-digit length', '9999999999999', 'PROTOCOL', /unexpected response from remote/],
    ['a 12-digit length', '999999999999', 'LIMIT', /response larger than/],
    ['64 MiB and one byte, then nothing', String((64 << 20) + 1), 'LIMIT', /response larger than/],
    ['a negative length', '-5', 'PROTOCOL', /unexpected response from remote/],
  ])(
    'a reply framed with %s: %s before anything is allocated or waited for',
    async (_what, len, code, message) => {
      // no stream capability: the clone pulls, its first command a framed batch (heads, known)
      const caps = 'capabilities: batch branchmap getbundle known lookup';
      const r = await cloneFrom(`${hello(caps)}\nprintf '%s\\n' '${len}'\ncat >/dev/null`, {
        idleTimeoutMs: 3000,
      });
      expect(r.err.code, r.err.message).toBe(code);
      expect(r.err.message).toMatch(message);
      expect(r.left).toEqual([]);
      expect(r.alive).toBe(false);
    },
  );
});

describe('ssh remotes with large framed replies', () => {
  it('a framed reply of 5 MiB (past what the pipe reader buffers before pausing) is read whole, then judged: PROTOCOL, not a TIMEOUT', async () => {
    const caps = 'capabilities: batch branchmap getbundle known lookup';
    const r = await cloneFrom(
      `${hello(caps)}\nprintf '%s\\n' ${5 << 20}\nhead -c ${5 << 20} /dev/zero | tr '\\0' a\ncat >/dev/null`,
      { idleTimeoutMs: 2000 },
    );
    expect(r.err.code, r.err.message).toBe('PROTOCOL');
    expect(r.left).toEqual([]);
  });
});

describe('ssh remotes flooding stderr', () => {
  it('an endless stderr flood while stdout is silent: TIMEOUT; the remote: lines shown are bounded', async () => {
    const r = await cloneFrom(`(yes 'remote noise' >&2) &\n${HELLO}\ncat >/dev/null`, {
      idleTimeoutMs: 500,
    });
    expect(r.err.code, r.err.message).toBe('TIMEOUT');
    // millions of lines came in the half second; 1000 are shown, then one notice
    const noise = r.logs.filter((l) => l === 'remote: remote noise');
    expect(noise.length).toBe(1000);
    expect(r.logs.filter((l) => l === 'remote: (more output from the remote not shown)')).toHaveLength(1);
    expect(r.left).toEqual([]);
    expect(r.alive).toBe(false);
  });

  it('an endless stderr line (no newline) is shown in bounded pieces', async () => {
    const r = await cloneFrom(`(yes | tr -d '\\n' >&2) &\n${HELLO}\ncat >/dev/null`, {
      idleTimeoutMs: 500,
    });
    expect(r.err.code, r.err.message).toBe('TIMEOUT');
    const remote = r.logs.filter((l) => l.startsWith('remote: '));
    expect(remote.length).toBeLessThanOrEqual(1003); // with the handshake's two debug lines
    for (const l of remote) expect(l.length).toBeLessThanOrEqual(4096 + 8);
    expect(r.alive).toBe(false);
  });
});

describe('ssh remotes that stop mid-reply', () => {
  // no stream capability: the clone pulls, its first command a framed batch; `head -c 1` waits
  // for the command to arrive, then 5 of the 100 bytes announced are sent
  const caps = 'capabilities: batch branchmap getbundle known lookup';
  const partial = `${hello(caps)}\nhead -c 1 >/dev/null\nprintf '100\\nabcde'`;

  it.each([
    ['0', 'exit 0', /\(ssh exit status 0\)$/],
    [
      '1, its stderr saying why',
      `echo 'abort: out of memory' >&2\nexit 1`,
      /\(ssh exit status 1\):\nabort: out of memory$/,
    ],
    // a process the remote started holds stderr: the exit status is known anyway, without waiting
    ['1, a child of it holding stderr', `sleep 30 </dev/null >/dev/null &\nexit 1`, /\(ssh exit status 1\)$/],
  ])(
    'a remote that exits mid-reply with status %s: TRUNCATED with its own exit status, never a signal Sluice sent',
    async (_what, end, words) => {
      const r = await cloneFrom(`${partial}\n${end}`);
      expect(r.err.code, r.err.message).toBe('TRUNCATED');
      expect(r.err.message).toMatch(/^the connection to host ended in the middle of a reply /);
      expect(r.err.message).toMatch(words);
      expect(r.err.message).not.toMatch(/SIG/);
      expect(r.left).toEqual([]);
      expect(r.alive).toBe(false);
    },
  );

  it('a remote that closes its output mid-reply and keeps running: TRUNCATED saying so (not the SIGTERM Sluice then sends)', async () => {
    const r = await cloneFrom(`${partial}\nexec >&-\nexec cat >/dev/null`);
    expect(r.err.code, r.err.message).toBe('TRUNCATED');
    expect(r.err.message).toBe(
      'the connection to host ended in the middle of a reply (ssh closed its output but was still running)',
    );
    expect(r.left).toEqual([]);
    expect(r.alive).toBe(false);
  });

  /** an ssh command running a real `sluice -R REPO serve --stdio` whose output is cut after `cut` bytes */
  function cutServer(cut: number): string {
    const repo = extractFixture('default', join(work, `cut-src-${cut}`));
    const script = join(work, `cut-${cut}.sh`);
    // dd alone holds the pipe Sluice reads: when it has passed on `cut` bytes, the pipe ends
    // (head -c would wait to fill its buffer)
    const fifo = join(work, `cut-${cut}.fifo`);
    writeFileSync(
      script,
      [
        `rm -f '${fifo}'; mkfifo '${fifo}'`,
        'exec 3<&0',
        `SLUICE_FROM_SOURCE=1 SLUICE_CLI_NO_RUN= '${process.execPath}' '${join(ROOT, 'bin', 'sluice.cjs')}' -R '${repo}' serve --stdio <&3 >'${fifo}' &`,
        `exec dd bs=1 count=${cut} <'${fifo}' 2>/dev/null`,
      ].join('\n'),
    );
    return `sh ${script}`;
  }

  it.each([3000, 20_000])(
    'a pull from a real server whose output is cut after %i bytes (the pipe closes mid-frame): TRUNCATED, the repository as it was',
    async (cut) => {
      const sshCommand = cutServer(cut);
      const dest = join(work, `cut-dest-${cut}`);
      await createEmptyRepository(dest);
      const before = treeHash(dest);
      const err = await pullFromUrl(
        { kind: 'pull', repo: dest, source: 'ssh://host/repo', idleTimeoutMs: 10_000 },
        new JobContext({ connect: { sshCommand, remoteCommand: 'hg' } }),
      ).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SluiceError);
      expect((err as SluiceError).code, (err as Error).message).toBe('TRUNCATED');
      expect((err as Error).message).toMatch(
        /^the connection to host ended in the middle of a reply \(ssh exit status 0\)/,
      );
      expect(treeHash(dest)).toBe(before);
    },
    30_000,
  );

  it.each([{ stream: 'v1' }, { stream: 'v2' }, { pull: true }] as const)(
    'a clone (%o) from a real server whose output is cut after 20000 bytes: TRUNCATED, nothing at DEST',
    async (req) => {
      const sshCommand = cutServer(20_000);
      const parent = join(work, `cut-clone-${n++}`);
      const e = await cloneFromUrl(
        { kind: 'clone', url: 'ssh://host/repo', dest: join(parent, 'clone'), ...req },
        new JobContext({ fileEvents: false, connect: { sshCommand, remoteCommand: 'hg' } }),
        { idleTimeoutMs: 10_000 },
      ).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(SluiceError);
      expect((e as SluiceError).code, (e as Error).message).toBe('TRUNCATED');
      expect(existsSync(parent) ? readdirSync(parent) : []).toEqual([]);
    },
    30_000,
  );
});
