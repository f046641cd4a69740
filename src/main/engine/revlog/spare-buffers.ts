// Build buffers of Revlogs closed (or cleared) on this thread, kept for the next ones to reuse.
//
// Verify and checkout read thousands of revlogs one after another: reusing the build buffers of
// the closed ones saves an allocation per revlog (not peak memory). SPARE_COUNT slots, largest
// first, free ones last: a fixed array, since a push and a truncation per revlog re-grew its
// backing store every time.
const SPARE_COUNT = 2;
const spare: (Buffer | undefined)[] = [undefined, undefined];
/** larger buffers are not kept: two multi-MiB buffers held per thread would raise peak memory */
const SPARE_MAX_BYTES = 1 << 20;

export function takeSpare(min: number): Buffer | undefined {
  // smallest first: the largest stays for the texts that need it
  for (let i = SPARE_COUNT - 1; i >= 0; i--) {
    const b = spare[i];
    if (b === undefined || b.length < min) continue;
    for (let j = i; j < SPARE_COUNT - 1; j++) spare[j] = spare[j + 1];
    spare[SPARE_COUNT - 1] = undefined;
    return b;
  }
  return undefined;
}

export function giveSpare(b: Buffer): void {
  if (b.length > SPARE_MAX_BYTES) return;
  // its place in the order (after those as large); the smallest falls off the end
  let i = 0;
  while (i < SPARE_COUNT && spare[i] !== undefined && spare[i]!.length >= b.length) i++;
  if (i === SPARE_COUNT) return;
  for (let j = SPARE_COUNT - 1; j > i; j--) spare[j] = spare[j - 1];
  spare[i] = b;
}
