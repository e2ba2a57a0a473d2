import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Process tests start real clusters on two shared cores: be generous, every wait inside has its own bound.
    testTimeout: 180_000,
    hookTimeout: 180_000,
    pool: 'forks',
    // Two cores: the simulator files and the process tests share them.
    maxWorkers: 2,
  },
});
