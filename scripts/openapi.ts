// `npm run openapi`: writes docs/admin-api.json and docs/agent-api.json, the OpenAPI documents of the
// two HTTP APIs (src-main/backend/http/openapi.ts). The agent API's routes are read from a real
// backend started in a temporary data dir on loopback ports the OS chooses, then stopped.
// test/unit/docs/openapi.test.ts regenerates both in memory and fails when the committed ones are stale.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RouteOptions } from 'fastify';
import { format, resolveConfig } from 'prettier';
import { adminOpenApi, agentOpenApi } from '../src-main/backend/http/openapi.ts';
import { startBackend } from '../src-main/backend/server.ts';

const root = resolve(import.meta.dirname, '..');

/** The two documents as they should be committed, by path under the repository. */
export async function apiDocuments(): Promise<Record<string, string>> {
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  const agentRoutes: RouteOptions[] = [];
  const dataDir = mkdtempSync(join(tmpdir(), 'mdm-openapi-'));
  try {
    const backend = await startBackend({
      dataDir,
      port: 0,
      adminPort: 0,
      mqttPort: 0,
      mqttTlsPort: 0,
      host: '127.0.0.1',
      publicHost: '127.0.0.1',
      onRoute: (side, route) => void (side === 'agent' && agentRoutes.push(route)),
    });
    await backend.close();
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
  const documents = { 'docs/admin-api.json': adminOpenApi(version), 'docs/agent-api.json': agentOpenApi(version, agentRoutes) };
  return Object.fromEntries(
    await Promise.all(
      Object.entries(documents).map(async ([path, document]) => [path, await asFormatted(path, document)] as const),
    ),
  );
}

/** As Prettier writes it (one line where it fits, from compact JSON): the format check passes on it as it is. */
async function asFormatted(path: string, document: unknown): Promise<string> {
  const options = await resolveConfig(join(root, path));
  return format(JSON.stringify(document), { ...options, filepath: join(root, path) });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const [path, text] of Object.entries(await apiDocuments())) {
    writeFileSync(join(root, path), text);
    console.log(`wrote ${path}`);
  }
}
