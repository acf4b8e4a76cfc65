// The one rule table as each external broker receives it: dynamic-security ACLs for Mosquitto,
// routing keys for RabbitMQ; and the broker URLs of the serve flags.
import { describe, expect, it } from 'vitest';
import {
  agentTopicRules,
  isRabbitSafeTopic,
  mayPublish,
  routingKeyToTopic,
  rulesAllowPublish,
  rulesAllowSubscribe,
  BACKEND_TOPIC_RULES,
} from '../../../src-main/backend/broker/acl.ts';
import { parseBrokerUrl } from '../../../src-main/backend/broker/broker-url.ts';
import { rulesToAcls } from '../../../src-main/backend/broker/dynsec.ts';

const agent = { id: 7, entityId: 1, fleetId: 3, topic: '/1/agent/R58ABC', name: 'R58ABC' };

describe('the rule table for external brokers', () => {
  it('becomes dynamic-security ACLs: send = publish, receive = deliveries and subscription patterns, T/# a literal subscription', () => {
    const acls = rulesToAcls(agentTopicRules(agent));
    expect(acls).toContainEqual({ acltype: 'publishClientSend', topic: '/1/agent/R58ABC/Status/#', allow: true });
    expect(acls).toContainEqual({ acltype: 'publishClientReceive', topic: '/1/agent/R58ABC/Command/#', allow: true });
    expect(acls).toContainEqual({ acltype: 'publishClientReceive', topic: '/1/fleet/3/#', allow: true });
    expect(acls).toContainEqual({ acltype: 'subscribeLiteral', topic: '/1/agent/R58ABC/#', allow: true });
    expect(acls.filter((acl) => acl.acltype === 'publishClientSend').map((acl) => acl.topic)).toEqual([
      '/1/agent/R58ABC/Status/#',
      '/1/agent/R58ABC/Policy/+/Task/+/Status/Task/+',
      '/1/agent/R58ABC/MdmManifest/#',
      '/1/agent/R58ABC/FlyvemdmManifest/#',
    ]);
    expect(acls.every((acl) => acl.allow)).toBe(true);
  });

  it('answers RabbitMQ routing keys as the embedded broker answers topics', () => {
    const rules = agentTopicRules(agent);
    expect(routingKeyToTopic('.1.agent.R58ABC.Status.Online')).toBe('/1/agent/R58ABC/Status/Online');
    expect(rulesAllowPublish(rules, routingKeyToTopic('.1.agent.R58ABC.Status.Online'))).toBe(
      mayPublish(agent, '/1/agent/R58ABC/Status/Online'),
    );
    expect(rulesAllowPublish(rules, routingKeyToTopic('.1.agent.OTHER.Status.Online'))).toBe(false);
    expect(rulesAllowPublish(rules, routingKeyToTopic('.1.agent.R58ABC.Command.Lock'))).toBe(false);
    expect(rulesAllowSubscribe(rules, routingKeyToTopic('.1.agent.R58ABC.#'))).toBe(true);
    expect(rulesAllowSubscribe(rules, routingKeyToTopic('.1.fleet.3.#'))).toBe(true);
    for (const key of ['#', '.1.agent.*.#', '.1.fleet.*.#', '.1.agent.R58ABC.Status.#', '.1.agent.R58ABC.*'])
      expect(rulesAllowSubscribe(rules, routingKeyToTopic(key)), key).toBe(false);
    expect(isRabbitSafeTopic('/1/agent/R58ABC')).toBe(true);
    expect(isRabbitSafeTopic('/1/agent/my.phone')).toBe(false);
  });

  it("gives the backend commands and reports, never the agents' side", () => {
    expect(rulesAllowPublish(BACKEND_TOPIC_RULES, '/1/agent/R58ABC/Command/Lock')).toBe(true);
    expect(rulesAllowPublish(BACKEND_TOPIC_RULES, '/1/fleet/3/Policy/x/Task/1')).toBe(true);
    expect(rulesAllowPublish(BACKEND_TOPIC_RULES, '/1/agent/R58ABC/Status/Online')).toBe(false);
    expect(rulesAllowSubscribe(BACKEND_TOPIC_RULES, '/+/agent/+/Status/#')).toBe(true);
    expect(rulesAllowSubscribe(BACKEND_TOPIC_RULES, '#')).toBe(false);
  });

  it('task reports: agents publish their own (T/Status/Task, rc.6 under their own policy topic), the backend reads them', () => {
    expect(mayPublish(agent, '/1/agent/R58ABC/Status/Task/12')).toBe(true);
    expect(mayPublish(agent, '/1/agent/R58ABC/Policy/deployApp/Task/12/Status/Task/12')).toBe(true);
    // Not the policy itself, nor another agent's, nor (external brokers cannot tell who sent it) the fleet's.
    expect(mayPublish(agent, '/1/agent/R58ABC/Policy/deployApp/Task/12')).toBe(false);
    expect(mayPublish(agent, '/1/agent/OTHER/Status/Task/12')).toBe(false);
    expect(mayPublish(agent, '/1/fleet/3/Policy/deployApp/Task/12/Status/Task/12')).toBe(false);
    expect(rulesAllowSubscribe(BACKEND_TOPIC_RULES, '/+/agent/+/Policy/+/Task/+/Status/Task/+')).toBe(true);
    expect(routingKeyToTopic('.1.agent.R58ABC.Policy.deployApp.Task.12.Status.Task.12')).toBe(
      '/1/agent/R58ABC/Policy/deployApp/Task/12/Status/Task/12',
    );
    // The backend may read back the policies it keeps retained (MqttBroker.retained).
    expect(rulesAllowSubscribe(BACKEND_TOPIC_RULES, '/1/fleet/3/Policy/deployApp/Task/12')).toBe(true);
  });
});

describe('broker URLs', () => {
  it('reads credentials, TLS and a cluster of hosts', () => {
    expect(parseBrokerUrl('mqtts://admin:p%40ss@mq1.example.com:8883,mq2.example.com')).toEqual({
      tls: true,
      username: 'admin',
      password: 'p@ss',
      servers: [
        { host: 'mq1.example.com', port: 8883 },
        { host: 'mq2.example.com', port: 8883 },
      ],
      display: 'mqtts://admin@mq1.example.com:8883,mq2.example.com',
    });
    expect(parseBrokerUrl('mqtt://10.0.0.5').servers).toEqual([{ host: '10.0.0.5', port: 1883 }]);
  });

  it('refuses what is not a broker URL, with the flag named', () => {
    for (const bad of ['http://x:1883', 'mqtt://', 'mqtt://h:99999', 'mqtt://h:1883/path', 'h:1883'])
      expect(() => parseBrokerUrl(bad), bad).toThrow(/--mqtt-broker-url/);
  });
});
