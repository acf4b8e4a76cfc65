// A device's reports of one task applied side by side (MQTT reports are, on PostgreSQL: a
// "received" and a "done" a few ms apart): a report read before another committed must not take
// back a finished status. Seen in CI: history pending → done → received, the task left "received".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { enrollAgent } from '../../helpers/mqtt.ts';

let t: TestBackend;
beforeAll(async () => {
  t = await startTestBackend();
});
afterAll(async () => {
  await t.stop();
});

describe('task reports applied at once', () => {
  it('a finished status stays finished when an earlier report is applied beside it', async () => {
    expect((await t.admin('POST', '/fleets', { name: 'Side by side' })).status).toBe(201);
    const agents = await Promise.all(Array.from({ length: 6 }, () => enrollAgent(t, { fleet: 'Side by side' })));
    const assigned = await t.admin('POST', '/policy-assignments', {
      policy: 'passwordMinLength',
      value: 6,
      fleet: 'Side by side',
    });
    expect(assigned.status, JSON.stringify(assigned.body)).toBe(201);
    const taskId = assigned.body.id as number;

    // Each device's "done" and its "received" applied together, the "done" started first.
    const outcomes = await Promise.all(
      agents.map((agent) =>
        Promise.allSettled([
          t.backend.deployments.report(agent.id, taskId, { status: 'done' }, 'mqtt'),
          t.backend.deployments.report(agent.id, taskId, { status: 'received' }, 'mqtt'),
        ]),
      ),
    );
    for (const [done] of outcomes) expect(done.status).toBe('fulfilled');

    const tasks = (await t.admin('GET', `/policy-assignments/${taskId}`)).body.tasks as { agent_id: number; status: string }[];
    expect(tasks.map((task) => [task.agent_id, task.status]).sort()).toEqual(agents.map((agent) => [agent.id, 'done']).sort());
  });
});
