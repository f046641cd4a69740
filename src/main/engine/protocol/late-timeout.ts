// An idle timeout that does not blame the peer for the reader's own stall. libuv runs due timers
// before it polls for I/O, so when the process itself was held up (a busy machine, a long GC, a
// laptop asleep) past an idle timeout, the timer fires ahead of the bytes that arrived meanwhile.
// The decision waits for the next check phase (setImmediate: after that poll) and fails only if
// nothing arrived by then; on time it costs one turn of the loop.

/** Calls `fail` after the next I/O poll unless `progress()` (bytes read, say) has moved by then. */
export function failUnlessProgress(progress: () => number, fail: () => void): void {
  const before = progress();
  setImmediate(() => {
    if (progress() === before) fail();
  });
}
