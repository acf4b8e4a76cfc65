import { Aedes } from 'aedes';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { IndexedMemoryPersistence, RetainedIndex, type RetainedPacket } from '../../../src-main/backend/broker/retained-index.ts';

// The matcher aedes-persistence itself uses for retained messages: the index must agree with it.
const { QlobberTrue } = createRequire(import.meta.url)('qlobber') as {
  QlobberTrue: new (options: object) => { add(pattern: string): void; test(topic: string): boolean };
};
const qlobberMatches = (filter: string, topic: string) => {
  const matcher = new QlobberTrue({ wildcard_one: '+', wildcard_some: '#', separator: '/' });
  matcher.add(filter);
  return matcher.test(topic);
};

const packet = (topic: string, payload = 'x'): RetainedPacket => ({
  cmd: 'publish',
  topic,
  payload: Buffer.from(payload),
  qos: 1,
  retain: true,
});
const topicsOf = (packets: RetainedPacket[]) => packets.map((p) => p.topic).sort();

const TOPICS = [
  '/1/agent/R58A/Status/Online',
  '/1/agent/R58A/Command/Lock',
  '/1/agent/R58A',
  '/1/agent/R58B/Status/Online',
  '/1/agent/R58B/Status',
  '/2/agent/R58A/Status/Online',
  '/1/fleet/3/Policy/x',
  'MdmManifest/app',
  'MdmManifest',
  'a//b',
  'a/',
  '$SYS/x/uptime',
  '',
  '/',
  '/b',
  'a',
];
const FILTERS = [
  '/1/agent/R58A/#',
  '/1/agent/+/Status/Online',
  '/1/agent/R58A',
  '/+/agent/R58A/#',
  'MdmManifest/#',
  '/1/fleet/3/#',
  '#',
  '+/#',
  '+',
  'a/+/b',
  'a/+',
  '/1/+',
  '$SYS/#',
  '/1/agent/R58B/Status/+',
  'nothing/#',
  '+/+',
  '+/b',
  'a/#',
  '',
  '/',
];

describe('RetainedIndex', () => {
  it('matches every filter exactly as aedes-persistence (qlobber) does', () => {
    const index = new RetainedIndex();
    for (const topic of TOPICS) index.store(packet(topic));
    expect(index.size).toBe(TOPICS.length);
    for (const filter of FILTERS) {
      expect(topicsOf(index.match(filter)), filter).toEqual(TOPICS.filter((topic) => qlobberMatches(filter, topic)).sort());
    }
  });

  it('keeps the last message of a topic, and an empty payload removes it (pruning empty levels)', () => {
    const index = new RetainedIndex();
    index.store(packet('/1/agent/A/Status/Online', '{"online":true}'));
    index.store(packet('/1/agent/A/Status/Online', '{"online":false}'));
    expect(index.size).toBe(1);
    expect(index.match('/1/agent/A/#').map((p) => p.payload.toString())).toEqual(['{"online":false}']);
    index.store(packet('/1/agent/A/Command/Lock', '{"lock":"now"}'));
    index.store(packet('/1/agent/A/Status/Online', ''));
    expect(topicsOf(index.match('#'))).toEqual(['/1/agent/A/Command/Lock']);
    index.store(packet('/1/agent/A/Command/Lock', ''));
    index.store(packet('/1/agent/missing', ''));
    expect(index.size).toBe(0);
    expect(index.match('#')).toEqual([]);
    expect((index as unknown as { root: { children?: unknown } }).root.children).toBeUndefined();
  });

  it('keeps matching as levels gain and lose siblings (one child inline, a Map from two)', () => {
    const index = new RetainedIndex();
    const topics = ['/1/agent/A/Status/Online', '/1/agent/A/Command/Lock', '/1/agent/B/Status/Online', '/1/agent/A/Command/Wipe'];
    for (const topic of topics) index.store(packet(topic));
    expect(topicsOf(index.match('/1/agent/A/#'))).toEqual([
      '/1/agent/A/Command/Lock',
      '/1/agent/A/Command/Wipe',
      '/1/agent/A/Status/Online',
    ]);
    expect(topicsOf(index.match('/1/agent/+/Status/Online'))).toEqual(['/1/agent/A/Status/Online', '/1/agent/B/Status/Online']);
    index.store(packet('/1/agent/A/Command/Lock', ''));
    index.store(packet('/1/agent/A/Status/Online', ''));
    expect(topicsOf(index.match('/1/agent/A/#'))).toEqual(['/1/agent/A/Command/Wipe']);
    expect(topicsOf(index.match('/1/agent/+/+/+'))).toEqual(['/1/agent/A/Command/Wipe', '/1/agent/B/Status/Online']);
    index.store(packet('/1/agent/A/Command/Wipe', ''));
    expect(topicsOf(index.match('#'))).toEqual(['/1/agent/B/Status/Online']);
    expect(index.size).toBe(1);
  });

  it('stores a copy of the packet', () => {
    const index = new RetainedIndex();
    const original = packet('t/1');
    index.store(original);
    original.topic = 'changed';
    expect(index.match('t/1')[0]!.topic).toBe('t/1');
  });

  it('gives a message once per matching filter, as aedes does', () => {
    const index = new RetainedIndex();
    index.store(packet('/1/agent/A/Command/Lock'));
    expect([...index.matchAll(['/1/agent/A/#', '/1/agent/A/Command/#'])]).toHaveLength(2);
  });

  it('is the persistence of a real aedes broker, which delivers retained messages on SUBSCRIBE from the index', async () => {
    const persistence = new IndexedMemoryPersistence();
    const broker = await Aedes.createBroker({ persistence });
    try {
      await new Promise<void>((resolve, reject) =>
        broker.publish(
          {
            cmd: 'publish',
            topic: '/1/agent/A/Status/Online',
            payload: Buffer.from('{"online":true}'),
            qos: 0,
            retain: true,
            dup: false,
          },
          (error) => (error ? reject(error) : resolve()),
        ),
      );
      expect(persistence.retainedCount).toBe(1);
      expect(persistence.retained('/1/agent/A/Status/Online')).toBe('{"online":true}');
      const found: string[] = [];
      for await (const retained of persistence.createRetainedStreamCombi(['/1/agent/A/#', '/1/agent/B/#']))
        found.push((retained as RetainedPacket).topic);
      expect(found).toEqual(['/1/agent/A/Status/Online']);
    } finally {
      await new Promise<void>((resolve) => broker.close(() => resolve()));
    }
  });
});
