// Background fetch of the library: each repository with an interval (its own, else the library's)
// is fetched when its last fetch is that old, a bounded number at once. One timer serves every
// repository, set for the earliest due one, and repositories due within a short slack of it go
// along: a library of hundreds wakes the host once per round, not once per repository. Background
// rounds pause on battery and while offline (the platform says which, through PowerState) and
// resume when that ends (at its change event, or at the next minute's look where the platform has
// no event); "Fetch all" and a row's Fetch run whatever the power state. No fetch asks for
// credentials but a row's "Sign in…": a source that wants them marks the row `needsSignIn`, and
// background rounds skip it until a fetch gets through.

import type { FetchCounts } from './engine-api';
import type { FetchHeads } from './repo-library';
import type { FetchResult, IncomingNotice, LibrarySettings, RepoRow } from '../../shared/library';

/** Electron's powerMonitor and online state; the web host and tests supply their own. */
export interface PowerState {
  onBattery(): boolean;
  online(): boolean;
  /** called whenever either may have changed; returns the unsubscribe */
  onChange(listener: () => void): () => void;
}

/** Always on AC and online (the web host: it cannot tell). */
export const ALWAYS_ON: PowerState = {
  onBattery: () => false,
  online: () => true,
  onChange: () => () => undefined,
};

/** Tells the user that changesets arrived (Electron Notification; an in-app push on the web host). */
export type IncomingNotifier = (notice: IncomingNotice) => void;

export interface SchedulerClock {
  now(): number;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

export const REAL_CLOCK: SchedulerClock = {
  now: () => Date.now(),
  setTimer: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return t;
  },
  clearTimer: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

/** What the scheduler needs of the library (RepoLibrary). */
export interface FetchLibrary {
  list(): Promise<RepoRow[]>;
  settings(): Promise<LibrarySettings>;
  previousFetch(path: string): (FetchHeads & { incoming: number }) | undefined;
  noteFetch(path: string, result: FetchResult, heads?: FetchHeads): void;
  setFetching(path: string, fetching: boolean): void;
}

/** How a fetch runs: `interactive` (a row's "Sign in…") may ask the user for credentials. */
export interface FetchMode {
  interactive: boolean;
}

export interface FetchSchedulerOptions {
  library: FetchLibrary;
  fetch: (
    path: string,
    previous: (FetchHeads & { incoming: number }) | undefined,
    mode: FetchMode,
  ) => Promise<FetchCounts>;
  power?: PowerState;
  notify?: IncomingNotifier;
  clock?: SchedulerClock;
  /** repositories due within this long of the earliest go in the same round */
  slackMs?: number;
}

const MINUTE = 60_000;
/** while paused (battery, offline), how often the power state is looked at again */
const PAUSED_RETRY_MS = MINUTE;

export class FetchScheduler {
  private readonly power: PowerState;
  private readonly clock: SchedulerClock;
  private readonly slackMs: number;
  /** waiting to be fetched, in order, and whether a background round asked (notifications) */
  private readonly waiting = new Map<string, Queued>();
  private readonly running = new Set<string>();
  private timer: unknown;
  private timerAt = Infinity;
  private disposed = false;
  private readonly unsubscribe: () => void;
  private idleWaiters: (() => void)[] = [];
  /** the round a timer started last (idle() waits for it to have queued its fetches) */
  private lastRound: Promise<void> = Promise.resolve();

  constructor(private readonly options: FetchSchedulerOptions) {
    this.power = options.power ?? ALWAYS_ON;
    this.clock = options.clock ?? REAL_CLOCK;
    this.slackMs = options.slackMs ?? 30_000;
    this.unsubscribe = this.power.onChange(() => void this.reschedule());
  }

  get paused(): boolean {
    return this.power.onBattery() || !this.power.online();
  }

  /** Fetches one repository now (a row's Fetch). */
  fetchOne(path: string): Promise<void> {
    return this.enqueue([path], false);
  }

  /** Fetches one repository now, asking for credentials if its source wants them ("Sign in…"). */
  signIn(path: string): Promise<void> {
    return this.enqueue([path], false, true);
  }

  /** Fetches every repository of the library that has a source ("Fetch all"). */
  async fetchAll(): Promise<void> {
    const rows = await this.options.library.list();
    await this.enqueue(
      rows.filter(fetchable).map((r) => r.path),
      false,
    );
  }

  /** Sets the timer for the next background round (after a settings change, a fetch, a power change). */
  async reschedule(): Promise<void> {
    if (this.disposed) return;
    const next = await this.nextDue();
    if (next === this.timerAt) return;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    this.timerAt = next;
    if (next === Infinity) return;
    this.timer = this.clock.setTimer(() => this.startRound(), Math.max(0, next - this.clock.now()));
  }

  /** Resolves when the last round has queued its fetches and nothing is fetching or waiting (tests). */
  async idle(): Promise<void> {
    await this.lastRound;
    if (this.running.size === 0 && this.waiting.size === 0) return;
    return new Promise((r) => this.idleWaiters.push(r));
  }

  private startRound(): void {
    this.lastRound = this.round();
  }

  dispose(): void {
    this.disposed = true;
    this.unsubscribe();
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.waiting.clear();
  }

  private async round(): Promise<void> {
    this.timer = undefined;
    this.timerAt = Infinity;
    if (this.disposed) return;
    if (this.paused) {
      // not every platform says when it goes back online: look again later (a power change sooner)
      this.timerAt = this.clock.now() + PAUSED_RETRY_MS;
      this.timer = this.clock.setTimer(() => this.startRound(), PAUSED_RETRY_MS);
      return;
    }
    const horizon = this.clock.now() + this.slackMs;
    const due = (await this.schedule()).filter((d) => d.at <= horizon).map((d) => d.path);
    void this.enqueue(due, true);
    await this.reschedule();
  }

  /** Every repository with an interval, and when it is due (its last fetch + interval; never fetched: now). */
  private async schedule(): Promise<{ path: string; at: number }[]> {
    const [rows, settings] = await Promise.all([
      this.options.library.list(),
      this.options.library.settings(),
    ]);
    const out: { path: string; at: number }[] = [];
    for (const row of rows) {
      const minutes = row.fetchInterval ?? settings.fetchInterval;
      if (minutes === 0 || !fetchable(row) || this.running.has(row.path) || this.waiting.has(row.path))
        continue;
      if (row.fetch && 'needsSignIn' in row.fetch) continue; // until "Sign in…" gets through
      out.push({ path: row.path, at: (row.fetch?.at ?? 0) + minutes * MINUTE });
    }
    return out;
  }

  private async nextDue(): Promise<number> {
    let next = Infinity;
    for (const d of await this.schedule()) next = Math.min(next, d.at);
    return next;
  }

  private async enqueue(paths: string[], background: boolean, interactive = false): Promise<void> {
    for (const p of paths) {
      const queued = this.waiting.get(p);
      if (queued && interactive) queued.interactive = true; // a waiting fetch now may ask
      if (this.running.has(p) || queued) continue;
      this.waiting.set(p, { background, interactive });
      this.options.library.setFetching(p, true);
    }
    await this.pump();
  }

  private async pump(): Promise<void> {
    const { fetchConcurrency } = await this.options.library.settings();
    const started: Promise<void>[] = [];
    while (this.waiting.size > 0 && this.running.size < fetchConcurrency && !this.disposed) {
      const [path, queued] = this.waiting.entries().next().value!;
      this.waiting.delete(path);
      this.running.add(path);
      started.push(this.fetchNow(path, queued));
    }
    await Promise.all(started);
  }

  private async fetchNow(path: string, { background, interactive }: Queued): Promise<void> {
    const library = this.options.library;
    const previous = library.previousFetch(path);
    try {
      const counts = await this.options.fetch(path, previous, { interactive });
      const at = this.clock.now();
      library.noteFetch(
        path,
        { at, incoming: counts.incoming, outgoing: counts.outgoing },
        { remoteHeads: counts.remoteHeads, localHeads: counts.localHeads },
      );
      const before = previous?.incoming ?? 0;
      if (background && counts.incoming > before)
        this.options.notify?.({ path, name: nameOf(path), incoming: counts.incoming, previous: before });
    } catch (e) {
      const err = e as { code?: unknown; message?: unknown };
      const message = String(err.message ?? e);
      const at = this.clock.now();
      library.noteFetch(
        path,
        err.code === 'AUTH'
          ? { at, needsSignIn: { message } }
          : { at, error: { code: typeof err.code === 'string' ? err.code : 'IO', message } },
      );
    } finally {
      this.running.delete(path);
      library.setFetching(path, false);
    }
    await this.pump();
    if (this.running.size === 0 && this.waiting.size === 0) {
      // the next round's timer is set before anyone waiting for the end of this one hears of it
      await this.reschedule();
      if (this.running.size === 0 && this.waiting.size === 0) for (const r of this.idleWaiters.splice(0)) r();
    }
  }
}

interface Queued {
  /** a background round asked (a notification when changesets arrived) */
  background: boolean;
  /** may ask the user for credentials */
  interactive: boolean;
}

/** A repository that is there and has a source to fetch from. */
function fetchable(row: RepoRow): boolean {
  return row.status === 'ok' && row.source !== undefined;
}

function nameOf(path: string): string {
  return path.split(/[\\/]/).filter(Boolean).pop() ?? path;
}
