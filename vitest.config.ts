import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts', 'test/api/**/*.test.ts', 'test/unit/**/*.test.tsx'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Every admin answer is checked against its contract schema (http/response-writer.ts).
    env: { MDM_CHECK_RESPONSES: '1' },
  },
});
