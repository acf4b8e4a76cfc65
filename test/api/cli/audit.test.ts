// `audit` from the CLI (issue 22, items 4 and 6): the filtered trail with what changed, and
// `--format csv|jsonl` streaming every matching entry to stdout. A real `serve`, each command its own process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServe, type RunningServe } from '../../helpers/cli.ts';

let serve: RunningServe;

beforeAll(async () => {
  serve = await startServe('mdm-cli-audit-', { untilBanner: true });
});
afterAll(() => serve?.stop('SIGKILL'));

const cli = (args: string[]) => runCli(serve.dataDir, args);

describe('cli audit', { timeout: 120_000 }, () => {
  it('lists who did what with the fields changed, and exports CSV or JSON lines with the same filters', async () => {
    expect((await cli(['invite', '--email', 'ana@example.com', '--no-email'])).code).toBe(0);
    expect((await cli(['invite', '--email', '=evil@example.com', '--no-email'])).code).toBe(0);
    const list = await cli(['audit', '--action', 'invitation.created', '--target', 'ana@']);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain('invitation.created');
    expect(list.stdout).toContain('ana@example.com');
    expect(list.stdout).not.toContain('evil@');

    const csv = await cli(['audit', '--format', 'csv', '--action', 'invitation.created']);
    expect(csv.code, csv.stderr).toBe(0);
    const lines = csv.stdout.trimEnd().split('\r\n');
    expect(lines[0]).toMatch(/^id,at,actor,/);
    expect(lines).toHaveLength(3);
    expect(lines[1]).toContain(",'=evil@example.com,");

    const jsonl = await cli(['audit', '--format', 'jsonl', '--target', 'ana@']);
    expect(jsonl.code, jsonl.stderr).toBe(0);
    const entries = jsonl.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { action: string; target_name: string });
    expect(entries.map((e) => [e.action, e.target_name])).toEqual([['invitation.created', 'ana@example.com']]);

    const bad = await cli(['audit', '--format', 'xml']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('--format must be csv or jsonl');
  });
});
