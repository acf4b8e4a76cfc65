// Alert rules (issue 25 item 5) over real HTTP, MQTT, SMTP and SQLite: a device silent for days
// opens one incident and sends one email and one webhook, however often the rules run; it resolves
// once when the device comes back. Rules are checked, audited, and disabling one closes its incidents
// quietly; an unreachable SMTP server is an incident that clears when the server answers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simulateEnrollment } from '../../../src-main/device/simulate.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { agentRow, closeClients, connectAgent, enrollAgent, eventually } from '../../helpers/mqtt.ts';
import { startTestSmtp, type TestSmtp } from '../../helpers/smtp.ts';
import { BROKER_MODES_UNDER_TEST, brokerReady, startMosquitto } from '../../helpers/external-brokers.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.ts';

const SECRET = 'alert-receiver-secret-42';
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

function testClock() {
  let offset = 0;
  return { now: () => Date.now() + offset, advance: (ms: number) => (offset += ms) };
}

async function evaluate(t: TestBackend) {
  const { status, body } = await t.admin('POST', '/alerts/evaluate');
  expect(status).toBe(200);
  return body as { opened: number; resolved: number };
}

async function incidents(t: TestBackend, query = '') {
  const { status, body } = await t.admin('GET', `/alerts/incidents${query}`);
  expect(status).toBe(200);
  return body.items as any[];
}

/** Notification emails queued so far (the mail worker's queue; no API lists it). */
const queuedEmails = (t: TestBackend) => (t.db.prepare(`SELECT count(*) AS n FROM notification_mails`).get() as { n: number }).n;

describe('a device silent for days', () => {
  const clock = testClock();
  let t: TestBackend;
  let smtp: TestSmtp;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    smtp = await startTestSmtp();
    receiver = await startWebhookReceiver(SECRET);
    t = await startTestBackend({ smtpUrl: smtp.url(), alerts: { now: clock.now } });
  });
  afterAll(async () => {
    await closeClients();
    await t.stop();
    await smtp.close();
    await receiver.close();
  });

  it('opens one incident, one email and one webhook, not one a minute; resolves once when it is back', async () => {
    const agent = await enrollAgent(t);
    const client = await connectAgent(t, agent);
    await eventually(async () => (await agentRow(t, agent.id)).is_online === 1);
    client.end(true);
    await eventually(async () => (await agentRow(t, agent.id)).is_online === 0);

    const { body: hook } = await t.admin('POST', '/webhooks', { url: receiver.url, secret: SECRET });
    const created = await t.admin('POST', '/alerts/rules', {
      kind: 'device_silent',
      threshold: 2,
      emails: ['Ops@Example.com'],
      webhook_ids: [hook.id],
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'Device not seen for 2 days',
      condition: 'Device not seen for 2 days',
      enabled: true,
      emails: ['ops@example.com'],
      webhook_ids: [hook.id],
      fleet_id: null,
    });
    const ruleId = created.body.id as number;

    // Seen a moment ago: nothing.
    expect(await evaluate(t)).toEqual({ opened: 0, resolved: 0 });
    expect(await incidents(t)).toEqual([]);

    // Three days later, evaluated every minute for ten minutes: one incident, one notice.
    clock.advance(3 * DAY);
    const opened: number[] = [];
    for (let minute = 0; minute < 10; minute++) {
      clock.advance(MINUTE);
      opened.push((await evaluate(t)).opened);
    }
    expect(opened.reduce((a, b) => a + b)).toBe(1);
    const open = await incidents(t, '?state=open');
    expect(open).toEqual([
      expect.objectContaining({
        rule_id: ruleId,
        subject_key: `agent:${agent.id}`,
        agent_id: agent.id,
        state: 'open',
        kind: 'device_silent',
      }),
    ]);
    expect(open[0].detail).toMatch(/^last seen \d{4}-\d\d-\d\d \d\d:\d\d UTC, 3 days ago$/);
    expect(Date.parse(open[0].last_seen_at)).toBeGreaterThan(Date.parse(open[0].opened_at));

    const [mail] = await smtp.waitFor(1);
    expect(mail!.envelope.to).toEqual(['ops@example.com']);
    expect(mail!.parsed.subject).toContain(`[MDM Console] Alert "Device not seen for 2 days": `);
    expect(mail!.parsed.subject).toContain(agent.serial);
    expect(mail!.parsed.text).toContain('last seen');
    expect(mail!.parsed.text).toContain(`${t.backend.info.admin_url}/alerts`);
    await eventually(() => receiver.received.length === 1);
    expect(receiver.received[0]!.verified).toBe(true);
    expect(receiver.received[0]!.headers['x-mdm-event']).toBe('alert.fired');
    expect(receiver.received[0]!.json.data).toMatchObject({
      state: 'firing',
      count: 1,
      open_incidents: 1,
      rule: { id: ruleId, kind: 'device_silent', threshold: 2 },
      incidents: [{ agent_id: agent.id, subject_key: `agent:${agent.id}` }],
    });
    expect(queuedEmails(t)).toBe(1);
    expect((await t.admin('GET', '/alerts/rules')).body.items[0].open_incidents).toBe(1);

    // Back online: resolved once, one resolved notice, then quiet.
    await connectAgent(t, { ...agent, password: agent.password });
    await eventually(async () => (await agentRow(t, agent.id)).is_online === 1);
    const resolved: number[] = [];
    for (let minute = 0; minute < 5; minute++) {
      clock.advance(MINUTE);
      resolved.push((await evaluate(t)).resolved);
    }
    // The online event may have triggered the evaluation that resolved it already.
    await eventually(async () => (await incidents(t, '?state=resolved')).length === 1);
    expect(resolved.reduce((a, b) => a + b)).toBeLessThanOrEqual(1);
    expect(await incidents(t, '?state=open')).toEqual([]);
    const [, resolvedMail] = await smtp.waitFor(2);
    expect(resolvedMail!.parsed.subject).toContain('[MDM Console] Resolved: alert "Device not seen for 2 days"');
    await eventually(() => receiver.received.length === 2);
    expect(receiver.received[1]!.json.data).toMatchObject({ state: 'resolved', count: 1, open_incidents: 0 });
    expect(receiver.received[1]!.headers['x-mdm-event']).toBe('alert.resolved');
    for (let minute = 0; minute < 3; minute++) {
      clock.advance(MINUTE);
      await evaluate(t);
    }
    expect(queuedEmails(t)).toBe(2);
    await t.backend.alerts.worker.settled();
    expect(receiver.received).toHaveLength(2);
    expect(smtp.received).toHaveLength(2);

    const events = (await t.admin('GET', '/events?limit=200')).body.items as any[];
    expect(events.filter((e) => e.type === 'alert.fired')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'alert.resolved')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'mail.notification_sent')).toHaveLength(2);
  });
});

describe('alert rules', () => {
  let t: TestBackend;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await startWebhookReceiver(SECRET);
    t = await startTestBackend();
  });
  afterAll(async () => {
    await t.stop();
    await receiver.close();
  });

  it('refuses bad input with a clear 400 or 404, and changes nothing', async () => {
    const cases: [unknown, number, RegExp][] = [
      [{ kind: 'device_gone' }, 400, /kind/],
      [{ kind: 'task_failed', threshold: 3 }, 400, /takes no threshold/],
      [{ kind: 'device_silent', threshold: 400 }, 400, /at most 365 days/],
      [{ kind: 'device_silent', emails: ['not-an-address'] }, 400, /Not an email address: not-an-address/],
      [{ kind: 'device_silent', webhook_ids: [77] }, 400, /No webhook #77/],
      [{ kind: 'device_silent', fleet_id: 555 }, 404, /Fleet not found/],
      [{ kind: 'device_silent', surprise: 1 }, 400, /surprise|additional/],
    ];
    for (const [body, status, message] of cases) {
      const answer = await t.admin('POST', '/alerts/rules', body);
      expect(answer.status, JSON.stringify(body)).toBe(status);
      expect(answer.body.message, JSON.stringify(body)).toMatch(message);
    }
    expect((await t.admin('GET', '/alerts/rules')).body.items).toEqual([]);
    expect((await t.admin('PATCH', '/alerts/rules/4', { enabled: false })).status).toBe(404);
    expect((await t.admin('DELETE', '/alerts/rules/4')).status).toBe(404);
  });

  it('an invitation about to expire unused: fires at once, resolves when revoked; every change is audited; disabling closes quietly', async () => {
    const { body: hook } = await t.admin('POST', '/webhooks', { url: receiver.url, secret: SECRET });
    const fleet = (await t.admin('POST', '/fleets', { name: 'Field team' })).body;
    const invited = await t.admin('POST', '/invitations', {
      email: 'late@example.com',
      fleet: 'Field team',
      days: 1,
      send_email: false,
    });
    expect(invited.status).toBe(201);
    const rule = (
      await t.admin('POST', '/alerts/rules', {
        kind: 'invitation_expiring',
        threshold: 48,
        fleet_id: fleet.id,
        webhook_ids: [hook.id],
      })
    ).body;
    expect(rule).toMatchObject({ name: 'Invitation expiring within 48 hours, unused (Field team)', fleet_name: 'Field team' });
    await eventually(async () => (await incidents(t, '?state=open')).length === 1);
    const [incident] = await incidents(t, '?state=open');
    expect(incident).toMatchObject({ subject: 'Invitation of late@example.com', subject_key: `invitation:${invited.body.id}` });
    expect(incident.detail).toMatch(/^expires .* \(in \d+ hours\), not used yet$/);

    expect((await t.admin('POST', `/invitations/${invited.body.id}/revoke`)).status).toBe(200);
    await eventually(async () => (await incidents(t, '?state=resolved')).length === 1);
    await eventually(() => receiver.received.length === 2);
    expect(receiver.received.map((r) => r.headers['x-mdm-event'])).toEqual(['alert.fired', 'alert.resolved']);

    // A second invitation fires again; disabling the rule closes that incident without a notice.
    await t.admin('POST', '/invitations', { email: 'later@example.com', fleet: 'Field team', days: 1, send_email: false });
    await eventually(async () => (await incidents(t, '?state=open')).length === 1);
    await eventually(() => receiver.received.length === 3);
    const disabled = await t.admin('PATCH', `/alerts/rules/${rule.id}`, { enabled: false });
    expect(disabled.body).toMatchObject({ enabled: false, open_incidents: 0 });
    await evaluate(t);
    await t.backend.alerts.worker.settled();
    expect(receiver.received).toHaveLength(3);
    expect(await incidents(t, '?state=open')).toEqual([]);

    expect((await t.admin('DELETE', `/alerts/rules/${rule.id}`)).status).toBe(200);
    const audit = (await t.admin('GET', '/audit?limit=100')).body.items as any[];
    const actions = audit.filter((e) => e.action.startsWith('alert.')).map((e) => e.action);
    expect(actions.sort()).toEqual(['alert.rule_created', 'alert.rule_deleted', 'alert.rule_updated']);
    const update = audit.find((e) => e.action === 'alert.rule_updated');
    expect(update).toMatchObject({
      target_kind: 'alert',
      target_id: rule.id,
      changes: { enabled: { before: true, after: false } },
    });
    // The server's own notices are not anybody's action.
    expect(audit.some((e) => e.action === 'alert.fired' || e.action.startsWith('webhook.deliver'))).toBe(false);
  });
});

describe('a failed task, compliance and approval', () => {
  const clock = testClock();
  let t: TestBackend;
  beforeAll(async () => {
    t = await startTestBackend({ alerts: { now: clock.now }, simulate: (request) => simulateEnrollment(request) });
  });
  afterAll(async () => {
    await closeClients();
    await t.stop();
  });

  it('a task reported failed over MQTT opens a task incident and a compliance one; the deployment removed, both resolve', async () => {
    const agent = await enrollAgent(t);
    const upload = await fetch(`${t.backend.info.admin_url}/api/files?name=config.txt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/octet-stream' },
      body: Buffer.from('setting=1'),
    });
    const file = (await upload.json()) as { id: number };
    const deployed = (await t.admin('POST', '/deployments', { kind: 'file', item_id: file.id, agent_id: agent.id })).body;
    const task = await t.admin('POST', '/alerts/rules', { kind: 'task_failed' });
    const compliance = await t.admin('POST', '/alerts/rules', { kind: 'compliance_lost' });
    expect(await evaluate(t)).toEqual({ opened: 0, resolved: 0 });

    const client = await connectAgent(t, agent);
    const report = (body: object) =>
      client.publishAsync(`${agent.topic}/Status/Task/${deployed.id}`, JSON.stringify(body), { qos: 1 });
    await report({ status: 'failed', reason: 'no space left' });
    await eventually(async () => (await incidents(t, '?state=open')).length === 2);
    const open = await incidents(t, '?state=open');
    const taskIncident = open.find((i) => i.rule_id === task.body.id);
    expect(taskIncident).toMatchObject({ agent_id: agent.id, subject: `config.txt on ${agent.record.name}` });
    expect(taskIncident.detail).toMatch(/^deployFile failed: no space left/);
    expect(open.find((i) => i.rule_id === compliance.body.id)).toMatchObject({
      subject_key: `agent:${agent.id}`,
      detail: '1 policy failed or incompatible',
    });

    // Evaluated every minute: still one incident each, no new ones.
    for (let minute = 0; minute < 3; minute++) {
      clock.advance(MINUTE);
      expect(await evaluate(t)).toEqual({ opened: 0, resolved: 0 });
    }
    // The admin removes the failing deployment: its task is canceled, the device compliant again.
    expect((await t.admin('DELETE', `/deployments/${deployed.id}`)).status).toBe(200);
    await eventually(async () => (await incidents(t, '?state=open')).length === 0);
    expect(await incidents(t, '?state=resolved')).toHaveLength(2);
    await t.admin('DELETE', `/alerts/rules/${task.body.id}`);
    await t.admin('DELETE', `/alerts/rules/${compliance.body.id}`);
  });

  it('a device waiting for approval for more than N hours; approved, it resolves', async () => {
    const code = await t.admin('POST', '/codes', { name: 'Front desk', domains: ['example.com'], approval: 'manual' });
    expect(code.status).toBe(201);
    const simulated = await t.admin('POST', `/codes/${code.body.id}/simulate`, {});
    expect(simulated.body.ok).toBe(true);
    const agentId = simulated.body.agent_id as number;
    const rule = (await t.admin('POST', '/alerts/rules', { kind: 'approval_waiting', threshold: 2 })).body;
    expect(rule.name).toBe('Device waiting for approval for 2 hours');
    expect(await evaluate(t)).toEqual({ opened: 0, resolved: 0 });
    clock.advance(3 * 60 * MINUTE);
    expect(await evaluate(t)).toEqual({ opened: 1, resolved: 0 });
    const [incident] = await incidents(t, '?state=open');
    expect(incident).toMatchObject({ agent_id: agentId, subject_key: `agent:${agentId}` });
    expect(incident.detail).toMatch(/^waiting for approval since .* \(3 hours\)$/);

    expect((await t.admin('POST', `/agents/${agentId}/approve`)).status).toBe(200);
    await eventually(async () => (await incidents(t, `?state=open&rule_id=${rule.id}`)).length === 0);
    expect((await incidents(t, `?state=resolved&rule_id=${rule.id}`)).map((i) => i.agent_id)).toEqual([agentId]);
  });
});

describe('the SMTP server unreachable', () => {
  it('is an incident while nothing answers on its port, resolved once it does', async () => {
    const probe = await startTestSmtp();
    const port = probe.port;
    await probe.close();
    const receiver = await startWebhookReceiver(SECRET);
    const t = await startTestBackend({ smtpUrl: `smtp://127.0.0.1:${port}` });
    let smtp: TestSmtp | undefined;
    try {
      const { body: hook } = await t.admin('POST', '/webhooks', { url: receiver.url, secret: SECRET });
      await t.admin('POST', '/alerts/rules', { kind: 'smtp_unreachable', webhook_ids: [hook.id] });
      await evaluate(t);
      const [incident] = await incidents(t, '?state=open');
      expect(incident).toMatchObject({ subject_key: 'smtp', subject: 'SMTP server' });
      expect(incident.detail).toBe(`cannot connect to 127.0.0.1:${port}: ECONNREFUSED`);

      smtp = await startTestSmtp({ port });
      await evaluate(t);
      expect(await incidents(t, '?state=open')).toEqual([]);
      await eventually(() => receiver.received.length === 2);
      expect(receiver.received.map((r) => r.json.data.state)).toEqual(['firing', 'resolved']);
    } finally {
      await t.stop();
      await receiver.close();
      await smtp?.close();
    }
  });
});

describe.runIf(BROKER_MODES_UNDER_TEST.includes('mosquitto'))('the MQTT broker unreachable', () => {
  it('an external broker down is one incident while the server retries; it resolves once connected', async () => {
    const mosquitto = await startMosquitto({ notYet: true });
    const receiver = await startWebhookReceiver(SECRET);
    const t = await startTestBackend({ mqttBroker: 'mosquitto', mqttBrokerUrl: mosquitto.adminUrl });
    try {
      await eventually(() => t.backend.broker.status().problem?.includes('ECONNREFUSED'));
      const { body: hook } = await t.admin('POST', '/webhooks', { url: receiver.url, secret: SECRET });
      await t.admin('POST', '/alerts/rules', { kind: 'broker_unreachable', webhook_ids: [hook.id] });
      await eventually(async () => (await incidents(t, '?state=open')).length === 1);
      const [incident] = await incidents(t, '?state=open');
      expect(incident).toMatchObject({ subject_key: 'broker', subject: 'MQTT broker' });
      expect(incident.detail).toContain('ECONNREFUSED');
      await evaluate(t);
      expect(await incidents(t)).toHaveLength(1);

      await mosquitto.restart();
      await brokerReady(t.backend);
      await eventually(async () => (await incidents(t, '?state=resolved')).length === 1);
      await eventually(() => receiver.received.length === 2);
      expect(receiver.received.map((r) => r.json.data.state)).toEqual(['firing', 'resolved']);
    } finally {
      await t.stop();
      await receiver.close();
      await mosquitto.destroy();
    }
  });
});
