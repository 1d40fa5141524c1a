import { defineConfig } from 'vitest/config';

// Files that run last, one at a time. Those whose assertions bound throughput, latency or
// cross-process timing: on two shared cores a neighbouring file's CPU load starves their worker
// processes. And package.test.ts, whose `npm pack` rebuilds dist/, which the bench-based docs test
// imports while it runs.
const serialFiles = [
  'test/package.test.ts',
  'test/scheduler/multiprocess.test.ts',
  'test/scheduler/upstream-fleet.test.ts',
  'test/cli/serve-http.test.ts',
  'test/cli/adaptive.test.ts',
  'test/adaptive/lab.test.ts',
  'test/cli/quota-lease.test.ts',
  'test/cli/compare.test.ts',
  'test/stores/multiprocess-lease.test.ts',
  'test/stores/multiprocess.test.ts',
  'test/calendar/thresholds-multiprocess.test.ts',
  'test/bottleneck/cluster.test.ts',
  'test/bottleneck/octokit.test.ts',
];

export default defineConfig({
  test: {
    // Redis-backed files each start their own servers; two cores, so keep parallelism modest.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 20_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'parallel',
          include: ['test/**/*.test.ts'],
          exclude: serialFiles,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'serial',
          include: serialFiles,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
