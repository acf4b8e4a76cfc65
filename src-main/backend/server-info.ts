/**
 * What DIR/server.json says about a running server, and what GET /api/status starts from. Its own
 * module so the admin API and the server both import it without importing each other; its shape is
 * the contract's (src-shared/contract/server-info.ts), which the CLI and tests read too.
 */
export type { ServerInfo } from '../../src-shared/contract/index.ts';
