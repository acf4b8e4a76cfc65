// The pure parts of the Flyve dialect: the reference deeplink encoding and its round trips through
// both decoders, the URL aliases, the inventory parser on the simulator's XML, positions.
import { describe, expect, it } from 'vitest';
import { agentApiUrl } from '../../../src-main/backend/agent-api/flyve-aliases.ts';
import { positionOf } from '../../../src-main/backend/agents/reports.ts';
import {
  decodeDeeplinkData,
  deeplinkEncodingOf,
  encodeDeeplinkData,
  encodeDeeplinkFor,
  encodeFlyveDeeplinkData,
  fieldsUnfitForFlyve,
  type DeeplinkFields,
} from '../../../src-main/backend/deeplink/codec.ts';
import { InventoryError, parseInventory } from '../../../src-main/backend/inventory/fusion-inventory.ts';
import { decodeDeeplink } from '../../../src-main/device/deeplink.ts';
import { dialectOf } from '../../../src-main/device/dialect.ts';
import { fakeInventoryXml } from '../../../src-main/device/inventory.ts';

const fields: DeeplinkFields = {
  backendUrl: 'http://192.168.1.20:8080/api',
  userToken: 'a'.repeat(40),
  invitationToken: 'b'.repeat(64),
  helpdeskName: 'IT "Support", floor 2',
  helpdeskPhone: '+33 1 23 45 67 89',
  helpdeskWebsite: 'https://help.example.com/a\\b',
  helpdeskEmail: 'help@example.com',
};

describe('the reference deeplink encoding', () => {
  it('is base64(addcslashes(implode(";", fields), "\\;"))', () => {
    const text = Buffer.from(encodeFlyveDeeplinkData(fields), 'base64').toString();
    expect(text).toBe(
      `http://192.168.1.20:8080/api\\;${'a'.repeat(40)}\\;${'b'.repeat(64)}\\;IT "Support", floor 2\\;+33 1 23 45 67 89\\;https://help.example.com/a\\\\b\\;help@example.com`,
    );
    // What the Android agent does with it: split on the two characters \; (no unescaping).
    expect(text.split('\\;').slice(0, 3)).toEqual([fields.backendUrl, fields.userToken, fields.invitationToken]);
  });

  it('round-trips through the backend decoder (page, admin API) and the simulator whatever the setting', () => {
    for (const app of ['spec', 'flyve'] as const) {
      const data = encodeDeeplinkFor(app, fields);
      expect(deeplinkEncodingOf(data)).toBe(app);
      expect(decodeDeeplinkData(data)).toEqual(fields);
      const device = decodeDeeplink(`flyve://register?data=${encodeURIComponent(data)}`);
      expect(device.format).toBe(app === 'flyve' ? 'legacy' : 'csv');
      expect(device.invitationToken).toBe(fields.invitationToken);
      expect(device.helpdeskName).toBe(fields.helpdeskName);
    }
    // Spec mode keeps quoting a ";" as before; the reference encoding cannot carry one.
    const withSemicolon = { ...fields, helpdeskName: 'IT; floor 2' };
    expect(decodeDeeplinkData(encodeDeeplinkData(withSemicolon)).helpdeskName).toBe('IT; floor 2');
    expect(fieldsUnfitForFlyve({ helpdesk_name: 'IT; floor 2', helpdesk_phone: '1' })).toMatch(
      /^helpdesk_name cannot contain ";"/,
    );
    expect(fieldsUnfitForFlyve({ helpdesk_name: 'IT, floor 2' })).toBeNull();
  });
});

describe('agent API aliases', () => {
  it('maps every Flyve resource name to ours and drops one trailing slash, under /api/ only', () => {
    expect(agentApiUrl('/api/PluginFlyvemdmAgent')).toBe('/api/PluginMdmAgent');
    expect(agentApiUrl('/api/PluginFlyvemdmAgent/12/?session_token=x')).toBe('/api/PluginMdmAgent/12?session_token=x');
    expect(agentApiUrl('/api/search/PluginFlyvemdmTaskstatus/?criteria[0][field]=5')).toBe(
      '/api/search/PluginMdmTaskstatus?criteria[0][field]=5',
    );
    expect(agentApiUrl('/api/PluginFlyvemdmTaskstatus/3')).toBe('/api/PluginMdmTaskstatus/3');
    expect(agentApiUrl('/api/changeActiveProfile/?profiles_id=2')).toBe('/api/changeActiveProfile?profiles_id=2');
    expect(agentApiUrl('/deeplink/?data=abc')).toBe('/deeplink/?data=abc');
    expect(agentApiUrl('/api/')).toBe('/api/');
    expect(agentApiUrl('/api/PluginFlyvemdm')).toBe('/api/PluginFlyvemdm');
    expect(agentApiUrl('/api/Computer/1?x=PluginFlyvemdmAgent/')).toBe('/api/Computer/1?x=PluginFlyvemdmAgent/');
  });
});

describe('inventories', () => {
  it('reads what a phone reports from the simulator FusionInventory XML', () => {
    const xml = fakeInventoryXml({ serial: 'R58N1234ABCD', uuid: 'u-1', type: 'android' });
    const summary = parseInventory(xml);
    expect(summary.os_name).toBe('Android');
    expect(summary.serial).toBe('R58N1234ABCD');
    expect(summary.model).toMatch(/\S/);
    expect(summary.manufacturer).toMatch(/\S/);
    expect(summary.imei).toMatch(/^35\d{13}$/);
    expect(summary.battery?.chemistry).toBe('Li-ion');
    expect(summary.storage[0]).toMatchObject({ name: '/data', total_mb: expect.any(Number), free_mb: expect.any(Number) });
    expect(summary.memory_mb).toBeGreaterThan(1000);
    expect(summary.applications.map((a) => a.package)).toContain('org.flyve.mdm.agent');
    // The same serial, the same phone.
    expect(parseInventory(fakeInventoryXml({ serial: 'R58N1234ABCD', uuid: 'u-1', type: 'android' })).model).toBe(summary.model);
    expect(parseInventory(fakeInventoryXml({ serial: 'C02X', uuid: 'u', type: 'apple' })).os_name).toBe('iOS');
  });

  it('refuses what is not a FusionInventory XML with a readable message, and expands no entity', () => {
    expect(() => parseInventory('hello')).toThrow(InventoryError);
    expect(() => parseInventory('<REQUEST><CONTENT>')).toThrow(/not well-formed/);
    expect(() => parseInventory('<INVENTORY/>')).toThrow(/REQUEST\/CONTENT/);
    expect(() => parseInventory(`<REQUEST><CONTENT>${'x'.repeat(3 * 1024 * 1024)}</CONTENT></REQUEST>`)).toThrow(/larger than/);
    const bomb = `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "${'A'.repeat(100)}"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]><REQUEST><CONTENT><BIOS><SMODEL>&b;</SMODEL></BIOS></CONTENT></REQUEST>`;
    let model: string | null;
    try {
      model = parseInventory(bomb).model;
    } catch (error) {
      expect(error).toBeInstanceOf(InventoryError);
      model = null;
    }
    expect(model === null || model === '&b;').toBe(true);
  });

  it('reads positions as the agents send them', () => {
    expect(positionOf({ latitude: '48.85', longitude: '2.35', datetime: 1700000000 })).toEqual({
      latitude: 48.85,
      longitude: 2.35,
      locatedAt: '2023-11-14T22:13:20.000Z',
      gpsOff: false,
    });
    expect(positionOf({ gps: 'off', datetime: '1700000000' })).toMatchObject({ latitude: null, gpsOff: true });
    expect(positionOf({ latitude: 'x', longitude: '2' })).toHaveProperty('error');
    expect(positionOf({ latitude: '-91', longitude: '2' })).toHaveProperty('error');
    expect(positionOf({ latitude: '1', longitude: '2', datetime: 'now' })).toHaveProperty('error');
  });
});

describe('simulator dialects', () => {
  it('keep rc.7 (HTTP reports) and rc.6 (MQTT reports) apart, and refuse HTTP reports for the spec agent', () => {
    expect(dialectOf('flyve').reports).toBe('http');
    expect(dialectOf('flyve').defaultVersion).toBe('2.0.0-rc.7');
    expect(dialectOf('flyve', 'mqtt')).toMatchObject({
      defaultVersion: '2.0.0-rc.6',
      publishesOnline: true,
      confirmsUnenroll: true,
      pongAfterLock: false,
    });
    expect(dialectOf('flyve', 'http')).toMatchObject({
      publishesOnline: false,
      confirmsUnenroll: false,
      pongAfterLock: true,
      sessionTokenIn: 'header',
    });
    expect(dialectOf('spec').resource('Agent')).toBe('PluginMdmAgent');
    expect(dialectOf('flyve').resource('Geolocation')).toBe('PluginFlyvemdmGeolocation');
    expect(() => dialectOf('spec', 'http')).toThrow(/--dialect flyve/);
  });
});
