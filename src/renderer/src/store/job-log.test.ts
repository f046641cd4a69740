import { describe, expect, it } from 'vitest';
import { JobLog, LogFilter } from './job-log';

describe('LogFilter', () => {
  it('filters case-insensitively and only scans new lines as the log grows', () => {
    const log = new JobLog(1000);
    log.appendMany(['adding [s] data/Foo.i (1 bytes)', 'adding [s] data/bar.i (2 bytes)']);
    const f = new LogFilter(log);
    expect(f.update('')).toBeNull();
    expect([...f.update('FOO')!]).toEqual([0]);
    log.append('adding [s] data/foo.d (3 bytes)');
    expect([...f.update('foo')!]).toEqual([0, 2]);
    expect([...f.update('bar')!]).toEqual([1]);
  });

  it('rescans after the head of the log was dropped', () => {
    const log = new JobLog(10);
    const f = new LogFilter(log);
    for (let i = 0; i < 10; i++) log.append(i % 2 ? `odd ${i}` : `even ${i}`);
    expect(f.update('odd')!.length).toBe(5);
    log.append('odd 10');
    // cap 10: 11 lines -> 1 + 1 dropped (a tenth of the cap at once)
    expect(log.dropped).toBe(2);
    const m = f.update('odd')!;
    expect(m.map((i) => log.line(i))).toEqual(['odd 3', 'odd 5', 'odd 7', 'odd 9', 'odd 10']);
  });
});
