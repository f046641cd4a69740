import { describe, expect, it } from 'vitest';
import { ProgressBar, formatDuration } from '../../../src/cli/progress-bar';

function tty(columns = 80) {
  const writes: string[] = [];
  const stream = {
    columns,
    isTTY: true,
    write: (s: string) => (writes.push(s), true),
  } as unknown as NodeJS.WriteStream;
  return { stream, writes };
}

const event = (bytes: number, etaMs?: number) => ({
  type: 'progress' as const,
  jobId: 'j',
  time: 0,
  bytes,
  files: 10,
  totalBytes: 200 << 20,
  totalFiles: 20,
  bytesPerSec: 50 << 20,
  elapsedMs: 2000,
  ...(etaMs !== undefined ? { etaMs } : {}),
});

describe('ProgressBar', () => {
  it('draws one rewritten line with percent, amounts, rate and ETA, within the terminal width', () => {
    const { stream, writes } = tty(80);
    const bar = new ProgressBar(stream);
    bar.render(event(100 << 20, 2000));
    const line = writes[0]!;
    expect(line.startsWith('\r[')).toBe(true);
    expect(line.endsWith('\x1b[K')).toBe(true);
    expect(line).toContain(' 50%');
    expect(line).toContain('100 MB/200 MB');
    expect(line).toContain('50.0 MB/s');
    expect(line).toContain('ETA 0:02');
    expect(line.replace('\x1b[K', '').length - 1).toBeLessThanOrEqual(80);
    const inner = /\[([=> ]+)\]/.exec(line)![1]!;
    expect(inner.indexOf('>')).toBeGreaterThan(inner.length * 0.4);
    expect(inner.indexOf('>')).toBeLessThan(inner.length * 0.6);
  });

  it('clears its line only when it drew one', () => {
    const { stream, writes } = tty();
    const bar = new ProgressBar(stream);
    bar.clear();
    expect(writes).toEqual([]);
    bar.render(event(0));
    bar.clear();
    expect(writes.at(-1)).toBe('\r\x1b[K');
    expect(writes[0]).not.toContain('ETA');
  });

  it('formats durations as m:ss or h:mm:ss', () => {
    expect(formatDuration(0)).toBe('0:00');
    expect(formatDuration(61_000)).toBe('1:01');
    expect(formatDuration(3_600_000 + 5_000)).toBe('1:00:05');
  });
});
