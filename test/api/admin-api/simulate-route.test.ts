import { afterEach, describe, expect, it } from 'vitest';
import { simulateEnrollment, stopSimulatedDevices } from '../../../src-main/device/simulate.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { eventually } from '../../helpers/mqtt.ts';

let running: TestBackend | null = null;
afterEach(async () => {
  await stopSimulatedDevices();
  await running?.stop();
  running = null;
});

describe('POST /api/invitations/:id/simulate ("simulate a device")', () => {
  it('enrolls a simulated device with the invitation, and reports a refusal as an outcome', async () => {
    running = await startTestBackend({ simulate: (request) => simulateEnrollment(request) });
    const { admin } = running;
    const created = await admin('POST', '/invitations', { email: 'ada@example.com', lastname: 'Lovelace', send_email: false });
    const first = await admin('POST', `/invitations/${created.body.id}/simulate?type=apple`);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ ok: true, type: 'apple', error: null });
    expect(first.body.serial).toMatch(/^C02/);
    expect(first.body.log.at(-1)).toMatch(/^5\/5 GET PluginMdmAgent/);
    const agent = await admin('GET', `/agents/${first.body.agent_id}`);
    expect(agent.body).toMatchObject({ enroll_status: 'enrolled', email: 'ada@example.com', invitation_id: created.body.id });

    const again = await admin('POST', `/invitations/${created.body.id}/simulate`);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ ok: false, agent_id: null, error: 'This invitation has already been used' });
    expect((await admin('GET', `/invitations/${created.body.id}`)).body.log[0]).toMatchObject({ outcome: 'refused' });
  });

  it('answers 501 when no simulator was given, 404 for an unknown invitation and 400 for a bad type', async () => {
    running = await startTestBackend();
    const { admin } = running;
    const created = await admin('POST', '/invitations', { email: 'grace@example.com', send_email: false });
    expect(await admin('POST', `/invitations/${created.body.id}/simulate`)).toMatchObject({
      status: 501,
      body: { error: 'ERROR_NOT_AVAILABLE' },
    });
    expect((await admin('POST', '/invitations/999/simulate')).status).toBe(404);
    expect((await admin('POST', `/invitations/${created.body.id}/simulate?type=windows`)).status).toBe(400);
  });

  it('on a code: a made-up person in an allowed domain, or the address given (a refused domain is an outcome)', async () => {
    running = await startTestBackend({ simulate: (request) => simulateEnrollment(request) });
    const { admin } = running;
    const code = await admin('POST', '/codes', { name: 'Lobby', domains: ['example.org'] });
    const made = await admin('POST', `/codes/${code.body.id}/simulate`);
    expect(made.status).toBe(200);
    expect(made.body.email).toMatch(/^person-[0-9a-f]{6}@example\.org$/);
    expect(made.body).toMatchObject({ ok: true, error: null });
    expect((await admin('GET', `/agents/${made.body.agent_id}`)).body).toMatchObject({
      email: made.body.email,
      enrollment_code_id: code.body.id,
    });

    const refused = await admin('POST', `/codes/${code.body.id}/simulate`, { email: 'zed@elsewhere.test' });
    expect(refused.body).toMatchObject({
      ok: false,
      email: 'zed@elsewhere.test',
      error: 'Wrong email address: this code is for addresses at @example.org',
    });
    expect((await admin('GET', `/codes/${code.body.id}`)).body).toMatchObject({ uses: 1, refused_attempts: 1 });
    expect((await admin('POST', '/codes/999/simulate')).status).toBe(404);
  });

  it('a device that stays online obeys its fleet policies, in both dialects: the tasks reach done', async () => {
    running = await startTestBackend({ simulate: (request) => simulateEnrollment(request, { stayOnline: true }) });
    const { admin } = running;
    await admin('POST', '/fleets', { name: 'Staying' });
    const simulated: number[] = [];
    for (const email of ['stays-spec@example.com', 'stays-flyve@example.com']) {
      // The second invitation is for the Flyve agent (rc.7: reports its tasks over REST).
      if (email.includes('flyve')) expect((await admin('PATCH', '/settings', { agent_app: 'flyve' })).status).toBe(200);
      const invitation = await admin('POST', '/invitations', { email, fleet: 'Staying', send_email: false });
      const result = await admin('POST', `/invitations/${invitation.body.id}/simulate`);
      expect(result.body).toMatchObject({ ok: true, error: null });
      simulated.push(result.body.agent_id);
    }
    for (const id of simulated)
      await eventually(async () => (await admin('GET', `/agents/${id}`)).body.is_online === true, 20_000);

    const assigned = await admin('POST', '/policy-assignments', { policy: 'passwordMinLength', value: 6, fleet: 'Staying' });
    expect(assigned.status).toBe(201);
    const statuses = async () =>
      (await admin('GET', `/policy-assignments/${assigned.body.id}`)).body.tasks.map(
        (task: { agent_id: number; status: string }) => [task.agent_id, task.status],
      );
    await eventually(async () => (await statuses()).every(([, status]: [number, string]) => status === 'done'), 20_000);
    expect(await statuses()).toEqual(expect.arrayContaining(simulated.map((id) => [id, 'done'])));
  });
});
