// The broker's pure rules: DESIGN.md's topic ACL and the login throttle.
import { describe, expect, it } from 'vitest';
import {
  isUsableAgentTopic,
  mayPublish,
  mayReceive,
  maySubscribe,
  type AgentIdentity,
} from '../../../src-main/backend/broker/acl.ts';
import { FailureThrottle } from '../../../src-main/backend/broker/auth-throttle.ts';

const agent: AgentIdentity = { id: 7, entityId: 1, fleetId: 3, topic: '/1/agent/R58ABC', name: 'R58ABC' };
const T = agent.topic;

describe('topic rules', () => {
  it('lets an agent publish only under its own Status and MdmManifest', () => {
    for (const topic of [`${T}/Status/Online`, `${T}/Status/Ping`, `${T}/Status`, `${T}/MdmManifest/Report`])
      expect(mayPublish(agent, topic), topic).toBe(true);
    for (const topic of [
      `${T}/Command/Lock`,
      `${T}/Policy/x`,
      `${T}/StatusX`,
      `${T}`,
      '/1/agent/R58ABCD/Status/Online',
      '/1/agent/OTHER/Status/Online',
      'MdmManifest/x',
      '/1/fleet/3/x',
      '$SYS/x',
    ]) {
      expect(mayPublish(agent, topic), topic).toBe(false);
    }
  });

  it('delivers its Command and Policy topics, MdmManifest/# and its fleet, nothing else', () => {
    for (const topic of [
      `${T}/Command/Ping`,
      `${T}/Policy/camera`,
      'MdmManifest/apps',
      'MdmManifest',
      '/1/fleet/3',
      '/1/fleet/3/apps',
    ])
      expect(mayReceive(agent, topic), topic).toBe(true);
    for (const topic of [
      `${T}/Status/Online`,
      `${T}/CommandX`,
      '/1/fleet/33/apps',
      '/1/fleet/4/apps',
      '/2/fleet/3/apps',
      '/1/agent/OTHER/Command/Lock',
      '$SYS/broker/x',
    ]) {
      expect(mayReceive(agent, topic), topic).toBe(false);
    }
  });

  it('allows the subscription T/# and filters within what it may receive', () => {
    for (const filter of [
      `${T}/#`,
      `${T}/Command/#`,
      `${T}/Command/+`,
      `${T}/Policy/#`,
      'MdmManifest/#',
      '/1/fleet/3/#',
      '/1/fleet/3',
    ])
      expect(maySubscribe(agent, filter), filter).toBe(true);
    for (const filter of [
      '#',
      '+',
      '$SYS/#',
      '+/agent/#',
      '/1/agent/+/Command/#',
      '/+/agent/R58ABC/#',
      `${T}/+`,
      `${T}/+/Ping`,
      `${T}/Status/#`,
      `${T}`,
      '/1/agent/R58ABCD/#',
      '/1/fleet/+/#',
      '/1/fleet/4/#',
      'MdmManifes/#',
    ]) {
      expect(maySubscribe(agent, filter), filter).toBe(false);
    }
  });

  it('grants the reference names as the Flyve ACL does: FlyvemdmManifest/# to read, T/FlyvemdmManifest/# to write', () => {
    expect(mayPublish(agent, `${T}/FlyvemdmManifest/Report`)).toBe(true);
    expect(mayPublish(agent, 'FlyvemdmManifest/Status/Version')).toBe(false);
    expect(mayReceive(agent, 'FlyvemdmManifest/Status/Version')).toBe(true);
    expect(maySubscribe(agent, 'FlyvemdmManifest/Status/Version')).toBe(true);
    expect(maySubscribe(agent, 'FlyvemdmManifest/#')).toBe(true);
    for (const filter of ['FlyvemdmManifestX/#', 'Flyvemdm/#', '+/Status/Version'])
      expect(maySubscribe(agent, filter), filter).toBe(false);
  });

  it('refuses agent topics that MQTT would misread', () => {
    expect(isUsableAgentTopic('/1/agent/R58ABC')).toBe(true);
    expect(isUsableAgentTopic('/12/agent/0f8fad5b-d9cb-469f-a165-70867728950e')).toBe(true);
    for (const topic of ['/1/agent/A/B', '/1/agent/A+', '/1/agent/#', '/1/agent/', 'agent/A', '/1/agent/A\u0000'])
      expect(isUsableAgentTopic(topic), topic).toBe(false);
  });
});

describe('the login throttle', () => {
  it('lets a few failures through, then doubles the wait per failure up to a ceiling', () => {
    let now = 0;
    const throttle = new FailureThrottle({ freeFailures: 3, baseDelayMs: 500, maxDelayMs: 4000 }, () => now);
    for (let i = 0; i < 3; i += 1) {
      expect(throttle.delayFor('10.0.0.1')).toBe(0);
      throttle.fail('10.0.0.1');
    }
    expect(throttle.delayFor('10.0.0.1')).toBe(500);
    throttle.fail('10.0.0.1');
    expect(throttle.delayFor('10.0.0.1')).toBe(1000);
    throttle.fail('10.0.0.1');
    throttle.fail('10.0.0.1');
    throttle.fail('10.0.0.1');
    expect(throttle.delayFor('10.0.0.1')).toBe(4000);
    expect(throttle.delayFor('10.0.0.2')).toBe(0); // per address
    now += 16 * 60_000; // forgotten after a quiet while
    expect(throttle.delayFor('10.0.0.1')).toBe(0);
  });

  it('says how much of its wait a throttled key has left (the RabbitMQ endpoint refuses it unchecked until 0)', () => {
    let now = 1_000_000;
    const throttle = new FailureThrottle({ freeFailures: 2, baseDelayMs: 500, maxDelayMs: 4000 }, () => now);
    throttle.fail('k');
    expect(throttle.waitLeft('k')).toBe(0);
    throttle.fail('k');
    expect(throttle.waitLeft('k')).toBe(500);
    now += 300;
    expect(throttle.waitLeft('k')).toBe(200);
    now += 200;
    expect(throttle.waitLeft('k')).toBe(0); // one attempt may be checked now
    throttle.fail('k'); // a wrong one: the next wait is twice as long, from now
    expect(throttle.waitLeft('k')).toBe(1000);
    // With no free failures (a node past its scan count), one failure starts the wait.
    throttle.fail('j');
    expect([throttle.waitLeft('j'), throttle.waitLeft('j', 0)]).toEqual([0, 500]);
  });

  it('forgets an address on success, and keeps a bounded number of addresses', () => {
    const throttle = new FailureThrottle({ freeFailures: 0, maxAddresses: 2 });
    throttle.fail('a');
    expect(throttle.isThrottled('a')).toBe(true);
    throttle.succeed('a');
    expect(throttle.isThrottled('a')).toBe(false);
    throttle.fail('a');
    throttle.fail('b');
    throttle.fail('c');
    expect(throttle.isThrottled('a')).toBe(false); // the oldest was dropped
    expect(throttle.isThrottled('c')).toBe(true);
  });
});
