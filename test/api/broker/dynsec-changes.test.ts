// Mosquitto mode (issue 24, item 5): what each enrollment and record read costs the broker's
// dynamic-security plugin, counted on the real broker. Every command the backend sends is answered
// on `$CONTROL/dynamic-security/v1/response`, which the dynsec admin may read: a subscriber of our own
// sees each control message's answers (one message per control message, one answer per command).
// Mosquitto 2.0 rewrites its whole JSON file at each change, so changes are what is counted.
// MDM_TEST_BROKER_MODES=mosquitto narrows the broker tests to this mode.
import mqtt, { type MqttClient } from 'mqtt';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { agentCall, enrollByHand, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { BROKER_MODES_UNDER_TEST, brokerReady, startMosquitto, type MosquittoProcess } from '../../helpers/external-brokers.ts';
import { closeClients, connectAgent, enrollAgent, eventually, readRecord } from '../../helpers/mqtt.ts';

const RESPONSE_TOPIC = '$CONTROL/dynamic-security/v1/response';
/** Commands that only read the configuration (no file rewrite). */
const READS = /^(get|list)/;

describe.runIf(BROKER_MODES_UNDER_TEST.includes('mosquitto'))('Mosquitto dynamic-security changes', () => {
  let mosquitto: MosquittoProcess;
  let t: TestBackend;
  let spy: MqttClient;
  /** Each control message the backend sent, as the names of its commands. */
  let messages: string[][] = [];

  beforeAll(async () => {
    mosquitto = await startMosquitto();
    t = await startTestBackend({ mqttBroker: 'mosquitto', mqttBrokerUrl: mosquitto.adminUrl });
    await brokerReady(t.backend);
    spy = await mqtt.connectAsync(`mqtt://127.0.0.1:${mosquitto.port}`, {
      username: 'admin',
      password: mosquitto.adminPassword,
      clientId: `dynsec-spy-${process.pid}`,
      reconnectPeriod: 0,
    });
    spy.on('message', (_topic, payload) => {
      const { responses } = JSON.parse(payload.toString('utf8')) as { responses: { command: string }[] };
      messages.push(responses.map((response) => response.command));
    });
    const granted = await spy.subscribeAsync(RESPONSE_TOPIC, { qos: 0 });
    expect(granted[0]!.qos).toBe(0);
  }, 240_000);
  afterEach(async () => {
    await closeClients();
  });
  afterAll(async () => {
    await spy?.endAsync(true);
    await t?.stop();
    await mosquitto?.destroy();
  }, 60_000);

  /** The commands of every control message sent since the last call, once `last` (a command) is among them. */
  async function sentUntil(last: string): Promise<string[][]> {
    await eventually(() => messages.some((names) => names.includes(last)), 10_000);
    const sent = messages;
    messages = [];
    return sent;
  }
  const changes = (sent: string[][]) => sent.flat().filter((name) => !READS.test(name));

  it('an enrollment (its first record read) is one control message: the role, and the client made with its password and role', async () => {
    messages = [];
    const agent = await enrollAgent(t);
    const sent = await sentUntil('createClient');
    expect(sent).toEqual([['createRole', 'createClient']]);
    expect(changes(sent)).toHaveLength(2);
    // The client made so works at once.
    const client = await connectAgent(t, agent);
    expect(client.connected).toBe(true);
    // Deleted: the client (which disconnects it) and its role go, in one control message.
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    expect((await t.admin('DELETE', `/agents/${agent.id}`)).status).toBeLessThan(300);
    expect(await sentUntil('deleteRole')).toEqual([['deleteClient', 'deleteRole']]);
    await closed;
  });

  it('a record read is one change (the password it redrew); a read that changes nothing the broker must know sends nothing', async () => {
    const agent = await enrollAgent(t);
    await sentUntil('createClient');
    const again = await readRecord(t, agent.session, agent.id);
    expect(await sentUntil('setClientPassword')).toEqual([['setClientPassword']]);
    expect((await connectAgent(t, again)).connected).toBe(true);

    // A device waiting for approval holds no broker account: its record reads send nothing. The
    // changes are sent one at a time, in order: the next read of an enrolled agent (one password set)
    // shows that nothing came before it.
    const code = (await t.admin('POST', '/codes', { name: 'Manual dynsec', approval: 'manual' })).body as {
      user_token: string;
      token: string;
    };
    const init = await agentCall(t.apiUrl, 'GET', `initSession?user_token=${code.user_token}`);
    const session = init.body.session_token as string;
    const full = await agentCall(t.apiUrl, 'GET', `getFullSession?session_token=${session}`);
    await agentCall(
      t.apiUrl,
      'POST',
      `changeActiveProfile?session_token=${session}&profiles_id=${full.body.plugin_mdm_guest_profiles_id}`,
    );
    const created = await agentCall(t.apiUrl, 'POST', `PluginMdmAgent?session_token=${session}`, {
      body: {
        input: {
          _invitation_token: code.token,
          _email: 'waiting-dynsec@example.com',
          _serial: 'WAITINGDYNSEC1',
          _uuid: crypto.randomUUID(),
          csr: '',
          version: '2.0.0-rc.7',
          type: 'android',
        },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const waiting = await readRecord(t, session, Number(created.body.id));
    expect(waiting.record.enroll_status).toBe('pending_approval');
    await readRecord(t, session, Number(created.body.id));
    await readRecord(t, agent.session, agent.id);
    expect(await sentUntil('setClientPassword')).toEqual([['setClientPassword']]);
  });

  it('the same device enrolling again: the old client removed at once, the new one made with its password at the record read', async () => {
    const email = 'again-dynsec@example.com';
    const enroll = async () => {
      const invited = await t.admin('POST', '/invitations', { email, send_email: false });
      const { session, created } = await enrollByHand(t.apiUrl, { ...invited.body, email }, { serial: 'DYNSECAGAIN1' });
      expect(created.status).toBe(201);
      return readRecord(t, session, Number(created.body.id));
    };
    const first = await enroll();
    await sentUntil('createClient');
    const second = await enroll();
    expect(second.id).toBe(first.id);
    expect(await sentUntil('createClient')).toEqual([['deleteClient'], ['createClient']]);
  });
});
