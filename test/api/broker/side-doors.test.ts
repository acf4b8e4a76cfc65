// The brokers' side doors (issue 19, item 4), over real RabbitMQ and Mosquitto processes:
// - RabbitMQ: the HTTP auth endpoints answer only the nodes (the secret of their rabbitmq.conf), refused
//   logins are throttled with the embedded broker's schedule without any answer being held, the backend's own account gets a
//   drawn password where none is given and a warning for a weak one;
// - Mosquitto: a retained "online" is never presence after a backend restart, and the dynamic-security
//   admin's password is on no command line of serve.
// MDM_TEST_BROKER_MODES=rabbitmq or =mosquitto narrows them.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startServe, type RunningServe } from '../../helpers/cli.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { BROKER_MODES_UNDER_TEST, brokerReady, startMosquitto, type MosquittoProcess } from '../../helpers/external-brokers.ts';
import { startRabbitCluster, type RabbitCluster } from '../../helpers/rabbitmq.ts';
import { agentRow, closeClients, connectAgent, enrollAgent, eventually, nextEvent, ofAgent, run } from '../../helpers/mqtt.ts';

afterEach(async () => {
  await closeClients();
});

/** A question to the auth endpoint as a local process (or, with `secret`, as a node) asks it. */
async function ask(path: string, form: Record<string, string>, secret?: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${authPort}/auth/${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(secret === undefined ? {} : { authorization: `Basic ${Buffer.from(`rabbitmq:${secret}`).toString('base64')}` }),
    },
    body: new URLSearchParams(form).toString(),
  });
  return { status: response.status, body: await response.text() };
}

/** The auth endpoints' port: the one the test cluster's nodes ask. */
let authPort = 0;

describe.runIf(BROKER_MODES_UNDER_TEST.includes('rabbitmq'))('RabbitMQ auth endpoints', () => {
  let rabbit: RabbitCluster;
  let t: TestBackend;
  const node = () => rabbit.nodes[0]!;

  beforeAll(async () => {
    rabbit = await startRabbitCluster({ nodes: 1 });
    authPort = rabbit.authPort;
    t = await startTestBackend({
      mqttBroker: 'rabbitmq',
      // No password for the backend's own account: it draws one.
      mqttBrokerUrl: `mqtt://127.0.0.1:${node().mqttPort}`,
      mqttAuthPort: rabbit.authPort,
      mqttAuthSecret: rabbit.authSecret,
      // After a login's first refusal, its attempts are refused unchecked for 2 s, then 4 s, then 8 s at most.
      mqttThrottle: { freeFailures: 1, freeFailuresPerAddress: 1000, baseDelayMs: 2_000, maxDelayMs: 8_000 },
    });
    await brokerReady(t.backend);
  }, 240_000);
  afterAll(async () => {
    await t?.stop();
    await rabbit?.destroy();
  }, 120_000);

  const onNode = (agent: { serial: string; password: string }) =>
    connectAgent(t, agent, { port: node().mqttPort, connectTimeout: 20_000 });

  it('answer only the nodes: without their secret every question is a 401 "deny", an enrolled serial looks like an unknown one', async () => {
    const agent = await enrollAgent(t);
    // The node (with the secret from its rabbitmq.conf) lets the agent in.
    expect((await onNode(agent)).connected).toBe(true);

    for (const secret of [undefined, 'not-the-secret-at-all', `${rabbit.authSecret}x`]) {
      expect(await ask('user', { username: agent.serial, password: agent.password }, secret)).toEqual({
        status: 401,
        body: 'deny',
      });
      const known = await ask('vhost', { username: agent.serial, vhost: '/' }, secret);
      const unknown = await ask('vhost', { username: 'NO-SUCH-SERIAL', vhost: '/' }, secret);
      expect(known).toEqual({ status: 401, body: 'deny' });
      expect(unknown).toEqual(known);
      expect(
        await ask(
          'topic',
          { username: agent.serial, vhost: '/', resource: 'topic', name: 'amq.topic', permission: 'write', routing_key: 'x' },
          secret,
        ),
      ).toEqual({ status: 401, body: 'deny' });
    }
    // The same questions with the secret: answered.
    expect(await ask('user', { username: agent.serial, password: agent.password }, rabbit.authSecret)).toEqual({
      status: 200,
      body: 'allow',
    });
  });

  it("the backend's own account has a drawn password: no guess is right, and the backend is connected with it", async () => {
    expect(t.backend.broker.status().connected).toBe(true);
    // (The second and third are refused unchecked: the account is throttled like any login's.)
    for (const guess of ['', 'mdm-console-backend', 'password']) {
      const answer = await ask('user', { username: 'mdm-console-backend', password: guess }, rabbit.authSecret);
      expect(answer.body, guess).toBe('deny');
    }
    expect(t.backend.broker.warnings ?? []).toEqual([]);
  });

  it('a throttled login is refused at once, unchecked, until its wait has passed; another login is not; then its right password gets in', async () => {
    const target = await enrollAgent(t);
    const other = await enrollAgent(t);
    const guess = (password: string) =>
      ask('user', { username: target.serial, password, client_id: target.serial }, rabbit.authSecret);
    // A wrong one starts a 2 s wait.
    expect((await guess('wrong')).body).toBe('deny');
    // Within the wait the right password is refused, not checked (so it tells a guesser nothing):
    // an answer held until the wait had passed would have been 'allow'.
    expect(await guess(target.password)).toEqual({ status: 200, body: 'deny' });
    // Another login from the same node: allowed.
    expect(await ask('user', { username: other.serial, password: other.password }, rabbit.authSecret)).toEqual({
      status: 200,
      body: 'allow',
    });
    // Unchecked refusals do not lengthen the wait: once it has passed, the right password gets in.
    await eventually(async () => (await guess(target.password)).body === 'allow', 10_000);
  });

  it('guesses in parallel are no faster: within the wait every attempt is refused unchecked, none is held', async () => {
    const target = await enrollAgent(t);
    const attempt = (password: string) =>
      ask('user', { username: target.serial, password, client_id: target.serial }, rabbit.authSecret);
    expect((await attempt('wrong')).body).toBe('deny');
    // Eight at once within the 2 s wait, the right password among them: all refused unchecked (held
    // answers, checked once the wait had passed, would have let the right one in).
    const parallel = await Promise.all(Array.from({ length: 8 }, (_, i) => attempt(i === 0 ? target.password : `parallel-${i}`)));
    expect(parallel.map((answer) => answer.body)).toEqual(Array(8).fill('deny'));
    await eventually(async () => (await attempt(target.password)).body === 'allow', 10_000);
  });

  it("another device's login through the node gets in while one login is guessed over 16 connections at once", async () => {
    const target = await enrollAgent(t);
    const other = await enrollAgent(t);
    const port = node().mqttPort;
    /** One MQTT login with mqtt.js's defaults (30 s connect timeout), no retry: true when accepted. */
    const login = (agent: { serial: string }, password: string) =>
      new Promise<boolean>((resolve) => {
        const client = mqtt.connect({
          host: '127.0.0.1',
          port,
          username: agent.serial,
          password,
          clientId: agent.serial,
          reconnectPeriod: 0,
        });
        const settle = (accepted: boolean) => {
          client.end(true);
          resolve(accepted);
        };
        client.once('connect', () => settle(true));
        client.once('error', () => settle(false));
        client.once('close', () => settle(false));
      });
    let flooding = true;
    let guesses = 0;
    const flood = Array.from({ length: 16 }, async (_, worker) => {
      while (flooding) expect(await login(target, `wrong-${worker}-${(guesses += 1)}`)).toBe(false);
    });
    try {
      await eventually(() => guesses > 16, 60_000);
      // Five logins in a row while the flood runs: each accepted (the node asks the endpoint
      // between the flood's questions, none of which is held).
      for (let i = 0; i < 5; i++) expect(await login(other, other.password), `login ${i}`).toBe(true);
    } finally {
      flooding = false;
      await Promise.all(flood);
    }
    await eventually(() => login(target, target.password), 30_000);
  }, 180_000);

  it('through the MQTT port too: wrong passwords at the node are refused and throttled', async () => {
    const target = await enrollAgent(t);
    const slowed = nextEvent(
      t,
      (event) =>
        event.type === 'mqtt.login_refused' &&
        event.message.includes(target.serial) &&
        event.message.includes('refused unchecked'),
      60_000,
    );
    for (let i = 0; i < 2; i++) {
      const result = await run(
        'mosquitto_pub',
        [
          '-h',
          '127.0.0.1',
          '-p',
          String(node().mqttPort),
          '-u',
          target.serial,
          '-P',
          `wrong-${i}`,
          '-i',
          target.serial,
          '-t',
          'x',
          '-m',
          'x',
        ],
        { timeoutMs: 30_000 },
      );
      expect(result.code).not.toBe(0);
    }
    expect((await slowed).message).toContain('further attempts for this login are refused unchecked until its wait has passed');
  });

  it("a weak password given for the backend's account is warned about", async () => {
    const weak = await startTestBackend({
      mqttBroker: 'rabbitmq',
      mqttBrokerUrl: `mqtt://mdm-backend:secret123@127.0.0.1:${node().mqttPort}`,
      mqttAuthPort: 0,
      mqttAuthSecret: rabbit.authSecret,
    });
    try {
      expect(weak.backend.broker.warnings?.join('\n')).toMatch(/mdm-backend has a weak password: it has 9 characters/);
      const recorded = weak.db.prepare("SELECT message FROM events WHERE type = 'broker.weak_password'").all() as {
        message: string;
      }[];
      expect(recorded).toHaveLength(1);
    } finally {
      await weak.stop();
    }
  });
});

describe.runIf(BROKER_MODES_UNDER_TEST.includes('mosquitto'))('Mosquitto', () => {
  let mosquitto: MosquittoProcess;
  beforeAll(async () => {
    mosquitto = await startMosquitto();
  });
  afterAll(async () => {
    await mosquitto?.destroy();
  });

  it('a retained "online" is not presence after a backend restart: the agent that is gone stays offline, one still connected answers a ping', async () => {
    // A data dir of the test's own: kept across the backend's restart.
    const dataDir = mkdtempSync(join(tmpdir(), 'mdm-doors-retained-'));
    let t = await startTestBackend({ dataDir, mqttBroker: 'mosquitto', mqttBrokerUrl: mosquitto.adminUrl });
    try {
      await brokerReady(t.backend);
      const gone = await enrollAgent(t);
      const kept = await enrollAgent(t);
      const base = { host: '127.0.0.1', port: mosquitto.port, reconnectPeriod: 0 };
      const goneClient = await mqtt.connectAsync({
        ...base,
        username: gone.serial,
        password: gone.password,
        clientId: gone.serial,
      });
      const keptClient = await mqtt.connectAsync({
        ...base,
        username: kept.serial,
        password: kept.password,
        clientId: kept.serial,
      });
      // The kept agent answers pings, as agents do.
      await keptClient.subscribeAsync(`${kept.topic}/Command/#`, { qos: 1 });
      keptClient.on('message', (topic) => {
        // A ping may arrive as the test ends the client: its answer is then refused ("client disconnecting"), harmlessly.
        if (topic === `${kept.topic}/Command/Ping`)
          keptClient.publishAsync(`${kept.topic}/Status/Ping`, '!', { qos: 1 }).catch(() => {});
      });
      for (const [agent, client] of [
        [gone, goneClient],
        [kept, keptClient],
      ] as const) {
        await client.publishAsync(`${agent.topic}/Status/Online`, JSON.stringify({ online: true }), { qos: 1, retain: true });
        await eventually(async () => (await agentRow(t, agent.id)).is_online === 1);
      }
      await goneClient.endAsync(); // a clean disconnect: no will, its retained "online" stays on the broker
      await t.stop();

      t = await startTestBackend({ dataDir, mqttBroker: 'mosquitto', mqttBrokerUrl: mosquitto.adminUrl });
      const keptOnline = nextEvent(t, ofAgent(kept.id, 'agent.online'), 30_000);
      await brokerReady(t.backend);
      // The kept agent, still connected, answers the ping its retained "online" earned it; by then
      // the gone agent's retained "online" (delivered with it, at the subscription) was seen too.
      await keptOnline;
      expect((await agentRow(t, kept.id)).is_online).toBe(1);
      expect((await agentRow(t, gone.id)).is_online).toBe(0);
      await keptClient.endAsync();
    } finally {
      await t.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  describe('serve: the admin password is on no command line', () => {
    const servers: RunningServe[] = [];
    afterEach(() => {
      for (const server of servers.splice(0)) server.stop('SIGKILL');
    });
    /** One serve at a time on the broker: each sets its own account's password and reconciles the agents' clients. */
    async function stopped(server: RunningServe): Promise<void> {
      if (server.process.exitCode === null) {
        const exited = new Promise((resolve) => server.process.once('exit', resolve));
        server.process.kill('SIGTERM');
        await exited;
      }
    }

    /** Command lines of `pid` and of every process it started, from /proc. */
    function commandLines(pid: number): string[] {
      const children = new Map<number, number[]>();
      for (const entry of readdirSync('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        try {
          const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
          const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
          children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
        } catch {
          // gone meanwhile
        }
      }
      const lines: string[] = [];
      const pending = [pid];
      while (pending.length > 0) {
        const next = pending.pop()!;
        try {
          lines.push(readFileSync(`/proc/${next}/cmdline`, 'utf8').replaceAll('\0', ' '));
        } catch {
          // gone meanwhile
        }
        pending.push(...(children.get(next) ?? []));
      }
      return lines;
    }

    async function connected(server: RunningServe): Promise<void> {
      const info = JSON.parse(readFileSync(join(server.dataDir, 'server.json'), 'utf8')) as {
        admin_url: string;
        admin_token: string;
      };
      await eventually(async () => {
        const response = await fetch(`${info.admin_url}/api/status`, {
          headers: { authorization: `Bearer ${info.admin_token}` },
        });
        const status = (await response.json()) as { mqtt?: { connected?: boolean } };
        return status.mqtt?.connected === true;
      }, 30_000);
    }

    it('from a file, or from the environment; the URL form still works and is warned about', async () => {
      const passwordFile = join(mosquitto.dir, 'admin-password');
      writeFileSync(passwordFile, `${mosquitto.adminPassword}\n`, { mode: 0o600 });
      const fromFile = await startServe('mdm-doors-', {
        untilBanner: true,
        extraArgs: [
          '--mqtt-broker',
          'mosquitto',
          '--mqtt-broker-url',
          mosquitto.adminUrlWithoutPassword,
          '--mqtt-broker-password-file',
          passwordFile,
        ],
      });
      servers.push(fromFile);
      await connected(fromFile);
      const lines = commandLines(fromFile.process.pid!);
      expect(lines.join('\n')).toContain('--mqtt-broker-password-file');
      expect(lines.join('\n')).not.toContain(mosquitto.adminPassword);
      expect(fromFile.output()).not.toContain('WARNING: the password');
      await stopped(fromFile);

      const fromEnv = await startServe('mdm-doors-', {
        untilBanner: true,
        extraArgs: ['--mqtt-broker', 'mosquitto', '--mqtt-broker-url', mosquitto.adminUrlWithoutPassword],
        env: { ...process.env, MDM_CONSOLE_MQTT_BROKER_PASSWORD: mosquitto.adminPassword },
      });
      servers.push(fromEnv);
      await connected(fromEnv);
      expect(commandLines(fromEnv.process.pid!).join('\n')).not.toContain(mosquitto.adminPassword);
      await stopped(fromEnv);

      const inUrl = await startServe('mdm-doors-', {
        untilBanner: true,
        extraArgs: ['--mqtt-broker', 'mosquitto', '--mqtt-broker-url', mosquitto.adminUrl],
      });
      servers.push(inUrl);
      await connected(inUrl);
      expect(inUrl.output()).toMatch(/WARNING: the password in --mqtt-broker-url is on the command line/);
    });
  });
});
