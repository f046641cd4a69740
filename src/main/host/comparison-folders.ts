// What comparison jobs made (their repositories and generated bundles), recorded by the host when
// such a job ends done, so "remove comparison folders" deletes exactly those and never anything
// else: a job's destination must not exist when it starts, so what is there when it is done is
// the job's. comparison-folders.json in the host's data folder, written atomically (JsonFile).

import { lstat, rm } from 'node:fs/promises';
import { JsonFile } from '../engine/json-file';

export interface ComparisonFolder {
  run: string;
  path: string;
}

/** A bound on the records kept: the oldest are dropped (and no longer removed) past it. */
const MAX_RECORDS = 10_000;

function validRecords(value: unknown): ComparisonFolder[] {
  if (!Array.isArray(value)) throw new Error('expected a list');
  return value
    .filter(
      (r): r is ComparisonFolder =>
        typeof r === 'object' &&
        r !== null &&
        typeof (r as ComparisonFolder).run === 'string' &&
        typeof (r as ComparisonFolder).path === 'string',
    )
    .slice(-MAX_RECORDS);
}

export class ComparisonFolders {
  private readonly file: JsonFile<ComparisonFolder[]>;
  private records: Promise<ComparisonFolder[]> | null = null;

  constructor(path: string) {
    this.file = new JsonFile(path, validRecords, 'comparison folders');
  }

  list(): Promise<ComparisonFolder[]> {
    this.records ??= this.file.read().then((v) => v ?? []);
    return this.records;
  }

  /** `path` is what a job of comparison `run` made (its destination or output, done). */
  record(run: string, path: string): Promise<void> {
    return this.update((all) =>
      all.some((r) => r.path === path) ? all : [...all, { run, path }].slice(-MAX_RECORDS),
    );
  }

  /** Deletes the recorded paths of `run` (or of every run) and forgets them; the count removed. */
  async remove(run?: string): Promise<number> {
    const chosen = (await this.list()).filter((r) => run === undefined || r.run === run);
    let removed = 0;
    for (const r of chosen) {
      // rm does not follow a symlink put in its place: only the link would go
      const there = await lstat(r.path).catch(() => null);
      if (there) {
        await rm(r.path, { recursive: true, force: true });
        removed++;
      }
    }
    const gone = new Set(chosen);
    await this.update((all) => all.filter((r) => !gone.has(r)));
    return removed;
  }

  flushed(): Promise<void> {
    return this.file.flushed();
  }

  private update(change: (all: ComparisonFolder[]) => ComparisonFolder[]): Promise<void> {
    // chained on the list before it, so updates arriving together all land, in order
    const next = this.list().then(change);
    this.records = next;
    return next.then((all) => this.file.write(all));
  }
}
