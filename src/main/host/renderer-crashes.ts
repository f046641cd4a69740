// What the main process does when the renderer process dies (Electron's render-process-gone):
// reload after a delay that doubles with each crash in a recent window, and give up (an error
// page instead of a reload loop) when it keeps crashing. Plain Node so it is tested without Electron.

export interface CrashPolicyOptions {
  /** delay before the first reload */
  firstDelayMs: number;
  /** no delay grows past this */
  maxDelayMs: number;
  /** crashes counted within this window (older ones are forgotten) */
  windowMs: number;
  /** the crash that makes more than this many in the window gives up */
  maxCrashes: number;
}

export const RENDERER_CRASH_POLICY: CrashPolicyOptions = {
  firstDelayMs: 500,
  maxDelayMs: 8_000,
  windowMs: 60_000,
  maxCrashes: 4,
};

export class RendererCrashPolicy {
  private crashes: number[] = [];

  constructor(
    private readonly options: CrashPolicyOptions = RENDERER_CRASH_POLICY,
    private readonly now: () => number = Date.now,
  ) {}

  /** Records a crash: the delay before reloading, or null to stop reloading and show an error. */
  crashed(): number | null {
    const t = this.now();
    this.crashes = this.crashes.filter((c) => t - c < this.options.windowMs);
    this.crashes.push(t);
    const n = this.crashes.length;
    if (n > this.options.maxCrashes) return null;
    return Math.min(this.options.maxDelayMs, this.options.firstDelayMs * 2 ** (n - 1));
  }
}

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The page shown once the policy gives up: a data: URL, so it needs nothing from the renderer build. */
export function rendererGaveUpPage(reason: string, crashes: number, windowMs: number): string {
  const html =
    '<!doctype html><meta charset="utf-8"><title>Sluice</title>' +
    '<body style="font: 14px system-ui, sans-serif; margin: 3em; max-width: 40em">' +
    '<h1 style="font-size: 1.3em">Sluice’s window stopped working</h1>' +
    `<p>Its renderer process ended ${crashes} times within ${Math.round(windowMs / 1000)} seconds ` +
    `(last reason: ${escapeHtml(reason)}), so Sluice stopped reloading it. Running transfers go on ` +
    'in the background; restart Sluice to get the window back.</p></body>';
  return `data:text/html;charset=utf-8,${encodeURIComponent(html)}`;
}
