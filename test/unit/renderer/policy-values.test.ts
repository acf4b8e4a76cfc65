import { describe, expect, it } from 'vitest';
import { policyDefinition, type PolicyCatalogueEntry } from '../../../src-shared/contract/index.ts';
import { showValue } from '../../../src-renderer/features/policy-controls.tsx';

// The console's words for a policy value, from the real catalogue.
const entry = (symbol: string): PolicyCatalogueEntry => {
  const definition = policyDefinition(symbol);
  if (!definition) throw new Error(`no policy ${symbol}`);
  return { ...definition, schema: null, wire: 'value' } as PolicyCatalogueEntry;
};

describe('policy values as the console shows them', () => {
  it('says "1 character", not "1 characters", and keeps the plural otherwise', () => {
    expect(showValue(entry('passwordMinLowerCase'), 1)).toBe('1 character');
    expect(showValue(entry('passwordMinLowerCase'), 0)).toBe('0 characters');
    expect(showValue(entry('passwordMinLength'), 6)).toBe('6 characters');
    expect(showValue(entry('maximumFailedPasswordsForWipe'), 1)).toBe('1 attempt');
    expect(showValue(entry('maximumFailedPasswordsForWipe'), 5)).toBe('5 attempts');
  });

  it('shows switches and choices in words', () => {
    expect(showValue(entry('disableCamera'), true)).toBe('Yes');
    expect(showValue(entry('disableCamera'), null)).toBe('—');
  });
});
