// The CLI's alerts and webhooks (issue 25 item 5): a real `serve`, a real HTTP receiver, each
// command its own process: webhook add (secret drawn and printed once), test (delivered, signed),
// log; alert add|disable|enable|rm; alerts; with --json; bad input is a clear error.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServe, type RunningServe } from '../../helpers/cli.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.ts';

const SECRET = 'cli-receiver-secret-0042';
let serve: RunningServe;
let receiver: WebhookReceiver;

beforeAll(async () => {
  serve = await startServe('mdm-cli-alerts-');
  receiver = await startWebhookReceiver(SECRET);
});
afterAll(async () => {
  serve?.stop('SIGKILL');
  await receiver?.close();
});

const cli = (args: string[]) => runCli(serve.dataDir, args);

describe('alerts and webhooks from the CLI', { timeout: 120_000 }, () => {
  it('adds a webhook, sends it a test event, shows its log; adds, disables, enables and removes a rule', async () => {
    const refused = await cli(['webhook', 'add', 'ftp://example.com/in', '--secret', SECRET]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('http:// or https://');

    const added = await cli(['webhook', 'add', receiver.url, '--secret', SECRET, '--name', 'Ops', '--json']);
    expect(added.code, added.stderr).toBe(0);
    const hook = JSON.parse(added.stdout);
    expect(hook).toMatchObject({ name: 'Ops', url: receiver.url, secret_hint: '…0042', enabled: true });
    expect(added.stdout).not.toContain(SECRET);

    const tested = await cli(['webhook', 'test', String(hook.id)]);
    expect(tested.code, tested.stderr + tested.stdout).toBe(0);
    expect(tested.stdout).toMatch(/Test event: #\d+ .* webhook\.test {2}delivered {2}attempt 1\/8 {2}HTTP 200/);
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0]!.verified).toBe(true);

    const log = await cli(['webhook', 'log', String(hook.id), '--json']);
    expect(JSON.parse(log.stdout)).toEqual([
      expect.objectContaining({ event: 'webhook.test', state: 'delivered', response_code: 200 }),
    ]);

    const drawn = await cli(['webhook', 'add', 'https://hooks.example.com/in']);
    expect(drawn.code, drawn.stderr).toBe(0);
    expect(drawn.stdout).toMatch(/shown this once[^\n]*\n {2}[A-Za-z0-9_-]{32}\n/);

    const wrongUnit = await cli(['alert', 'add', 'device_silent', '--hours', '4']);
    expect(wrongUnit.code).not.toBe(0);
    expect(wrongUnit.stderr).toContain('device_silent takes --days, not --hours');
    const unknown = await cli(['alert', 'add', 'device_gone']);
    expect(unknown.stderr).toContain('alert add needs a kind');

    const rule = await cli([
      'alert',
      'add',
      'device_silent',
      '--days',
      '3',
      '--email',
      'ops@example.com',
      '--webhook',
      String(hook.id),
    ]);
    expect(rule.code, rule.stderr).toBe(0);
    expect(rule.stdout).toContain('Device not seen for 3 days');
    expect(rule.stdout).toContain(`ops@example.com, webhook #${hook.id}`);
    const ruleId = /#(\d+)/.exec(rule.stdout)![1]!;

    const disabled = await cli(['alert', 'disable', ruleId]);
    expect(disabled.stdout).toContain('disabled');
    const listed = await cli(['alerts', '--json']);
    expect(JSON.parse(listed.stdout)).toMatchObject({ rules: [{ id: Number(ruleId), enabled: false }], incidents: [] });
    expect((await cli(['alert', 'enable', ruleId])).stdout).toContain('enabled');
    expect((await cli(['alerts'])).stdout).toMatch(/Rules:\n#\d+ {2}enabled +Device not seen for 3 days/);
    const webhooks = await cli(['webhooks']);
    expect(webhooks.stdout).toContain(`rules #${ruleId}`);
    expect(webhooks.stdout).toMatch(/last: #\d+ .* delivered/);

    expect((await cli(['alert', 'rm', ruleId])).stdout).toContain('deleted');
    expect((await cli(['webhook', 'rm', String(hook.id)])).stdout).toContain('deleted');
    expect(JSON.parse((await cli(['alerts', '--json'])).stdout).rules).toEqual([]);
  });
});
