import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';

/**
 * Where policies go: retained messages on the broker. The broker module provides it (one small
 * interface, so an external broker can take its place).
 */
export interface PolicyChannel {
  /** Publishes `payload` retained on `topic`; an empty payload clears the retained message. */
  publishRetained(topic: string, payload: string): Promise<void>;
  /** The topics under `prefix/` on which the broker keeps a retained message. */
  retainedTopicsUnder?(prefix: string): Promise<string[]>;
}

/**
 * The assignments' transactions and the retained messages they publish: a message goes out once
 * the transaction that decided it has committed (a rolled-back one publishes nothing).
 */
export class PolicyOutbox {
  private readonly work: UnitOfWork;
  private readonly events: EventLog;
  private channel: PolicyChannel | null = null;

  constructor(work: UnitOfWork, events: EventLog) {
    this.work = work;
    this.events = events;
  }

  attach(channel: PolicyChannel | null): void {
    this.channel = channel;
  }

  /** A transaction whose policy messages go out once it has committed. */
  transact<T>(work: () => Promise<T>): Promise<T> {
    return this.work.run(work);
  }

  /** Publishes after the current transaction commits (at once outside one), in order with its events. */
  afterCommit(work: () => Promise<void>): Promise<void> {
    return this.work.afterCommit(() => void work());
  }

  /** The topics under `prefix/` the broker retains a message on ([] without a broker, or when it cannot tell). */
  async retainedTopicsUnder(prefix: string): Promise<string[]> {
    try {
      return (await this.channel?.retainedTopicsUnder?.(prefix)) ?? [];
    } catch {
      return [];
    }
  }

  /** Publishes retained now; a failure is noted in the events, never thrown. */
  async publish(topic: string, payload: string): Promise<void> {
    if (!this.channel) return;
    try {
      await this.channel.publishRetained(topic, payload);
    } catch (error) {
      await this.events.record(
        'deployment.publish_failed',
        `Policy on ${topic} not published: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
}
