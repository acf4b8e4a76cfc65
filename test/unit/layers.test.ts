// The walls between rooms, made mechanical (docs/architecture.md; rules in test/helpers/layers.ts).
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fileCycles, layerViolations, parseSource, readSourceTree, roomCycles, type SourceFile } from '../helpers/layers.ts';

const ROOT = resolve(import.meta.dirname, '../..');

/** Files allowed to prepare SQL outside the repository files and db/: none (issue 12, item 3). */
const PREPARE_ALLOW_LIST: string[] = [];

/** Folder cycles allowed: none. */
const CYCLE_ALLOW_LIST: ReadonlyArray<readonly [string, string]> = [];

describe('the layers of the tree', () => {
  const files = readSourceTree(ROOT);

  it('reads the whole tree', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files.map((file) => file.path)).toContain('src-main/backend/server.ts');
  });

  it('holds: no forbidden import, no SQL outside repositories, no cycle between rooms, console folders or files', () => {
    expect(layerViolations(files, { prepareAllowList: PREPARE_ALLOW_LIST, cycleAllowList: CYCLE_ALLOW_LIST })).toEqual([]);
  });

  it('allows nothing it no longer needs to', () => {
    const preparing = new Set(files.filter((file) => file.prepareLines.length > 0).map((file) => file.path));
    expect(
      PREPARE_ALLOW_LIST.filter((path) => !preparing.has(path)),
      'these no longer prepare SQL: take them off PREPARE_ALLOW_LIST',
    ).toEqual([]);
    const cycles = roomCycles(files).map(([rooms]) => rooms!.split(' ⇄ '));
    const stale = CYCLE_ALLOW_LIST.filter(([a, b]) => !cycles.some((rooms) => rooms.includes(a) && rooms.includes(b)));
    expect(stale, 'these rooms no longer import each other in a cycle: take them off CYCLE_ALLOW_LIST').toEqual([]);
  });
});

/** A made-up tree: one file per entry, imports already resolved. */
const tree = (entries: Record<string, string[]>, preparing: string[] = []): SourceFile[] =>
  Object.entries(entries).map(([path, imports]) => ({ path, imports, prepareLines: preparing.includes(path) ? [7] : [] }));

describe('the layer check catches what it guards against', () => {
  it('the backend importing electron, the CLI or the device simulator', () => {
    const found = layerViolations(
      tree({
        'src-main/backend/mail/secrets.ts': ['electron'],
        'src-main/backend/server.ts': ['src-main/cli/serve.ts', 'src-main/device/simulate.ts'],
        'src-main/cli/serve.ts': ['src-main/backend/server.ts'],
      }),
    );
    expect(found).toEqual([
      expect.stringMatching(/^src-main\/backend\/mail\/secrets\.ts imports electron: the backend runs headless/),
      expect.stringMatching(/^src-main\/backend\/server\.ts imports src-main\/cli\/serve\.ts: /),
      expect.stringMatching(/^src-main\/backend\/server\.ts imports src-main\/device\/simulate\.ts: /),
      // serve.ts and server.ts importing each other is a file cycle as well.
      expect.stringMatching(/^files import each other in a cycle: src-main\/backend\/server\.ts ⇄ src-main\/cli\/serve\.ts /),
    ]);
  });

  it('the device simulator importing the backend or the shared contract', () => {
    const found = layerViolations(
      tree({
        'src-main/device/enroll.ts': [
          'src-main/backend/deeplink/codec.ts',
          'src-shared/contract/index.ts',
          'node:crypto',
          'mqtt',
        ],
      }),
    );
    expect(found).toHaveLength(2);
    expect(found[0]).toMatch(
      /^src-main\/device\/enroll\.ts imports src-main\/backend\/deeplink\/codec\.ts: the device simulator/,
    );
    expect(found[1]).toMatch(/imports src-shared\/contract\/index\.ts/);
  });

  it('the console importing src-main; the contract importing either side', () => {
    const found = layerViolations(
      tree({
        'src-renderer/api/client.ts': ['src-main/backend/config.ts', 'src-shared/contract/index.ts'],
        'src-shared/contract/status.ts': ['src-renderer/lib/format.ts', 'typebox'],
      }),
    );
    expect(found).toEqual([
      expect.stringMatching(/^src-renderer\/api\/client\.ts imports src-main\/backend\/config\.ts: the console/),
      expect.stringMatching(/^src-shared\/contract\/status\.ts imports src-renderer\/lib\/format\.ts: the shared contract/),
    ]);
  });

  it('a domain room importing the API rooms; route files, the API rooms and the wiring may', () => {
    const found = layerViolations(
      tree({
        'src-main/backend/invitations/invitations.ts': ['src-main/backend/admin-api/errors.ts'],
        'src-main/backend/broker/broker.ts': ['src-main/backend/http/socket-limits.ts'],
        'src-main/backend/config.ts': ['src-main/backend/agent-api/tokens.ts'],
        'src-main/backend/files/routes.ts': ['src-main/backend/http/request-deadline.ts'],
        'src-main/backend/admin-api/code-routes.ts': ['src-main/backend/http/number-guard.ts'],
        'src-main/backend/server.ts': ['src-main/backend/admin-api/app.ts'],
        'src-main/backend/services.ts': ['src-main/backend/http/listener.ts'],
      }),
    );
    expect(found).toEqual([
      expect.stringMatching(
        /^src-main\/backend\/invitations\/invitations\.ts imports src-main\/backend\/admin-api\/errors\.ts: domain rooms/,
      ),
      expect.stringMatching(
        /^src-main\/backend\/broker\/broker\.ts imports src-main\/backend\/http\/socket-limits\.ts: domain rooms/,
      ),
      expect.stringMatching(/^src-main\/backend\/config\.ts imports src-main\/backend\/agent-api\/tokens\.ts: domain rooms/),
    ]);
  });

  it('SQL prepared outside repository files and db/, unless allow-listed', () => {
    const files = tree(
      {
        'src-main/backend/agents/agents.ts': [],
        'src-main/backend/admin-api/app.ts': [],
        'src-main/backend/agents/repository.ts': [],
        'src-main/backend/fleets/fleet-repository.ts': [],
        'src-main/backend/files/store.ts': [],
        'src-main/backend/db/database.ts': [],
      },
      [
        'src-main/backend/agents/agents.ts',
        'src-main/backend/admin-api/app.ts',
        'src-main/backend/agents/repository.ts',
        'src-main/backend/fleets/fleet-repository.ts',
        'src-main/backend/files/store.ts',
        'src-main/backend/db/database.ts',
      ],
    );
    expect(layerViolations(files)).toEqual([
      expect.stringMatching(/^src-main\/backend\/agents\/agents\.ts:7 calls prepare\(/),
      expect.stringMatching(/^src-main\/backend\/admin-api\/app\.ts:7 calls prepare\(/),
    ]);
    expect(layerViolations(files, { prepareAllowList: ['src-main/backend/admin-api/app.ts'] })).toHaveLength(1);
  });

  it('a cycle between backend rooms, naming an import of each step, unless allow-listed', () => {
    // A cycle of rooms whose files form no cycle: settings.ts imports another file of invitations/.
    const files = tree({
      'src-main/backend/invitations/invitations.ts': ['src-main/backend/mail/index.ts'],
      'src-main/backend/mail/index.ts': ['src-main/backend/settings/settings.ts'],
      'src-main/backend/settings/settings.ts': ['src-main/backend/invitations/links.ts'],
      'src-main/backend/invitations/links.ts': [],
      'src-main/backend/fleets/fleets.ts': ['src-main/backend/events/event-log.ts'],
      'src-main/backend/events/event-log.ts': ['src-main/backend/db/unit-of-work.ts'],
    });
    const found = layerViolations(files);
    expect(found).toHaveLength(1);
    expect(found[0]).toContain('invitations ⇄ mail ⇄ settings');
    expect(found[0]).toContain('src-main/backend/settings/settings.ts → src-main/backend/invitations/links.ts');
    expect(layerViolations(files, { cycleAllowList: [['settings', 'invitations']] })).toEqual([]);
  });

  it('a cycle between files of one room: a service and its repository, a dispatcher and its commands', () => {
    const files = tree({
      // codes.ts uses its repository; the repository takes its row type from the service.
      'src-main/backend/codes/codes.ts': ['src-main/backend/codes/repository.ts', 'src-main/backend/db/database.ts'],
      'src-main/backend/codes/repository.ts': ['src-main/backend/codes/codes.ts', 'src-main/backend/db/database.ts'],
      'src-main/backend/db/database.ts': ['better-sqlite3'],
      // A ring of three in the CLI; and one file that imports itself.
      'src-main/cli/admin-commands.ts': ['src-main/cli/code-commands.ts'],
      'src-main/cli/code-commands.ts': ['src-main/cli/deploy-commands.ts'],
      'src-main/cli/deploy-commands.ts': ['src-main/cli/admin-commands.ts', 'src-main/cli/handler.ts'],
      'src-main/cli/handler.ts': [],
      'src-shared/contract/index.ts': ['src-shared/contract/index.ts'],
    });
    // No room cycle here (each cycle stays in its room): only the file check sees them.
    expect(roomCycles(files)).toEqual([]);
    expect(layerViolations(files)).toEqual([
      'files import each other in a cycle: src-main/backend/codes/codes.ts ⇄ src-main/backend/codes/repository.ts (src-main/backend/codes/codes.ts → src-main/backend/codes/repository.ts; src-main/backend/codes/repository.ts → src-main/backend/codes/codes.ts)',
      expect.stringMatching(
        /^files import each other in a cycle: src-main\/cli\/admin-commands\.ts ⇄ src-main\/cli\/code-commands\.ts ⇄ src-main\/cli\/deploy-commands\.ts \(/,
      ),
      'files import each other in a cycle: src-shared/contract/index.ts (src-shared/contract/index.ts → src-shared/contract/index.ts)',
    ]);
    expect(fileCycles(files)[1]).toHaveLength(4); // the ring and its three imports
  });

  it('the console importing back up: a page importing the shell that imports it', () => {
    const files = tree({
      'src-renderer/main.tsx': ['src-renderer/app/App.tsx'],
      'src-renderer/app/App.tsx': ['src-renderer/pages/Devices.tsx', 'src-renderer/lib/router.tsx'],
      'src-renderer/pages/Devices.tsx': ['src-renderer/app/router.tsx', 'src-renderer/lib/format.ts'],
      'src-renderer/app/router.tsx': ['react'],
      'src-renderer/lib/router.tsx': ['react'],
    });
    expect(layerViolations(files)).toEqual([
      'console folders import each other in a cycle: app ⇄ pages (src-renderer/pages/Devices.tsx → src-renderer/app/router.tsx; src-renderer/app/App.tsx → src-renderer/pages/Devices.tsx)',
    ]);
    // The router in lib/, as it is: pages import it, the shell imports the pages.
    files.find((file) => file.path === 'src-renderer/pages/Devices.tsx')!.imports[0] = 'src-renderer/lib/router.tsx';
    expect(layerViolations(files)).toEqual([]);
  });

  it('reads every kind of import with the TypeScript parser, and only real prepare( calls', () => {
    const file = parseSource(
      ROOT,
      join(ROOT, 'src-main/backend/agents/example.ts'),
      [
        `import type { Db } from '../db/database.ts';`,
        `import { x } from './other.ts';`,
        `export { y } from '../http/listener.ts';`,
        `const lazy = await import('../broker/mosquitto.ts');`,
        `const z = require('electron');`,
        `type S = import('../sessions/sessions.ts').SessionService;`,
        `import Fastify from 'fastify';`,
        `import { Type } from '@sinclair/typebox/compiler';`,
        `// db.prepare('in a comment') and 'db.prepare(' in a string do not count`,
        `const s = 'db.prepare(';`,
        `const statement = db.prepare('SELECT 1');`,
      ].join('\n'),
    );
    expect(file.path).toBe('src-main/backend/agents/example.ts');
    expect(file.imports).toEqual([
      'src-main/backend/db/database.ts',
      'src-main/backend/agents/other.ts',
      'src-main/backend/http/listener.ts',
      'src-main/backend/broker/mosquitto.ts',
      'electron',
      'src-main/backend/sessions/sessions.ts',
      'fastify',
      '@sinclair/typebox',
    ]);
    expect(file.prepareLines).toEqual([11]);
  });
});
