// The walls as the editor shows them (eslint.config.js, no-restricted-imports per room) agree with
// the walls the layer test enforces (test/helpers/layers.ts, RULES): for a file in each room and an
// import of each room, ESLint refuses exactly what RULES forbids, naming the same rule. So the two
// cannot drift: a wall added to one and not the other fails here.
import { ESLint } from 'eslint';
import { posix, resolve } from 'node:path';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
import { RULES } from '../helpers/layers.ts';

const ROOT = resolve(import.meta.dirname, '../..');

// Only the import rule, and without the type-aware parser (the files below need not exist).
const eslint = new ESLint({
  cwd: ROOT,
  overrideConfig: [tseslint.configs.disableTypeChecked],
  ruleFilter: ({ ruleId }) => ruleId === 'no-restricted-imports',
});

/** One file of each room, the kinds of backend file the rules tell apart included. */
const FILES = [
  'src-main/backend/invitations/invitations.ts', // a domain room
  'src-main/backend/config.ts', // a domain file at the backend's root
  'src-main/backend/files/routes.ts', // a capability's HTTP face
  'src-main/backend/admin-api/code-routes.ts',
  'src-main/backend/admin-api/app.ts', // an API room
  'src-main/backend/http/listener.ts',
  'src-main/backend/server.ts', // the wiring
  'src-main/backend/services.ts',
  'src-main/device/enroll.ts',
  'src-main/cli/serve.ts',
  'src-main/electron/main.ts',
  'src-renderer/pages/Devices.tsx',
  'src-renderer/main.tsx',
  'src-shared/contract/index.ts',
  'src-shared/delimited.ts',
];

/** Targets in each room, and packages. */
const TARGETS = [
  'electron',
  'node:fs',
  'fastify',
  'src-main/cli/serve.ts',
  'src-main/device/simulate.ts',
  'src-main/electron/main.ts',
  'src-main/backend/db/database.ts',
  'src-main/backend/invitations/repository.ts',
  'src-main/backend/config.ts',
  'src-main/backend/admin-api/errors.ts',
  'src-main/backend/agent-api/tokens.ts',
  'src-main/backend/http/listener.ts',
  'src-main/backend/files/routes.ts',
  'src-renderer/lib/format.ts',
  'src-renderer/lib/router.tsx',
  'src-shared/contract/index.ts',
  'src-shared/delimited.ts',
];

/** The specifier a file of ours writes for a target: relative for our files, the name for packages. */
function specifier(from: string, target: string): string {
  if (!target.includes('/') || target.startsWith('node:')) return target;
  const relative = posix.relative(posix.dirname(from), target);
  return relative.startsWith('.') ? relative : `./${relative}`;
}

/** What RULES says about `file` importing `target`: the names of the rules it breaks. */
const forbiddenBy = (file: string, target: string) =>
  RULES.filter((rule) => rule.applies(file) && rule.forbids(target)).map((rule) => rule.name);

async function eslintVerdict(file: string, target: string): Promise<string[]> {
  const code = `import { x } from '${specifier(file, target)}';\nexport { x };\n`;
  const [result] = await eslint.lintText(code, { filePath: resolve(ROOT, file) });
  return result!.messages.map((message) => message.message);
}

describe('the ESLint walls agree with the layer test', () => {
  it('refuses exactly what RULES forbids, for a file of every room and a target in every room', async () => {
    const disagreements: string[] = [];
    let refusals = 0;
    for (const file of FILES) {
      for (const target of TARGETS) {
        const expected = forbiddenBy(file, target);
        const messages = await eslintVerdict(file, target);
        refusals += messages.length > 0 ? 1 : 0;
        const agrees =
          expected.length === 0
            ? messages.length === 0
            : messages.length > 0 && expected.every((name) => messages.some((message) => message.includes(name)));
        if (!agrees)
          disagreements.push(
            `${file} → ${specifier(file, target)}: layer test ${expected.length ? `forbids (${expected.join('; ')})` : 'allows'}, ESLint ${messages.length ? `refuses (${messages.join('; ')})` : 'allows'}`,
          );
      }
    }
    expect(disagreements).toEqual([]);
    // Not a vacuous agreement: every rule was broken somewhere in the grid, and much was allowed.
    for (const rule of RULES)
      expect(FILES.some((file) => TARGETS.some((target) => forbiddenBy(file, target).includes(rule.name)))).toBe(true);
    expect(refusals).toBeGreaterThan(20);
    expect(refusals).toBeLessThan(FILES.length * TARGETS.length - 100);
  });

  it('reads re-exports and type-only imports too', async () => {
    const file = 'src-renderer/pages/Devices.tsx';
    for (const code of [
      `export { x } from '../../src-main/backend/config.ts';`,
      `import type { X } from '../../src-main/backend/config.ts';\nexport type { X };`,
      `export * from '../../src-main/backend/config.ts';`,
    ]) {
      const [result] = await eslint.lintText(code, { filePath: resolve(ROOT, file) });
      expect(result!.messages.map((message) => message.message)).toEqual([expect.stringContaining(RULES[2]!.name)]);
    }
  });
});
