// The device simulator keeps its own copy of the value policies' wire (it may not import the
// contract): that copy must say what the catalogue says, or the simulator stops being an oracle.
import { describe, expect, it } from 'vitest';
import { VALUE_POLICIES as CATALOGUE } from '../../../src-shared/contract/index.ts';
import { olderThan, readValue, VALUE_POLICIES } from '../../../src-main/device/value-policies.ts';

describe("the simulator's copy of the value policies", () => {
  it('knows every value policy of the catalogue, with the same minimum version, system flag and choices', () => {
    expect(Object.keys(VALUE_POLICIES).sort()).toEqual(CATALOGUE.map((p) => p.symbol).sort());
    for (const policy of CATALOGUE) {
      const copy = VALUE_POLICIES[policy.symbol]!;
      expect({ android: copy.android, system: copy.system }, policy.symbol).toEqual({
        android: policy.androidMinVersion,
        system: policy.systemOnly,
      });
      expect(copy.wire, policy.symbol).toBe({ bool: 'bool', int: 'int', dropdown: 'choice', deployment: '' }[policy.type]);
      if (policy.choices) expect(copy.choices, policy.symbol).toEqual(policy.choices.map((c) => c.value));
    }
  });

  it('reads values as the agent does', () => {
    expect(readValue(VALUE_POLICIES.disableCamera!, 'true')).toEqual({ value: true });
    expect(readValue(VALUE_POLICIES.disableCamera!, 'false')).toEqual({ value: false });
    expect(readValue(VALUE_POLICIES.passwordMinLength!, 6)).toEqual({ value: 6 });
    expect(readValue(VALUE_POLICIES.passwordMinLength!, '6')).toEqual({ value: 6 });
    expect(readValue(VALUE_POLICIES.passwordMinLength!, 'six')).toEqual({ error: '"six" is not a number' });
    expect(readValue(VALUE_POLICIES.passwordEnabled!, 'PASSWORD_PIN')).toEqual({ value: 'PASSWORD_PIN' });
    expect('error' in readValue(VALUE_POLICIES.passwordEnabled!, 'PIN')).toBe(true);
    expect(olderThan('4.4', '5.0')).toBe(true);
    expect(olderThan('10', '5.0')).toBe(false);
    expect(olderThan('5.0', '5.0')).toBe(false);
  });
});
