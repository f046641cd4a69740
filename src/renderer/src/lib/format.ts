// Human formatting of sizes, rates and durations for the UI (binary units, like hg's bytecount, but
// with the IEC spelling people read on screen).

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

export function formatBytes(n: number): string {
  if (!Number.isFinite(n) || n < 0) return '–';
  if (n < 1024) return `${Math.round(n)} B`;
  let v = n;
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ${UNITS[u]}`;
}

export function formatRate(bytesPerSec: number | undefined): string {
  if (bytesPerSec === undefined || !Number.isFinite(bytesPerSec)) return '–';
  return `${formatBytes(bytesPerSec)}/s`;
}

export function formatCount(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

export function formatFilesRate(filesPerSec: number | undefined): string {
  if (filesPerSec === undefined || !Number.isFinite(filesPerSec)) return '–';
  if (filesPerSec >= 100) return `${formatCount(filesPerSec)} files/s`;
  return `${filesPerSec.toFixed(filesPerSec >= 10 ? 0 : 1)} files/s`;
}

/** 0:07, 1:05, 1:02:03 — compact clock for elapsed and ETA. */
export function formatClock(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms) || ms < 0) return '–';
  const total = Math.round(ms / 1000);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const ss = String(s).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

/** 850 ms, 1.24 s, 12.5 s, 2 min 5 s — for measured timings. */
export function formatDuration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 10_000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(ms / 60_000);
  return `${m} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function formatPercent(fraction: number): string {
  if (!Number.isFinite(fraction)) return '–';
  return `${Math.floor(Math.max(0, Math.min(1, fraction)) * 100)} %`;
}

export function formatTimestamp(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/**
 * MiB/s: the app's one unit for rates (Transfers, History and Comparisons alike, as formatRate
 * prints them); hg's own "MB" (formatHgBytes) appears only where hg is quoted.
 */
export function mebibytesPerSec(bytes: number, wallMs: number): number {
  return wallMs > 0 ? bytes / 1048576 / (wallMs / 1000) : 0;
}
