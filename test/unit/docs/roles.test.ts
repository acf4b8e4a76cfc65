// docs/admin-api.md's role table is the contract's (src-shared/contract/permissions.ts): a
// permission added, renamed or moved between roles fails here until the document says so.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PERMISSIONS, PERMISSION_NAMES, ROLE_PERMISSIONS } from '../../../src-shared/contract/permissions.ts';
import { ROLES } from '../../../src-shared/contract/rules.ts';

const doc = readFileSync(join(import.meta.dirname, '../../../docs/admin-api.md'), 'utf8');

describe('the role table of docs/admin-api.md', () => {
  it('lists every permission, what it lets one do and the roles holding it, as permissions.ts does', () => {
    const rows = doc
      .split('\n')
      .filter((line) => /^\| `[a-z]+\.[a-z]+` \|/.test(line))
      .map((line) => line.trim());
    const expected = PERMISSION_NAMES.map(
      (permission) =>
        `| \`${permission}\` | ${PERMISSIONS[permission]} | ${ROLES.map((role) => (ROLE_PERMISSIONS[role].includes(permission) ? '✓' : '')).join(' | ')} |`,
    ).map((line) => line.replace(/ {2,}/g, ' ').trim());
    expect(rows.map((line) => line.replace(/ {2,}/g, ' '))).toEqual(expected);
    expect(doc).toContain(`| permission | lets one | ${ROLES.join(' | ')} |`);
  });
});
