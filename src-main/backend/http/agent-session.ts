import type { SessionContext } from '../sessions/types.ts';

/**
 * When an agent-API route resolves its session (agent-api/app.ts's session hook):
 * - `after-validation` (the default): a malformed request is a 400 before its token is looked at,
 *   as the spec's endpoints have always answered;
 * - `on-request`: before anything else, so a request without a valid session learns nothing, not
 *   even a 400 (downloads);
 * - `none`: the route opens sessions or needs none.
 */
export type SessionPhase = 'after-validation' | 'on-request' | 'none';

declare module 'fastify' {
  interface FastifyRequest {
    /** The agent-API session; set by the agent app's session hook on every route that asks for one. */
    session: SessionContext;
  }
  interface FastifyContextConfig {
    session?: SessionPhase;
    /**
     * A device waiting for approval (or rejected) may call this route with its own account: the
     * session endpoints and the records it reads while it waits. Every other route answers it
     * 403 ERROR_AGENT_NOT_APPROVED (agents/approval.ts).
     */
    whileHeld?: boolean;
  }
}
