import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Interop tests spawn hg and write many files; two cores here, keep contention sane.
    maxWorkers: 2,
  },
});
