// Mode `mosquitto`: agents connect to an existing Mosquitto 2 whose dynamic-security configuration
// the backend keeps in step with the database: one client per connectable agent (username = login,
// password = its current mqttpasswd) with a role carrying exactly agentTopicRules, and a client and
// role of the backend's own, the only one that may publish commands.
import { randomBytes } from 'node:crypto';
import mqtt, { type MqttClient } from 'mqtt';
import { agentTopicRules, BACKEND_TOPIC_RULES, isUsableAgentTopic } from './acl.ts';
import type { BrokerAgentRow } from '../agents/broker-repository.ts';
import { MAY_CONNECT } from '../agents/status.ts';
import { parseBrokerUrl, type BrokerUrl } from './broker-url.ts';
import { followAgentLifecycle, type AgentAccounts } from './agent-accounts.ts';
import { DynsecClient, rulesToAcls, type DynsecAcl, type DynsecCommand } from './dynsec.ts';
import {
  commandsOverLink,
  externalBrokerFace,
  externalBrokerStatus,
  recordExternalStopped,
  type ExternalModeOptions,
} from './external-broker.ts';
import { routeReport, announceOnConnect, BACKOFF, brokerClientOptions, ExternalLink, identityOf } from './external-link.ts';
import type { MqttBroker } from './port.ts';
import { unlessDiskFull } from '../db/disk-full.ts';

export interface ExternalBrokerOptions extends ExternalModeOptions {
  /** mqtt[s]://ADMIN[:PASSWORD]@HOST:PORT — the account `mosquitto_ctrl dynsec init` made (its password better in `brokerPassword`). */
  brokerUrl: string;
}

export const BACKEND_ACCOUNT = 'mdm-console-backend';
const AGENT_ROLE_PREFIX = 'mdm-agent-';
const AGENT_DESCRIPTION_PREFIX = 'mdm-console agent ';
const roleOf = (agentId: number) => `${AGENT_ROLE_PREFIX}${agentId}`;
const ALREADY = /already exists|already has/i;
const MISSING = /not found/i;

/** Where agents connect: the public URL if given, else the broker URL's first host. */
export function publicEndpoint(brokerUrl: BrokerUrl, publicUrl: string | undefined) {
  const target = publicUrl ? parseBrokerUrl(publicUrl, '--mqtt-public-url') : brokerUrl;
  return { host: target.servers[0]!.host, port: target.servers[0]!.port, tls: target.tls };
}

const aclKey = (acl: DynsecAcl) => `${acl.acltype} ${acl.topic} ${acl.allow}`;

export async function startMosquittoBroker(options: ExternalBrokerOptions): Promise<MqttBroker> {
  const { events } = options;
  const parsed = parseBrokerUrl(options.brokerUrl);
  // The dynsec admin's password: given apart from the URL (a file, the environment), else the URL's.
  const url = { ...parsed, password: options.brokerPassword ?? parsed.password };
  if (!url.username || !url.password)
    throw new Error(
      "Mosquitto mode needs the dynamic-security admin's name in --mqtt-broker-url (mqtt://admin@HOST:PORT) and its password in --mqtt-broker-password-file FILE or MDM_CONSOLE_MQTT_BROKER_PASSWORD",
    );
  const endpoint = publicEndpoint(url, options.publicUrl);
  const store = options.agents;
  // The backend's own account: a fresh password each run, set by the admin before the link logs in.
  const backendPassword = randomBytes(24).toString('base64url');
  /** Passwords drawn while the admin link was down: applied on reconnection. */
  const pendingPasswords = new Map<number, string>();
  /** What the broker holds for each agent: read at each reconcile, kept up to date by our changes. */
  const held = new Map<number, HeldAccount>();
  /** Agents whose last change failed: what the broker holds is asked before the next one. */
  const unsure = new Set<number>();
  let adminProblem: string | null = 'connecting';
  let dynsec: DynsecClient | null = null;
  let closed = false;
  let linkStarted = false;
  // Every change to the broker's configuration runs in order, one at a time.
  let queue: Promise<unknown> = Promise.resolve();
  const serially = <T>(work: () => Promise<T>): Promise<T> => {
    const next = queue.then(work);
    queue = next.catch(() => {});
    return next;
  };

  const link: ExternalLink = new ExternalLink({
    url,
    credentials: () => ({ username: BACKEND_ACCOUNT, password: backendPassword }),
    clientId: `${BACKEND_ACCOUNT}-${process.pid}`,
    caFile: options.caFile,
    events,
    work: options.work,
    store,
    name: 'Mosquitto',
    onConnected: () => announceOnConnect(commands, policies, (topic, payload, retain) => link.publish(topic, payload, retain)),
    onReport: (agent, subtopic, payload) => routeReport(commands, options.onTaskReport)(agent, subtopic, payload),
  });
  const accounts: AgentAccounts = {
    // deleteClient also disconnects it. Enrolled again: the old install's password stops working
    // now (the new one comes with the record read).
    revoke: async (agentId, why) => {
      await link.forget(agentId);
      void serially(() => syncAgent(agentId, undefined, why === 'reenrolled')).catch(noteFailure);
    },
    moved: (agentId) => serially(() => syncAgent(agentId)).catch(noteFailure),
  };
  const { commands, policies } = commandsOverLink(link, options, accounts);

  const noteFailure = async (error: unknown) => {
    await events.record('broker.sync_failed', `Mosquitto dynamic security: ${(error as Error).message}`);
  };

  /**
   * The changes that give an agent the client and role it should have, from what the broker holds
   * (`have`), and what it holds once they are made. A client is made only with its password (the
   * backend keeps only hashes: without one, the agent gets its client at its next record read),
   * with its role in the same command; a record read of an agent that has one is one password set.
   */
  const agentCommands = (
    row: BrokerAgentRow,
    have: HeldAccount,
    password: string | undefined,
  ): { commands: DynsecCommand[]; next: HeldAccount } => {
    const rolename = roleOf(row.id);
    const wanted = rulesToAcls(agentTopicRules(identityOf(row)));
    const out: DynsecCommand[] = [];
    if (have.acls === null) out.push({ command: 'createRole', rolename, acls: wanted });
    else {
      const held = new Set(have.acls.map(aclKey));
      const want = new Set(wanted.map(aclKey));
      for (const acl of have.acls)
        if (!want.has(aclKey(acl))) out.push({ command: 'removeRoleACL', rolename, acltype: acl.acltype, topic: acl.topic });
      for (const acl of wanted) if (!held.has(aclKey(acl))) out.push({ command: 'addRoleACL', rolename, ...acl });
    }
    let login = have.login;
    if (login === null) {
      if (password) {
        out.push({
          command: 'createClient',
          username: row.mqtt_login,
          password,
          textdescription: `${AGENT_DESCRIPTION_PREFIX}${row.id}`,
          roles: [{ rolename }],
        });
        login = row.mqtt_login;
      }
    } else {
      if (!have.roleGiven) out.push({ command: 'addClientRole', username: login, rolename });
      if (password) out.push({ command: 'setClientPassword', username: login, password });
    }
    return { commands: out, next: { login, roleGiven: login !== null, acls: wanted } };
  };

  const check = (responses: { command: string; error?: string }[], tolerated: RegExp = ALREADY) => {
    const failed = responses.filter(
      (response) => response.error && !tolerated.test(response.error) && !MISSING.test(response.error),
    );
    if (failed.length > 0)
      throw new Error(
        failed
          .slice(0, 3)
          .map((response) => `${response.command}: ${response.error}`)
          .join('; '),
      );
  };

  /** What the broker holds for an agent we are unsure of (a change of it failed): asked again. */
  const askHeld = async (control: DynsecClient, agentId: number): Promise<HeldAccount> => {
    const login = held.get(agentId)?.login ?? (await store.byId(agentId))?.mqtt_login;
    const [role, client] = await control.run([
      { command: 'getRole', rolename: roleOf(agentId) },
      ...(login ? [{ command: 'getClient', username: login }] : []),
    ]);
    const ours = client && !client.error && client.data?.client?.textdescription === `${AGENT_DESCRIPTION_PREFIX}${agentId}`;
    return {
      login: ours ? login! : null,
      roleGiven: ours ? (client.data?.client?.roles ?? []).some((r) => r.rolename === roleOf(agentId)) : false,
      acls: role!.error ? null : (role!.data?.role?.acls ?? []),
    };
  };

  /**
   * One agent: the client and role it should have now, or none, from what the broker holds (known
   * since the last reconcile): nothing is sent when nothing the broker must know has changed.
   */
  const syncAgent = async (agentId: number, password?: string, reset = false): Promise<void> => {
    const control = dynsec;
    if (!control) {
      if (password) pendingPasswords.set(agentId, password);
      return;
    }
    const row = await store.byId(agentId);
    const wanted = row && MAY_HOLD_ACCOUNT(row);
    let have = unsure.has(agentId) ? await askHeld(control, agentId) : (held.get(agentId) ?? NOTHING_HELD);
    const work: DynsecCommand[] = [];
    // reset: enrolled again, the old install's password must stop working now (the new one comes with the record).
    if (have.login !== null && (reset || !wanted || have.login !== row.mqtt_login)) {
      work.push({ command: 'deleteClient', username: have.login }); // which also disconnects it
      have = { ...have, login: null, roleGiven: false };
    }
    let next: HeldAccount | null = null;
    if (!wanted) {
      if (have.acls !== null) work.push({ command: 'deleteRole', rolename: roleOf(agentId) });
    } else {
      const made = agentCommands(row, have, password);
      work.push(...made.commands);
      next = made.next;
    }
    if (work.length > 0) {
      try {
        check(await control.run(work));
        unsure.delete(agentId);
      } catch (error) {
        unsure.add(agentId);
        throw error;
      }
    }
    if (next) held.set(agentId, next);
    else held.delete(agentId);
    pendingPasswords.delete(agentId);
  };

  /** Everything: default access, the backend's account, every agent; strays removed. */
  const reconcile = async (control: DynsecClient): Promise<{ agents: number; removed: number }> => {
    check(
      await control.run([
        {
          command: 'setDefaultACLAccess',
          acls: [
            { acltype: 'publishClientSend', allow: false },
            { acltype: 'publishClientReceive', allow: false },
            { acltype: 'subscribe', allow: false },
            { acltype: 'unsubscribe', allow: true },
          ],
        },
      ]),
    );
    const [clientList, roleList] = await control.run([
      { command: 'listClients', verbose: true, count: -1, offset: 0 },
      { command: 'listRoles', verbose: true, count: -1, offset: 0 },
    ]);
    if (clientList!.error || roleList!.error)
      throw new Error(`cannot list clients and roles: ${clientList!.error ?? roleList!.error}`);
    const clients = new Map<string, { roles: string[]; description: string }>();
    for (const client of clientList!.data?.clients ?? []) {
      clients.set(client.username, {
        roles: (client.roles ?? []).map((r) => r.rolename),
        description: client.textdescription ?? '',
      });
    }
    const roles = new Map<string, DynsecAcl[]>();
    for (const role of roleList!.data?.roles ?? []) roles.set(role.rolename, role.acls ?? []);

    const work: DynsecCommand[] = [];
    // The backend's own role and client.
    const backendAcls = rulesToAcls(BACKEND_TOPIC_RULES);
    const haveBackend = roles.get(BACKEND_ACCOUNT);
    if (!haveBackend) work.push({ command: 'createRole', rolename: BACKEND_ACCOUNT, acls: backendAcls });
    else {
      const have = new Set(haveBackend.map(aclKey));
      const want = new Set(backendAcls.map(aclKey));
      for (const acl of haveBackend)
        if (!want.has(aclKey(acl)))
          work.push({ command: 'removeRoleACL', rolename: BACKEND_ACCOUNT, acltype: acl.acltype, topic: acl.topic });
      for (const acl of backendAcls)
        if (!have.has(aclKey(acl))) work.push({ command: 'addRoleACL', rolename: BACKEND_ACCOUNT, ...acl });
    }
    const backendClient = clients.get(BACKEND_ACCOUNT);
    if (!backendClient)
      work.push({
        command: 'createClient',
        username: BACKEND_ACCOUNT,
        password: backendPassword,
        textdescription: 'MDM Console backend',
        roles: [{ rolename: BACKEND_ACCOUNT }],
      });
    else {
      work.push({ command: 'setClientPassword', username: BACKEND_ACCOUNT, password: backendPassword });
      if (!backendClient.roles.includes(BACKEND_ACCOUNT))
        work.push({ command: 'addClientRole', username: BACKEND_ACCOUNT, rolename: BACKEND_ACCOUNT });
    }

    const wanted = (await store.connectable()).filter(MAY_HOLD_ACCOUNT);
    const wantedLogins = new Set<string>();
    const wantedRoles = new Set<string>();
    const nextHeld = new Map<number, HeldAccount>();
    for (const row of wanted) {
      wantedLogins.add(row.mqtt_login);
      wantedRoles.add(roleOf(row.id));
      const client = clients.get(row.mqtt_login);
      // A client of that name that is not ours (another application's) is left alone.
      if (client && !client.description.startsWith(AGENT_DESCRIPTION_PREFIX)) continue;
      const have: HeldAccount = {
        login: client ? row.mqtt_login : null,
        roleGiven: client?.roles.includes(roleOf(row.id)) ?? false,
        acls: roles.get(roleOf(row.id)) ?? null,
      };
      const made = agentCommands(row, have, pendingPasswords.get(row.id));
      work.push(...made.commands);
      nextHeld.set(row.id, made.next);
    }
    let removed = 0;
    for (const [username, client] of clients) {
      if (client.description.startsWith(AGENT_DESCRIPTION_PREFIX) && !wantedLogins.has(username)) {
        work.push({ command: 'deleteClient', username });
        removed += 1;
      }
    }
    for (const rolename of roles.keys())
      if (rolename.startsWith(AGENT_ROLE_PREFIX) && !wantedRoles.has(rolename)) work.push({ command: 'deleteRole', rolename });
    check(await control.run(work));
    held.clear();
    for (const [agentId, account] of nextHeld) held.set(agentId, account);
    unsure.clear();
    pendingPasswords.clear();
    return { agents: wanted.length, removed };
  };

  // The admin connection: dynamic security only.
  let adminFailures = 0;
  const admin: MqttClient = mqtt.connect(brokerClientOptions(url, url, `mdm-console-admin-${process.pid}`, options.caFile));
  const adminTrouble = async (why: string) => {
    if (closed) return;
    const first = adminProblem === null || adminProblem === 'connecting';
    adminProblem = why;
    if (first)
      await events.record(
        'broker.unreachable',
        `The Mosquitto broker ${url.display} is unreachable for its dynamic-security admin: ${why}; retrying with back-off`,
        {},
        { url: url.display, reason: why },
      );
  };
  admin.on('error', (error) => unlessDiskFull(() => adminTrouble(error.message)));
  admin.on('close', () => {
    dynsec?.stop();
    dynsec = null;
    if (closed) return;
    if (adminProblem === null) unlessDiskFull(() => adminTrouble('connection lost'));
    adminFailures += 1;
    admin.options.reconnectPeriod = Math.min(BACKOFF.maxMs, BACKOFF.firstMs * 2 ** Math.min(adminFailures, 10));
  });
  admin.on('connect', () => {
    const control = new DynsecClient(admin);
    void serially(async () => {
      await control.listen();
      const result = await reconcile(control);
      dynsec = control;
      adminProblem = null;
      adminFailures = 0;
      admin.options.reconnectPeriod = BACKOFF.firstMs;
      await events.record(
        'broker.reconciled',
        `Mosquitto dynamic security in step: ${result.agents} agent account(s)${result.removed > 0 ? `, ${result.removed} stale one(s) removed` : ''}`,
        {},
        result,
      );
      if (!linkStarted) {
        linkStarted = true;
        link.start();
      }
    }).catch(async (error: unknown) => {
      control.stop();
      await adminTrouble(`reconcile failed: ${(error as Error).message}`);
      admin.end(true, () => {
        if (!closed) admin.reconnect();
      });
    });
  });

  // Accounts follow the records: removed on delete, unenroll and re-enrollment, rights changed with the fleet.
  const unsubscribe = followAgentLifecycle(events, commands, accounts);

  const wasOnline = await store.allOffline();
  await events.record(
    'broker.started',
    `Using the external Mosquitto broker ${url.display}; agents connect to ${endpoint.host}:${endpoint.port}${endpoint.tls ? ' (TLS)' : ''}`,
    {},
    { url: url.display, endpoint, marked_offline: wasOnline },
  );

  const parts = { mode: 'mosquitto' as const, url, endpoint, link, store, commands, policies };
  return {
    ...externalBrokerFace(parts),
    credentialsIssued: async (agentId, password) => {
      if (!dynsec) {
        pendingPasswords.set(agentId, password);
        return;
      }
      await serially(() => syncAgent(agentId, password)).catch(async (error: unknown) => {
        pendingPasswords.set(agentId, password);
        await noteFailure(error);
      });
    },
    status: () => externalBrokerStatus(parts, adminProblem === null && link.connected, adminProblem ?? link.lastProblem),
    close: async () => {
      if (closed) return;
      closed = true;
      unsubscribe();
      policies.close();
      dynsec?.stop();
      await Promise.all([link.close(), admin.endAsync(true).catch(() => {})]);
      await recordExternalStopped(events, store, 'Mosquitto');
    },
  };
}

/** What the broker holds for one agent: its client (by login) with its role given, and its role's ACLs. */
interface HeldAccount {
  login: string | null;
  roleGiven: boolean;
  acls: DynsecAcl[] | null;
}
const NOTHING_HELD: HeldAccount = { login: null, roleGiven: false, acls: null };

/** Enrolled or unenrolling (which must still receive its Unenroll), with a topic MQTT can carry. */
function MAY_HOLD_ACCOUNT(row: BrokerAgentRow): boolean {
  return MAY_CONNECT.includes(row.enroll_status) && isUsableAgentTopic(row.topic);
}
