import { cancelled } from '../../errors';

/** Runs work over items with up to concurrency() in flight, committing results in item order. */
export async function orderedPool<T, R>(
  items: readonly T[],
  concurrency: () => number,
  work: (item: T) => Promise<R>,
  commit: (result: R, index: number) => void | Promise<void>,
  signal?: AbortSignal,
): Promise<void> {
  const pending: (Promise<R> | undefined)[] = new Array(items.length);
  let next = 0;
  for (let i = 0; i < items.length; i++) {
    while (next < items.length && next < i + concurrency()) {
      const p = work(items[next]!);
      p.catch(() => undefined); // awaited below in order; avoid unhandled-rejection noise meanwhile
      pending[next++] = p;
    }
    if (signal?.aborted) throw cancelled();
    const r = await pending[i]!;
    pending[i] = undefined;
    await commit(r, i);
  }
}
