// Where verify reads the store from: the store listing (sizes and paths of every file), revlogs
// opened with them, and the filelog scans, from worker threads when there are any.
import { join, sep } from 'node:path';
import type { RepoLocation } from '../../store/requirements';
import { storePathEncoder, type StorePathEncoder } from '../../store/encoding';
import { walkStore } from '../../store/walk';
import { Revlog } from '../../revlog/revlog';
import { scanFilelog, type FilelogScan, type FilelogScanRequest } from './filelog-scan';
import type { ReadMode } from './read-mode';
import { ScanPool, defaultScanWorkers, scanWorkerScript, type ScanItem } from './scan-pool';

/** Filelog bytes below which worker threads cost more than they save (they take a while to start). */
const WORKERS_MIN_BYTES = 8 << 20;
/** Index bytes of filelog scans sent ahead and not yet consumed (bounds the memory they hold). */
const SCAN_AHEAD_BYTES = 32 << 20;
const CACHE_BYTES = 4 << 20;

/** verify._normpath: converted repositories may hold repeated slashes. */
export function normpath(f: string): string {
  while (f.includes('//')) f = f.replace(/\/\//g, '/');
  return f;
}

/** The VerifyOptions the store reader uses. */
export interface VerifyStoreOptions {
  cacheBytes?: number;
  workers?: number;
  scanOnMainThread?: boolean;
  streamAbove?: number;
}

/** What the store listing says verify will read. */
export interface StoreListing {
  totalBytes: number;
  totalFiles: number;
  /** data files the fncache should name (verify._verifyfiles' storefiles) */
  storefiles: Set<string>;
}

export class VerifyStore {
  private readonly encode: StorePathEncoder;
  private readonly sizes = new Map<string, number>();
  /** absolute paths from the store listing (saves encoding every name a second time) */
  private readonly paths = new Map<string, string>();
  private scans: ScanPool | undefined;
  /** The last filelog scan this thread runs itself (see scanFile). */
  private ownScan: Promise<unknown> = Promise.resolve();
  /** filelogs read by worker threads */
  workerScans = 0;

  constructor(
    private readonly loc: RepoLocation,
    private readonly opts: VerifyStoreOptions,
    private readonly reads: ReadMode,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.encode = storePathEncoder(loc.requirements);
  }

  /** Whether worker threads scan filelogs. */
  get hasWorkers(): boolean {
    return this.scans !== undefined;
  }

  /** A store file's size from the listing (undefined when it was not listed). */
  size(name: string): number | undefined {
    return this.sizes.get(name);
  }

  /** Forgets what the listing said of a revlog once it is checked (the files phase shrinks). */
  forget(radix: string): void {
    for (const name of [radix + '.i', radix + '.d']) {
      this.sizes.delete(name);
      this.paths.delete(name);
    }
  }

  /** Absolute path of a store file (latin1 byte-string name, encoded like hg's store vfs). */
  private path(name: string): string {
    const listed = this.paths.get(name);
    if (listed !== undefined) return listed;
    const enc = this.encode(name);
    let rel = enc;
    for (let i = 0; i < enc.length; i++) {
      if (enc.charCodeAt(i) >= 0x80) {
        rel = Buffer.from(enc, 'latin1').toString('utf8');
        break;
      }
    }
    return sep === '/' ? this.loc.storeDir + '/' + rel : join(this.loc.storeDir, rel);
  }

  openRevlog(radix: string): Promise<Revlog> {
    return Revlog.open(this.path(radix + '.i'), {
      name: radix,
      dataPath: this.path(radix + '.d'),
      cacheBytes: this.opts.cacheBytes ?? CACHE_BYTES,
      signal: this.signal,
      io: this.reads.io,
      indexSize: this.sizes.get(radix + '.i'),
      dataSize: this.sizes.get(radix + '.d'),
    });
  }

  /**
   * Reads the store listing into sizes/paths and starts the filelog scans. The listing (thousands
   * of objects) is garbage once this returns.
   */
  async list(): Promise<StoreListing> {
    const walked = await walkStore(this.loc, { signal: this.signal });
    let totalBytes = 0;
    let totalFiles = 0;
    const storefiles = new Set<string>();
    for (const f of walked) {
      this.sizes.set(f.name, f.size);
      this.paths.set(f.name, f.path);
      if (/\.[id]$/.test(f.name)) {
        totalBytes += f.size;
        totalFiles++;
      }
      // verify._verifyfiles: (size > 0 or not revlogv1) and f.startswith('data/')
      if (f.size > 0 && f.name.startsWith('data/')) storefiles.add(normpath(f.name));
    }
    this.startScans(walked);
    return { totalBytes, totalFiles, storefiles };
  }

  /** The scan request of a filelog (paths and sizes from the store listing). */
  private scanRequest(radix: string): FilelogScanRequest {
    return {
      radix,
      indexPath: this.path(radix + '.i'),
      dataPath: this.path(radix + '.d'),
      indexSize: this.sizes.get(radix + '.i'),
      dataSize: this.sizes.get(radix + '.d'),
    };
  }

  /**
   * Starts reading the filelogs the store holds on worker threads, in the order verify's files
   * phase will ask for them (sorted paths), while this thread checks the changelog and manifests.
   */
  private startScans(walked: readonly { name: string; size: number }[]): void {
    let bytes = 0;
    const items: ScanItem[] = [];
    for (const w of walked) {
      if (!w.name.startsWith('data/')) continue;
      bytes += w.size;
      if (!w.name.endsWith('.i')) continue;
      const f = w.name.slice(5, -2);
      items.push({ file: f, req: this.scanRequest('data/' + f), size: w.size });
    }
    const count = this.opts.workers ?? (bytes >= WORKERS_MIN_BYTES ? defaultScanWorkers() : 0);
    if (count <= 0 || items.length === 0) return;
    const script = scanWorkerScript();
    if (!script) return;
    items.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
    this.scans = new ScanPool(
      script,
      count,
      items,
      SCAN_AHEAD_BYTES,
      this.opts.cacheBytes ?? CACHE_BYTES,
      this.opts.scanOnMainThread !== false,
      this.opts.streamAbove,
    );
  }

  /** The scan of filelog f (radix data/f): from a worker when one has it, else read here. */
  async scanFile(f: string, radix: string): Promise<FilelogScan> {
    const fromWorker = this.scans?.take(f);
    if (fromWorker) {
      try {
        const scan = await fromWorker;
        this.workerScans++;
        return scan;
      } catch {
        // a worker failed (it should not): this thread reads the filelog instead
      }
    }
    const scan = (): Promise<FilelogScan> =>
      scanFilelog(this.scanRequest(radix), {
        io: this.reads.io,
        cacheBytes: this.opts.cacheBytes ?? CACHE_BYTES,
        signal: this.signal,
        streamAbove: this.opts.streamAbove,
      });
    if (!this.scans) return scan();
    // beside workers, files are in flight ahead (the files phase): this thread's own scans one at a time
    const mine = this.ownScan.then(scan, scan);
    this.ownScan = mine.catch(() => undefined);
    return mine;
  }

  /** Stops the worker threads. */
  async close(): Promise<void> {
    await this.scans?.close();
  }
}
