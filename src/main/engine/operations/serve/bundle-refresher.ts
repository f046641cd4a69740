// `auto-generate.on-change` for sluice serve: hg 6.5 refreshes clone bundles after each transaction
// that adds changesets; a server sees its repository change instead (the snapshot's stamp), then
// runs `sluice bundles refresh` as a child process, so generation and upload never hold up the
// requests this process answers. One child at a time; a change during a run queues one more run.

import { spawn, type ChildProcess } from 'node:child_process';
import { readRepoConfig } from '../../store/hgrc';
import { readAutoGenConfig } from '../clone-bundles/auto-config';
import type { RepoSnapshot } from './repo-state';

/** how often the repository is looked at for a change (a stat of its few files) */
const POLL_MS = 2000;
const STDERR_TAIL = 4096;

export interface BundleRefresherOptions {
  repo: string;
  /** the refresh command: argv, e.g. [node, sluice, 'bundles', 'refresh', '-q', REPO] */
  command: readonly string[];
  env?: NodeJS.ProcessEnv;
  snapshot: () => Promise<RepoSnapshot>;
  log?: (line: string) => void;
  /** after each run (tests wait for it) */
  onRun?: (exitCode: number | null) => void;
}

export class BundleRefresher {
  private timer: NodeJS.Timeout | null = null;
  private child: ChildProcess | null = null;
  private pending = false;
  private lastSnap: RepoSnapshot | null = null;
  private closed = false;

  constructor(private readonly opts: BundleRefresherOptions) {}

  start(): void {
    void this.check();
    this.timer = setInterval(() => void this.check(), POLL_MS);
    this.timer.unref();
  }

  private async check(): Promise<void> {
    try {
      const snap = await this.opts.snapshot();
      if (snap === this.lastSnap || this.closed) return;
      this.lastSnap = snap;
      const cfg = readAutoGenConfig(await readRepoConfig(this.opts.repo, { trustedOnly: true }));
      if (cfg.onChange && cfg.formats.length) this.run();
    } catch (e) {
      this.opts.log?.(`clone bundles: ${(e as Error).message}`);
    }
  }

  private run(): void {
    if (this.child) {
      this.pending = true;
      return;
    }
    const [cmd, ...args] = this.opts.command;
    const child = spawn(cmd!, args, {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: this.opts.env ?? process.env,
    });
    this.child = child;
    let tail = '';
    child.stderr!.on('data', (d: Buffer) => {
      tail = (tail + d.toString('utf8')).slice(-STDERR_TAIL);
    });
    child.on('error', (e) => this.opts.log?.(`clone bundles: cannot run the refresh: ${e.message}`));
    child.on('close', (code) => {
      this.child = null;
      if (code !== 0 && !this.closed)
        this.opts.log?.(`clone bundles: refresh failed (exit ${code}): ${tail.trim()}`);
      this.opts.onRun?.(code);
      if (this.pending && !this.closed) {
        this.pending = false;
        this.run();
      }
    });
  }

  /** Stops watching; a running refresh is ended (its temporaries go, the manifest is as it was). */
  close(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.child?.kill('SIGTERM');
  }
}
