// docs/haproxy.cfg, the README's example of a balancer in front of several nodes, is what
// `npm run cluster -- start` writes for three nodes with its default ports (the cluster tests run
// behind that configuration), and haproxy accepts it.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exampleConfig } from '../../../scripts/cluster.ts';

const DOC = join(import.meta.dirname, '..', '..', '..', 'docs', 'haproxy.cfg');

describe('docs/haproxy.cfg', () => {
  it('is what the cluster script writes (regenerate: node scripts/cluster.ts example-config > docs/haproxy.cfg)', () => {
    expect(readFileSync(DOC, 'utf8')).toBe(exampleConfig());
  });

  it('is a configuration haproxy accepts', () => {
    const check = spawnSync('haproxy', ['-c', '-q', '-f', DOC], { encoding: 'utf8' });
    expect(check.status, `${check.stderr}${check.stdout}`).toBe(0);
  });
});
