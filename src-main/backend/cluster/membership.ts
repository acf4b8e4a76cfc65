/**
 * This node's place among the nodes of one database, wired once for server.ts: the registry (who
 * runs: cluster/nodes.ts), the duties (work one node does at a time: cluster/duties.ts) and the
 * periodic duties built on them, and the listing the console shows (each node with the duties it
 * holds). On SQLite there is one node: it always wins every duty.
 */
import type { ClusterNode } from '../../../src-shared/contract/index.ts';
import type { Sql } from '../db/sql.ts';
import { Duties, type DutyTiming } from './duties.ts';
import { SqlDutyRepository } from './duty-repository.ts';
import { NodeRegistry, type NodeAddress, type NodeTiming } from './nodes.ts';
import { NodeRepository } from './repository.ts';

export interface MembershipOptions {
  nodeName: string;
  /** embedded, mosquitto or rabbitmq. */
  brokerMode: string;
  dutyTiming?: Partial<DutyTiming> | undefined;
  nodeTiming?: Partial<NodeTiming> | undefined;
  /** Tests only: several nodes in one process, each with its own embedded broker (cluster/nodes.ts). */
  embeddedBrokerPerNode?: boolean | undefined;
}

export class ClusterMembership {
  readonly duties: Duties;
  readonly registry: NodeRegistry;

  constructor(db: Sql, options: MembershipOptions) {
    this.duties = new Duties({
      repository: new SqlDutyRepository(db),
      nodeName: options.nodeName,
      sole: db.engine === 'sqlite',
      timing: options.dutyTiming,
      // Given up (another node, or this one at the next round, tries again): said where the operator looks.
      onError: (duty, error) => console.error(`duty ${duty}: ${error instanceof Error ? error.message : String(error)}`),
    });
    this.registry = new NodeRegistry({
      repository: new NodeRepository(db),
      name: options.nodeName,
      brokerMode: options.brokerMode,
      timing: options.nodeTiming,
      embeddedBrokerPerNode: options.embeddedBrokerPerNode,
      onProblem: (message) => console.error(`node ${options.nodeName}: ${message}`),
    });
  }

  get nodeName(): string {
    return this.duties.nodeName;
  }

  /** Runs `work` every `everyMs` while this node holds `duty`, and once when it takes it. */
  periodicDuty(duty: string, everyMs: number, work: () => Promise<unknown>): void {
    let timer: NodeJS.Timeout | null = null;
    let running: Promise<unknown> = Promise.resolve();
    const once = () => {
      running = running.then(work).catch(() => {}); // tried again at the next tick
      return running;
    };
    this.duties.whileHeld(
      duty,
      async () => {
        timer = setInterval(() => void once(), everyMs);
        timer.unref();
        await once();
      },
      async () => {
        if (timer) clearInterval(timer);
        timer = null;
        await running;
      },
    );
  }

  /** Registers this node as running at `address`, or refuses with a StartupError (its name or broker). */
  join(address: NodeAddress): Promise<void> {
    return this.registry.join(address);
  }

  /** Marks this node stopped and lets its name go. */
  leave(): Promise<void> {
    return this.registry.leave();
  }

  /** Takes the duties' leases it can, and starts their work (on SQLite: all of it). */
  startDuties(): Promise<void> {
    return this.duties.start();
  }

  /** Stops the duties' work and releases their leases (another node takes them at its next round). */
  closeDuties(): Promise<void> {
    return this.duties.close();
  }

  /** The names of the nodes that may still run work: this one, and those heartbeating (the jobs sweeper's answer). */
  runningNames(): Promise<string[]> {
    return this.registry.runningNames();
  }

  /** Every registered node, with whether it runs and the duties it holds now (the console's status). */
  async nodes(): Promise<(ClusterNode & { duties: string[] })[]> {
    const [listed, leases] = await Promise.all([this.registry.list(), this.duties.leases()]);
    const held = leases.filter((lease) => lease.live);
    return listed.map((node) => ({
      ...node,
      duties: held.filter((lease) => lease.holder === node.name).map((lease) => lease.duty),
    }));
  }
}
