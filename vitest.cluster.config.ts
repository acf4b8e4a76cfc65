import { defineConfig } from 'vitest/config';

// The cluster suite (issue 23, item 4): each file starts a real cluster (scripts/cluster.ts: three
// `serve` nodes, PostgreSQL, Mosquitto, haproxy) shared by its tests. The files run one at a time:
// a cluster is four processes busy at once, and this machine has two cores.
export default defineConfig({
  test: {
    include: ['test/cluster/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    pool: 'forks',
    fileParallelism: false,
    env: { MDM_CHECK_RESPONSES: '1' },
  },
});
