import { describe, expect, it } from 'vitest';
import { LOG_PAGE_LINES, LogPages } from '../../../../src/renderer/src/store/job-log';
import type { JobLogPage } from '../../../../src/shared/ipc';

/** A host log of `total` lines `line i`, answering pages like job:log. */
function hostLog(total: number, query = '') {
  const requests: number[] = [];
  const lines = Array.from({ length: total }, (_, i) => `line ${i}`);
  const fetch = async (from: number, count: number): Promise<JobLogPage> => {
    requests.push(from);
    const view = query ? lines.filter((l) => l.includes(query)) : lines;
    return {
      from,
      lines: view.slice(from, from + count),
      total: lines.length,
      dropped: 0,
      ...(query ? { matches: view.length } : {}),
    };
  };
  return { lines, requests, fetch };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe('LogPages', () => {
  it('fetches only the pages on screen, once, and learns the counts from the host', async () => {
    const log = hostLog(1000);
    let changes = 0;
    const pages = new LogPages(log.fetch, () => changes++);
    expect(pages.loaded).toBe(false);
    pages.ensure(0, 1);
    pages.ensure(0, 1);
    await settle();
    expect(log.requests).toEqual([0]);
    expect(pages).toMatchObject({ loaded: true, length: 1000, total: 1000 });
    expect(pages.line(5)).toBe('line 5');
    expect(pages.line(LOG_PAGE_LINES)).toBeUndefined();
    pages.ensure(390, 430);
    await settle();
    expect(log.requests).toEqual([0, 200, 400]);
    expect(pages.line(420)).toBe('line 420');
    expect(changes).toBe(3);
  });

  it('refetches the page that was still filling up when the live log grows', async () => {
    const log = hostLog(250);
    const pages = new LogPages(log.fetch, () => {});
    pages.ensure(0, 250);
    await settle();
    expect(pages.line(249)).toBe('line 249');
    for (let i = 250; i < 300; i++) log.lines.push(`line ${i}`);
    pages.grow(300, 0);
    expect(pages.length).toBe(300);
    expect(pages.line(100)).toBe('line 100'); // a full page stays
    expect(pages.line(260)).toBeUndefined();
    pages.ensure(200, 300);
    await settle();
    expect(pages.line(299)).toBe('line 299');
  });

  it('shows the matches of a query, counted by the host', async () => {
    const log = hostLog(1000, '7');
    const pages = new LogPages(log.fetch, () => {}, true);
    pages.ensure(0, 1);
    await settle();
    const expected = log.lines.filter((l) => l.includes('7'));
    expect(pages.length).toBe(expected.length);
    expect(pages.total).toBe(1000);
    expect(pages.line(0)).toBe(expected[0]);
  });

  it('ignores answers that arrive after it was disposed', async () => {
    const log = hostLog(10);
    let changes = 0;
    const pages = new LogPages(log.fetch, () => changes++);
    pages.ensure(0, 10);
    pages.dispose();
    await settle();
    expect(changes).toBe(0);
  });
});
