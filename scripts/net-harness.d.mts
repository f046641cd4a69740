// Types of net-harness.mjs (plain JavaScript for the bench; see there).

export function freePort(): Promise<number>;
export function waitForHttp(url: string, timeoutMs?: number): Promise<void>;
