import { describe, expect, it } from 'vitest';
import {
  RENDERER_CRASH_POLICY,
  RendererCrashPolicy,
  rendererGaveUpPage,
} from '../../../src/main/host/renderer-crashes';

describe('RendererCrashPolicy', () => {
  const options = { firstDelayMs: 500, maxDelayMs: 4_000, windowMs: 60_000, maxCrashes: 5 };

  it('reloads after doubling delays, capped, and gives up past maxCrashes in the window', () => {
    let t = 0;
    const policy = new RendererCrashPolicy(options, () => t);
    const delays = [1, 2, 3, 4, 5, 6].map(() => {
      t += 1_000;
      return policy.crashed();
    });
    expect(delays).toEqual([500, 1_000, 2_000, 4_000, 4_000, null]);
  });

  it('forgets crashes older than the window: an occasional crash reloads quickly', () => {
    let t = 0;
    const policy = new RendererCrashPolicy(options, () => t);
    for (let i = 0; i < 10; i++) {
      expect(policy.crashed()).toBe(500);
      t += 61_000;
    }
  });

  it('the default gives up within a minute of crash-looping', () => {
    let t = 0;
    const policy = new RendererCrashPolicy(undefined, () => t);
    let reloads = 0;
    let delay: number | null;
    while ((delay = policy.crashed()) !== null) {
      reloads++;
      t += delay + 100; // the reload, then the next crash right away
    }
    expect(reloads).toBe(RENDERER_CRASH_POLICY.maxCrashes);
    expect(t).toBeLessThan(RENDERER_CRASH_POLICY.windowMs);
  });

  it('the error page is a data: URL that says why, with the reason escaped', () => {
    const url = rendererGaveUpPage('<oom>', 5, 60_000);
    expect(url.startsWith('data:text/html;charset=utf-8,')).toBe(true);
    const html = decodeURIComponent(url.slice(url.indexOf(',') + 1));
    expect(html).toContain('ended 5 times within 60 seconds');
    expect(html).toContain('&#60;oom&#62;');
    expect(html).not.toContain('<oom>');
  });
});
