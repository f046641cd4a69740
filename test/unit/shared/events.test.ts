import { describe, expect, it } from 'vitest';
import { formatHgBytes, transferredLine } from '../../../src/shared/events';

describe('formatHgBytes', () => {
  it("follows hg's util.bytecount: three significant digits per unit, whole bytes below 1 KB", () => {
    expect(formatHgBytes(0)).toBe('0 bytes');
    expect(formatHgBytes(1023)).toBe('1023 bytes');
    expect(formatHgBytes(15.748)).toBe('16 bytes');
    expect(formatHgBytes(1024)).toBe('1.00 KB');
    expect(formatHgBytes(10 * 1024)).toBe('10.0 KB');
    expect(formatHgBytes(300_000)).toBe('293 KB');
    expect(formatHgBytes(58.2 * 2 ** 20)).toBe('58.2 MB');
    expect(formatHgBytes(3 * 2 ** 30)).toBe('3.00 GB');
  });
});

describe('transferredLine', () => {
  it('rounds a rate below 1 KB/sec to whole bytes and never divides by a zero wall time', () => {
    expect(transferredLine(4, 254)).toBe('transferred 4 bytes in 0.3 seconds (16 bytes/sec)');
    expect(transferredLine(1, 0)).toBe('transferred 1 bytes in 0.0 seconds (1000 bytes/sec)');
  });
});
