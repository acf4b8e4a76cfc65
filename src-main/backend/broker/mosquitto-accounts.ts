// Mode `mosquitto`'s accounts: the dynamic-security configuration kept in step with the database.
// One client per connectable agent (username = login, password = its current mqttpasswd) with a
// role of its own carrying exactly agentTopicRules, and a client and role of the backend's own, the
// only one that may publish commands.
//
// Mosquitto 2.0 rewrites its whole JSON file after every change (each command of a control
// message), and 2.0.11 substitutes no %u/%c in ACLs: an agent's rights need a role of its own. So a
// new device costs two changes (its role, and its client made with password and role at once, in
// one control message), a record read one (the password it redrew), and a read that changes
// nothing the broker must know none. Several nodes may drive the same broker: what one node holds
// in `held` may be stale ("already exists"), and then the truth is asked and the change made again.
import { createHmac } from 'node:crypto';
import { agentTopicRules, BACKEND_TOPIC_RULES, isUsableAgentTopic } from './acl.ts';
import type { BrokerAgentRow, BrokerAgentStore } from '../agents/broker-repository.ts';
import { MAY_CONNECT } from '../agents/status.ts';
import type { EventLog } from '../events/event-log.ts';
import type { DynsecAcl, DynsecClient, DynsecCommand, DynsecResponse } from './dynsec.ts';
import { rulesToAcls } from './dynsec.ts';
import { identityOf } from './external-link.ts';

export const BACKEND_ACCOUNT = 'mdm-console-backend';
const AGENT_ROLE_PREFIX = 'mdm-agent-';
const AGENT_DESCRIPTION_PREFIX = 'mdm-console agent ';
const roleOf = (agentId: number) => `${AGENT_ROLE_PREFIX}${agentId}`;
const ALREADY = /already exists|already has/i;
const MISSING = /not found/i;

const aclKey = (acl: DynsecAcl) => `${acl.acltype} ${acl.topic} ${acl.allow}`;

/**
 * The backend account's password, the same on every node: derived from the dynsec admin's password
 * (which every node is given, and which grants more). A fresh one per run would make each node's
 * start kick the others' links (Mosquitto disconnects a client whose password is set).
 */
export function backendPasswordFor(adminPassword: string): string {
  return createHmac('sha256', adminPassword).update(BACKEND_ACCOUNT).digest('base64url');
}

/** What the broker holds for one agent: its client (by login) with its role given, and its role's ACLs. */
interface HeldAccount {
  login: string | null;
  roleGiven: boolean;
  acls: DynsecAcl[] | null;
}
const NOTHING_HELD: HeldAccount = { login: null, roleGiven: false, acls: null };

/** Enrolled or unenrolling (which must still receive its Unenroll), with a topic MQTT can carry. */
function mayHoldAccount(row: BrokerAgentRow): boolean {
  return MAY_CONNECT.includes(row.enroll_status) && isUsableAgentTopic(row.topic);
}

/** The changes that make `rolename` carry exactly `wanted`, from the ACLs it has (null: no role). */
function roleCommands(rolename: string, have: DynsecAcl[] | null, wanted: DynsecAcl[]): DynsecCommand[] {
  if (have === null) return [{ command: 'createRole', rolename, acls: wanted }];
  const held = new Set(have.map(aclKey));
  const want = new Set(wanted.map(aclKey));
  return [
    ...have
      .filter((acl) => !want.has(aclKey(acl)))
      .map((acl) => ({ command: 'removeRoleACL', rolename, acltype: acl.acltype, topic: acl.topic })),
    ...wanted.filter((acl) => !held.has(aclKey(acl))).map((acl) => ({ command: 'addRoleACL', rolename, ...acl })),
  ];
}

/** Throws on a failed command, except those `tolerated` and "not found" (already gone). */
function check(responses: DynsecResponse[], tolerated: RegExp = ALREADY): void {
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
}

export class MosquittoAccounts {
  private readonly store: BrokerAgentStore;
  private readonly events: EventLog;
  private readonly backendPassword: string;
  /** Passwords drawn while the admin link was down: applied on reconnection. */
  private readonly pending = new Map<number, string>();
  /** What the broker holds for each agent: read at each reconcile, kept up to date by our changes. */
  private readonly held = new Map<number, HeldAccount>();
  /** Agents whose last change failed, or whose `held` proved stale: the broker is asked first. */
  private readonly unsure = new Set<number>();
  private control: DynsecClient | null = null;
  // Every change to the broker's configuration runs in order, one at a time.
  private queue: Promise<unknown> = Promise.resolve();

  constructor(options: { store: BrokerAgentStore; events: EventLog; backendPassword: string }) {
    this.store = options.store;
    this.events = options.events;
    this.backendPassword = options.backendPassword;
  }

  get ready(): boolean {
    return this.control !== null;
  }

  /** The admin link is up: everything is reconciled, then changes go through `control`. */
  async attach(control: DynsecClient): Promise<{ agents: number; removed: number }> {
    return this.serially(async () => {
      const result = await this.reconcile(control);
      this.control = control;
      return result;
    });
  }

  detach(): void {
    this.control?.stop();
    this.control = null;
  }

  /** An account goes now: deleteClient also disconnects it (a re-enrolled agent's new one comes with its record read). */
  /**
   * Awaited by the event's transaction (the lifecycle subscriber), so the answer to a re-enrollment
   * leaves only once the old client is gone: with several nodes, the record read that follows may
   * be served by another node, whose new client a late delete would remove.
   */
  revoke(agentId: number, reset: boolean): Promise<void> {
    return this.serially(() => this.syncAgent(agentId, undefined, reset)).catch((error: unknown) => this.noteFailure(error));
  }

  /** The agent's rights follow its fleet (awaited by the move, before the agent is told). */
  moved(agentId: number): Promise<void> {
    return this.serially(() => this.syncAgent(agentId)).catch((error: unknown) => this.noteFailure(error));
  }

  /** A record read drew `password`: the agent's client gets it (made with it, the first time). */
  async issued(agentId: number, password: string): Promise<void> {
    if (!this.control) {
      this.pending.set(agentId, password);
      return;
    }
    await this.serially(() => this.syncAgent(agentId, password)).catch(async (error: unknown) => {
      this.pending.set(agentId, password);
      await this.noteFailure(error);
    });
  }

  /** The backend's link was refused: its client's password is set again (a broker configured by an older version). */
  async resetBackendPassword(): Promise<void> {
    const control = this.control;
    if (!control) return;
    await this.serially(async () =>
      check([
        await control.one({ command: 'setClientPassword', username: BACKEND_ACCOUNT, password: this.backendPassword }, MISSING),
      ]),
    );
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work);
    this.queue = next.catch(() => {});
    return next;
  }

  private async noteFailure(error: unknown): Promise<void> {
    await this.events.record('broker.sync_failed', `Mosquitto dynamic security: ${(error as Error).message}`);
  }

  /**
   * The changes that give an agent the client and role it should have, from what the broker holds
   * (`have`). A client is made only with its password (the backend keeps only hashes: without one,
   * the agent gets its client at its next record read), with its role, in one command.
   */
  private agentCommands(
    row: BrokerAgentRow,
    have: HeldAccount,
    password: string | undefined,
  ): { commands: DynsecCommand[]; next: HeldAccount } {
    const rolename = roleOf(row.id);
    const wanted = rulesToAcls(agentTopicRules(identityOf(row)));
    const out = roleCommands(rolename, have.acls, wanted);
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
  }

  /** What the broker holds for an agent we are unsure of: asked. */
  private async askHeld(control: DynsecClient, agentId: number, login: string | undefined): Promise<HeldAccount> {
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
  }

  /**
   * One agent: the client and role it should have now, or none, from what the broker holds (known
   * since the last reconcile): nothing is sent when nothing the broker must know has changed.
   * `reset`: enrolled again, the old install's password must stop working now.
   */
  private async syncAgent(agentId: number, password?: string, reset = false, retry = true): Promise<void> {
    const control = this.control;
    if (!control) {
      if (password) this.pending.set(agentId, password);
      return;
    }
    const row = await this.store.byId(agentId);
    const wanted = row && mayHoldAccount(row);
    let have = this.unsure.has(agentId)
      ? await this.askHeld(control, agentId, this.held.get(agentId)?.login ?? row?.mqtt_login)
      : (this.held.get(agentId) ?? NOTHING_HELD);
    const work: DynsecCommand[] = [];
    if (have.login !== null && (reset || !wanted || have.login !== row.mqtt_login)) {
      work.push({ command: 'deleteClient', username: have.login }); // which also disconnects it
      have = { ...have, login: null, roleGiven: false };
    }
    let next: HeldAccount | null = null;
    if (!wanted) {
      if (have.acls !== null) work.push({ command: 'deleteRole', rolename: roleOf(agentId) });
    } else {
      const made = this.agentCommands(row, have, password);
      work.push(...made.commands);
      next = made.next;
    }
    if (work.length > 0) {
      let responses: DynsecResponse[];
      try {
        responses = await control.run(work);
        check(responses, /(?!)/); // nothing tolerated: "already exists" means `held` was stale
        this.unsure.delete(agentId);
      } catch (error) {
        this.unsure.add(agentId);
        // Another node (or an admin) made it meanwhile: ask what the broker holds and go again, once.
        if (retry && ALREADY.test((error as Error).message)) return this.syncAgent(agentId, password, false, false);
        throw error;
      }
    }
    if (next) this.held.set(agentId, next);
    else this.held.delete(agentId);
    this.pending.delete(agentId);
  }

  /** Everything: default access, the backend's account, every agent; strays removed. */
  private async reconcile(control: DynsecClient): Promise<{ agents: number; removed: number }> {
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

    // The backend's own role and client. Its password is set only when the client is made (or its
    // link is refused): setting it would disconnect every node's link.
    const work = roleCommands(BACKEND_ACCOUNT, roles.get(BACKEND_ACCOUNT) ?? null, rulesToAcls(BACKEND_TOPIC_RULES));
    const backendClient = clients.get(BACKEND_ACCOUNT);
    if (!backendClient)
      work.push({
        command: 'createClient',
        username: BACKEND_ACCOUNT,
        password: this.backendPassword,
        textdescription: 'MDM Console backend',
        roles: [{ rolename: BACKEND_ACCOUNT }],
      });
    else if (!backendClient.roles.includes(BACKEND_ACCOUNT))
      work.push({ command: 'addClientRole', username: BACKEND_ACCOUNT, rolename: BACKEND_ACCOUNT });

    const wanted = (await this.store.connectable()).filter(mayHoldAccount);
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
      const made = this.agentCommands(row, have, this.pending.get(row.id));
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
    this.held.clear();
    for (const [agentId, account] of nextHeld) this.held.set(agentId, account);
    this.unsure.clear();
    this.pending.clear();
    return { agents: wanted.length, removed };
  }
}
