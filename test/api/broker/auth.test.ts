// MQTT logins: serial + the latest mqttpasswd, over 3.1 and 3.1.1, with mqtt.js and mosquitto clients.
import { describe, expect, it } from 'vitest';
import { ENROLL_STATUS } from '../../../src-main/backend/agents/status.ts';
import type { TestBackend } from '../../helpers/backend.ts';
import {
  agentRow,
  connectAgent,
  enrollAgent,
  inbox,
  mosquittoLogin,
  nextEvent,
  ofAgent,
  readRecord,
  refusalCode,
  run,
  useBrokerBackend,
} from '../../helpers/mqtt.ts';

let t: TestBackend;

useBrokerBackend((backend) => {
  t = backend;
});

describe('MQTT login with mqtt.js', () => {
  it('accepts the serial and the issued mqttpasswd over MQTT 3.1.1 and 3.1', async () => {
    const agent = await enrollAgent(t);
    expect(agent.record.port).toBe(t.backend.info.mqtt_port);
    expect(agent.record.tls).toBe(0);
    const v311 = await connectAgent(t, agent, { protocolVersion: 4 });
    expect(v311.connected).toBe(true);
    await v311.endAsync();
    const v31 = await connectAgent(t, agent, { protocolVersion: 3, protocolId: 'MQIsdp' });
    expect(v31.connected).toBe(true);
    await v31.endAsync();
    // A UUID as client id is longer than MQTT 3.1's 23 characters; accepted all the same.
    const uuidId = await connectAgent(t, agent, { protocolVersion: 3, protocolId: 'MQIsdp', clientId: crypto.randomUUID() });
    expect(uuidId.connected).toBe(true);
  });

  it('refuses a wrong password and an unknown serial in the CONNACK (4), and records it', async () => {
    const agent = await enrollAgent(t);
    const refused = nextEvent(t, (e) => e.type === 'mqtt.login_refused' && e.agent_id === agent.id);
    expect(await refusalCode(t, { serial: agent.serial, password: 'not-the-password' })).toBe(4);
    expect((await refused).message).toContain('wrong password');
    expect(await refusalCode(t, { serial: 'NO-SUCH-SERIAL', password: agent.password })).toBe(4);
    expect(await refusalCode(t, { serial: agent.serial, password: '' })).toBe(4);
    // The right credentials still work afterwards.
    expect((await connectAgent(t, agent)).connected).toBe(true);
  });

  it('accepts only the mqttpasswd issued last', async () => {
    const agent = await enrollAgent(t);
    const again = await readRecord(t, agent.session, agent.id);
    expect(again.password).not.toBe(agent.password);
    expect(await refusalCode(t, agent)).toBe(4);
    expect((await connectAgent(t, { serial: agent.serial, password: again.password })).connected).toBe(true);
  });

  it('refuses an agent that is no longer enrolled (5, not authorized)', async () => {
    const agent = await enrollAgent(t);
    const client = await connectAgent(t, agent);
    const box = inbox(client);
    await client.subscribeAsync(`${agent.topic}/#`);
    const sent = await t.admin('POST', `/agents/${agent.id}/commands`, { command: 'unenroll' });
    expect(sent.status).toBe(202);
    await box.next((m) => m.topic === `${agent.topic}/Command/Unenroll`);
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    const unenrolled = nextEvent(t, ofAgent(agent.id, 'agent.unenrolled'));
    await client.publishAsync(`${agent.topic}/Status/Unenroll`, JSON.stringify({ unenroll: 'unenrolled' }), { qos: 1 });
    await unenrolled;
    await closed; // the broker lets only enrolled agents stay
    expect((await agentRow(t, agent.id)).enroll_status).toBe('unenrolled');
    expect(await refusalCode(t, agent)).toBe(5);
  });

  it('lets a second connection with the same client id replace the first, the agent staying online', async () => {
    const agent = await enrollAgent(t);
    const online = nextEvent(t, ofAgent(agent.id, 'agent.online'));
    const first = await connectAgent(t, agent, {
      clientId: 'same-id',
      will: { topic: `${agent.topic}/Status/Online`, payload: Buffer.from('{"online":false}'), qos: 1, retain: true },
    });
    await online;
    const offline: string[] = [];
    const stop = t.backend.services.events.subscribe((e) => {
      if (ofAgent(agent.id, 'agent.offline')(e)) offline.push(e.message);
    });
    const firstClosed = new Promise<void>((resolve) => first.once('close', () => resolve()));
    const second = await connectAgent(t, agent, { clientId: 'same-id' });
    await firstClosed;
    // The replaced connection's will does not contradict the live one.
    await second.publishAsync(`${agent.topic}/Status/Online`, '{"online":true}', { qos: 1, retain: true });
    stop();
    expect(offline).toEqual([]);
    expect((await agentRow(t, agent.id)).is_online).toBe(1);
  });

  it("never lets one agent's client id take over another agent's connection", async () => {
    const a = await enrollAgent(t);
    const b = await enrollAgent(t);
    const clientA = await connectAgent(t, a, { clientId: 'shared-device-id' });
    let aClosed = false;
    clientA.once('close', () => (aClosed = true));
    const clientB = await connectAgent(t, b, { clientId: 'shared-device-id' });
    // Round trips on both: A is still connected after B's CONNACK.
    await clientB.publishAsync(`${b.topic}/Status/Hello`, 'b', { qos: 1 });
    await clientA.publishAsync(`${a.topic}/Status/Hello`, 'a', { qos: 1 });
    expect(aClosed).toBe(false);
    expect(t.backend.broker.status().connected_agents).toBeGreaterThanOrEqual(2);
  });
});

describe("MQTT login with Debian's mosquitto clients", () => {
  it('logs in over 3.1.1 and 3.1 and receives its retained command', async () => {
    const agent = await enrollAgent(t);
    expect((await t.admin('POST', `/agents/${agent.id}/commands`, { command: 'lock' })).status).toBe(202);
    for (const version of ['mqttv311', 'mqttv31']) {
      const result = await run('mosquitto_sub', [
        ...mosquittoLogin(t, agent),
        '-V',
        version,
        '-i',
        `sub-${version}`,
        '-t',
        `${agent.topic}/#`,
        '-v',
        '-C',
        '2',
        '-W',
        '15',
      ]);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      // Beside the retained Command/Subscribe every agent finds (its fleet topic).
      expect(result.stdout.trim().split('\n').sort()).toEqual([
        `${agent.topic}/Command/Lock {"lock":"now"}`,
        `${agent.topic}/Command/Subscribe {"subscribe":[{"topic":"/1/fleet/1"}]}`,
      ]);
    }
  });

  it('is refused with a wrong password or an unknown serial', async () => {
    const agent = await enrollAgent(t);
    const wrong = await run('mosquitto_pub', [
      ...mosquittoLogin(t, { serial: agent.serial, password: 'wrong' }),
      '-t',
      `${agent.topic}/Status/X`,
      '-m',
      'x',
    ]);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toMatch(/bad user name or password/i);
    const unknown = await run('mosquitto_pub', [
      ...mosquittoLogin(t, { serial: 'UNKNOWN1', password: agent.password }),
      '-V',
      'mqttv31',
      '-t',
      'x',
      '-m',
      'x',
    ]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/bad user name or password/i);
  });

  it('is refused once the agent is unenrolled (not authorised)', async () => {
    const agent = await enrollAgent(t);
    await t.backend.services.brokerAgents.setEnrollStatus(agent.id, ENROLL_STATUS.unenrolled, new Date().toISOString());
    const result = await run('mosquitto_pub', [...mosquittoLogin(t, agent), '-t', `${agent.topic}/Status/X`, '-m', 'x']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/not authori[sz]ed/i);
  });
});
