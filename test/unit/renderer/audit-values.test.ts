import { describe, expect, it } from 'vitest';
import { show } from '../../../src-renderer/pages/Audit.tsx';

// The Audit page's Changes column: a value as a reader sees it, not as JSON escapes it.
describe('audit change values', () => {
  it('shows a text with quotes in it as it is, without backslashes', () => {
    expect(show('fleet "Warehouse"')).toBe('"fleet "Warehouse""');
    expect(show('pending')).toBe('"pending"');
  });

  it('shows other values as JSON and a missing one as a dash', () => {
    expect(show(true)).toBe('true');
    expect(show(14933)).toBe('14933');
    expect(show(null)).toBe('—');
    expect(show(undefined)).toBe('—');
  });
});
