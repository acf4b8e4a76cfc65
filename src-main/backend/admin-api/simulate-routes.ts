import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { ApiError } from '../errors.ts';
import type { Services } from '../services.ts';

/** What the backend hands the device simulator: the invitation as a phone would receive it. */
export interface SimulateRequest {
  deeplink: string;
  email: string;
  firstname: string | null;
  lastname: string | null;
  type: 'android' | 'apple';
  /** The agent app codes are made for (setting `agent_app`): the simulated device speaks its dialect. */
  agent_app: 'spec' | 'flyve';
}

/** What the simulator reports back; a refused enrollment is an outcome (ok: false), not an error. */
export interface SimulateResult {
  ok: boolean;
  agent_id: number | null;
  serial: string | null;
  type: string;
  /** One line per enrollment step, as the simulator's CLI prints them. */
  log: string[];
  /** The server's refusal or the failure, when ok is false. */
  error: string | null;
}

/**
 * Runs a simulated device against an invitation. The backend never imports the simulator (it is
 * our stand-in for a real agent and only knows the wire): the caller of startBackend injects it.
 */
export type DeviceSimulator = (request: SimulateRequest) => Promise<SimulateResult>;

const Id = Type.Object({ id: Type.Integer({ minimum: 1 }) });
const Query = Type.Object({ type: Type.Optional(Type.Union([Type.Literal('android'), Type.Literal('apple')])) });

/** POST /invitations/:id/simulate[?type=android|apple] — "simulate a device" for demos without a phone. */
export const simulateRoutes: FastifyPluginAsync<{ services: Services; simulate?: DeviceSimulator }> = async (app, { services, simulate }) => {
  app.post('/invitations/:id/simulate', { schema: { params: Id, querystring: Query } }, async (request) => {
    const { id } = request.params as { id: number };
    const { type } = request.query as { type?: 'android' | 'apple' };
    const invitation = services.invitations.view(services.invitations.get(id));
    if (!simulate) throw new ApiError(501, 'ERROR_NOT_AVAILABLE', 'The device simulator is not available in this server');
    return simulate({
      deeplink: invitation.deeplink,
      email: invitation.email,
      firstname: invitation.firstname,
      lastname: invitation.lastname,
      type: type ?? 'android',
      agent_app: services.settings.get().agent_app,
    });
  });

  // A code is used by people it does not name: the simulated person gets an address the code
  // allows unless one is given (a refused domain shows the refusal, as a real phone would).
  app.post(
    '/codes/:id/simulate',
    {
      schema: {
        params: Id,
        querystring: Query,
        body: Type.Optional(Type.Union([Type.Object({ email: Type.Optional(Type.String({ minLength: 1, maxLength: 254 })) }, { additionalProperties: false }), Type.Null()])),
      },
    },
    async (request) => {
      const { id } = request.params as { id: number };
      const { type } = request.query as { type?: 'android' | 'apple' };
      const code = services.codes.view(services.codes.get(id));
      if (!simulate) throw new ApiError(501, 'ERROR_NOT_AVAILABLE', 'The device simulator is not available in this server');
      const given = (request.body as { email?: string } | null | undefined)?.email?.trim();
      const email = given || simulatedEmail(code.domains);
      const agentApp = services.settings.get().agent_app;
      return { ...(await simulate({ deeplink: code.deeplink, email, firstname: null, lastname: null, type: type ?? 'android', agent_app: agentApp })), email };
    },
  );
};

/** A fresh address for a simulated person, in the first allowed domain (example.com when any is allowed). */
export function simulatedEmail(domains: string[]): string {
  return `person-${randomBytes(3).toString('hex')}@${domains[0] ?? 'example.com'}`;
}
