// The policy catalogue (contract/policies.ts) is the one table the admin API, the console and the CLI
// read: its shape is checked here, and each value type's message as the agent receives it.
import { Value } from 'typebox/value';
import { describe, expect, it } from 'vitest';
import {
  compareAndroidVersions,
  DEPLOYMENT_SYMBOLS,
  POLICY_CATALOGUE,
  policyDefinition,
  policyWireMessage,
  VALUE_POLICIES,
} from '../../../src-shared/contract/index.ts';

describe('the policy catalogue', () => {
  it("holds the reference's 37 value policies, useTLS and the four deployment kinds, each once", () => {
    expect(POLICY_CATALOGUE).toHaveLength(42);
    expect(VALUE_POLICIES).toHaveLength(38);
    const symbols = POLICY_CATALOGUE.map((policy) => policy.symbol);
    expect(new Set(symbols).size).toBe(symbols.length);
    expect(POLICY_CATALOGUE.filter((policy) => policy.type === 'deployment').map((policy) => policy.symbol)).toEqual([
      'deployApp',
      'removeApp',
      'deployFile',
      'removeFile',
    ]);
    expect([...DEPLOYMENT_SYMBOLS].sort()).toEqual(['deployApp', 'deployFile', 'removeApp', 'removeFile']);
    expect(symbols).toContain('useTLS');
  });

  it('gives every entry a label, an explanation, a category and a minimum Android version', () => {
    for (const policy of POLICY_CATALOGUE) {
      expect(policy.label.length, policy.symbol).toBeGreaterThan(2);
      expect(policy.explanation.length, policy.symbol).toBeGreaterThan(5);
      expect(policy.category, policy.symbol).toMatch(/\S/);
      expect(policy.androidMinVersion, policy.symbol).toMatch(/^\d+\.\d+$/);
    }
  });

  it('has defaults and recommended values valid under their own schema', () => {
    for (const policy of VALUE_POLICIES) {
      expect(Value.Check(policy.schema, policy.default), `${policy.symbol} default`).toBe(true);
      expect(Value.Check(policy.schema, policy.recommended), `${policy.symbol} recommended`).toBe(true);
    }
    for (const symbol of DEPLOYMENT_SYMBOLS) {
      expect(policyDefinition(symbol)).toMatchObject({ default: null, recommended: null, unique: false, wire: 'deployment' });
    }
  });

  it('bounds integers, lists dropdown choices and refuses values of the wrong type', () => {
    const timeToLock = policyDefinition('maximumTimeToLock')!;
    expect(timeToLock).toMatchObject({ type: 'int', unit: 'milliseconds', default: 60000 });
    expect(Value.Check(timeToLock.schema, -1)).toBe(false);
    expect(Value.Check(timeToLock.schema, 1.5)).toBe(false);
    expect(Value.Check(timeToLock.schema, 86_400_001)).toBe(false);
    expect(Value.Check(timeToLock.schema, '60000')).toBe(false);
    const password = policyDefinition('passwordEnabled')!;
    expect(password.choices!.map((choice) => choice.value)).toEqual(['PASSWORD_NONE', 'PASSWORD_PIN', 'PASSWORD_PASSWD']);
    expect(Value.Check(password.schema, 'PASSWORD_PIN')).toBe(true);
    expect(Value.Check(password.schema, 'PIN')).toBe(false);
    const camera = policyDefinition('disableCamera')!;
    expect(Value.Check(camera.schema, true)).toBe(true);
    expect(Value.Check(camera.schema, 'true')).toBe(false);
    for (const policy of VALUE_POLICIES) {
      if (policy.type === 'dropdown') expect(policy.choices!.length, policy.symbol).toBeGreaterThan(1);
      else expect(policy.choices, policy.symbol).toBeNull();
    }
  });

  it('keeps the system-only marks and minimum versions of the reference', () => {
    const systemOnly = VALUE_POLICIES.filter((policy) => policy.systemOnly).map((policy) => policy.symbol);
    expect(systemOnly.sort()).toEqual(
      [
        'defaultStreamType',
        'disableAirplaneMode',
        'disableGPS',
        'disableMobileLine',
        'disableNfc',
        'disableScreenCapture',
        'disableStatusBar',
        'disableStreamAccessibility',
        'disableStreamSystem',
        'disableUnknownAppSources',
        'disableUsbAdb',
        'disableUsbMtp',
        'disableUsbPtp',
      ].sort(),
    );
    expect(policyDefinition('disableCamera')!.androidMinVersion).toBe('4.0');
    expect(policyDefinition('disableRoaming')!.androidMinVersion).toBe('5.0');
  });

  it('writes each value type as the agent reads it', () => {
    expect(JSON.stringify(policyWireMessage(policyDefinition('disableCamera')!, true, 77))).toBe(
      '{"disableCamera":"true","taskId":77}',
    );
    expect(JSON.stringify(policyWireMessage(policyDefinition('disableWifi')!, false, 8))).toBe(
      '{"disableWifi":"false","taskId":8}',
    );
    expect(JSON.stringify(policyWireMessage(policyDefinition('passwordMinLength')!, 6, 9))).toBe(
      '{"passwordMinLength":6,"taskId":9}',
    );
    expect(JSON.stringify(policyWireMessage(policyDefinition('passwordEnabled')!, 'PASSWORD_PIN', 10))).toBe(
      '{"passwordEnabled":"PASSWORD_PIN","taskId":10}',
    );
    expect(() => policyWireMessage(policyDefinition('deployApp')!, 1, 1)).toThrow(/deployment/);
  });

  it('compares Android versions numerically', () => {
    expect(compareAndroidVersions('4.4', '5.0')).toBeLessThan(0);
    expect(compareAndroidVersions('10', '5.0')).toBeGreaterThan(0);
    expect(compareAndroidVersions('5.0.1', '5.0')).toBeGreaterThan(0);
    expect(compareAndroidVersions('5', '5.0')).toBe(0);
  });
});
