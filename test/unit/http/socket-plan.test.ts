/**
 * The socket plan: descriptors shared by need between the HTTP listeners, downloads and the MQTT
 * broker, each HTTP share keeping a reserve the broker never takes (http/socket-limits.ts).
 */
import { describe, expect, it } from 'vitest';
import { DescriptorBudget, planSockets, shareDescriptors } from '../../../src-main/backend/http/socket-limits.ts';

/** Takes from `share` until it refuses; how many it took. */
function fill(share: { canAcquire(): boolean; acquire(): void }, atMost = 1_000_000): number {
  let taken = 0;
  while (taken < atMost && share.canAcquire()) {
    share.acquire();
    taken++;
  }
  return taken;
}

describe('planSockets', () => {
  it('at a 20,000-descriptor limit the broker may hold as many agents as mosquitto does there (19,843), less only the HTTP reserves', () => {
    const plan = planSockets(20_000);
    // Before: a fixed half, 9,872.
    expect(plan.mqttConnections).toBeGreaterThanOrEqual(19_843);
    const reserved = plan.reserves.admin + plan.reserves.agent + plan.reserves.downloads;
    expect(plan.mqttConnections + reserved).toBe(plan.shared);
    expect(plan.shared).toBeLessThan(20_000 - 32); // the process's own descriptors (33 at rest) stay out of it
    expect(plan.reserves.admin).toBeGreaterThan(0);
    expect(plan.reserves.agent).toBeGreaterThan(0);
  });

  it('keeps the HTTP caps against floods, and every figure within the limit', () => {
    for (const limit of [512, 1024, 2048, 20_000, 1_048_576]) {
      const plan = planSockets(limit);
      expect(plan.agentConnectionsPerAddress).toBeLessThan(plan.agentConnections);
      expect(plan.agentConnections).toBeLessThanOrEqual(plan.shared);
      expect(plan.mqttConnections).toBeLessThanOrEqual(plan.shared);
      expect(plan.shared).toBeLessThan(limit);
    }
    expect(planSockets(1_048_576).agentConnections).toBe(10_000);
    expect(planSockets(1_048_576).mqttConnections).toBe(20_000);
  });
});

describe('DescriptorBudget', () => {
  it('the broker takes all but the HTTP reserves; an admin, an agent request and a download still get a descriptor', () => {
    const shares = shareDescriptors(planSockets(20_000));
    expect(fill(shares.mqtt)).toBe(planSockets(20_000).mqttConnections);
    expect(shares.mqtt.canAcquire()).toBe(false);
    expect(fill(shares.admin)).toBe(shares.admin.reserve);
    expect(fill(shares.agent)).toBe(shares.agent.reserve);
    expect(fill(shares.downloads)).toBe(shares.downloads.reserve);
    expect(shares.budget.free()).toBe(0);
  });

  it('by need: HTTP beyond its reserve takes what the broker does not hold, and gives it back to the broker', () => {
    const budget = new DescriptorBudget(100);
    const http = budget.share('http', 10);
    const mqtt = budget.share('mqtt');
    expect(fill(http, 60)).toBe(60); // the broker holds nothing: HTTP may take more than half
    expect(fill(mqtt)).toBe(40);
    expect(http.canAcquire()).toBe(false); // beyond its reserve, and nothing is free
    for (let i = 0; i < 55; i++) http.release(); // a burst is over: 5 held
    expect(http.held()).toBe(5);
    expect(fill(mqtt)).toBe(50); // the broker takes it, all but the reserve of 10
    expect(mqtt.held()).toBe(90);
    expect(fill(http)).toBe(5); // the reserve is HTTP's whatever the broker holds
    expect(budget.free()).toBe(0);
    mqtt.release();
    expect(http.canAcquire()).toBe(true); // one more, beyond the reserve, as the broker gave one back
  });

  it('a release never goes below nothing, and reserves cannot exceed the total', () => {
    const budget = new DescriptorBudget(10);
    const share = budget.share('a', 4);
    share.release();
    expect(share.held()).toBe(0);
    expect(fill(budget.share('b'))).toBe(6);
    expect(() => budget.share('c', 1)).toThrow(/exceed/);
    expect(() => budget.share('a')).toThrow(/exists/);
  });
});
