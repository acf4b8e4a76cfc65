import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AgentApp, SimulateResult } from '../../../src-shared/contract/index.ts';
import { ApiError } from '../errors.ts';
import { adminRoute } from '../http/route-table.ts';
import type { Services } from '../services.ts';

/** What the backend hands the device simulator: the invitation as a phone would receive it. */
export interface SimulateRequest {
  deeplink: string;
  email: string;
  firstname: string | null;
  lastname: string | null;
  type: 'android' | 'apple';
  /** The agent app codes are made for (setting `agent_app`): the simulated device speaks its dialect. */
  agent_app: AgentApp;
}

/** What the simulator reports back: the contract's SimulateResult. */
export type { SimulateResult };

/**
 * Runs a simulated device against an invitation. The backend never imports the simulator (it is
 * our stand-in for a real agent and only knows the wire): the caller of startBackend injects it.
 */
export type DeviceSimulator = (request: SimulateRequest) => Promise<SimulateResult>;

type SimulateOptions = Pick<Services, 'invitations' | 'codes' | 'settings' | 'events'> & {
  simulate?: DeviceSimulator | undefined;
};

/** POST /invitations/:id/simulate[?type=android|apple] — "simulate a device" for demos without a phone. */
export const simulateRoutes: FastifyPluginAsyncTypebox<SimulateOptions> = async (
  app,
  { invitations, codes, settings, events, simulate },
) => {
  adminRoute(app, 'invitations.simulate', async (request) => {
    const { id } = request.params;
    const { type } = request.query;
    const invitation = await invitations.view(await invitations.get(id));
    if (!simulate) throw new ApiError(501, 'ERROR_NOT_AVAILABLE', 'The device simulator is not available in this server');
    const result = await simulate({
      deeplink: invitation.deeplink,
      email: invitation.email,
      firstname: invitation.firstname,
      lastname: invitation.lastname,
      type: type ?? 'android',
      agent_app: settings.get().agent_app,
    });
    // The enrollment itself is the simulated device's (no admin); that an admin ran it is recorded here.
    await events.record(
      'invitation.simulated',
      `Simulated ${type ?? 'android'} device run on the invitation for ${invitation.email}`,
      { entityId: invitation.entity_id, invitationId: id },
      { email: invitation.email, type: type ?? 'android', ok: result.ok },
    );
    return result;
  });

  // A code is used by people it does not name: the simulated person gets an address the code
  // allows unless one is given (a refused domain shows the refusal, as a real phone would).
  adminRoute(app, 'codes.simulate', async (request) => {
    const { id } = request.params;
    const { type } = request.query;
    const code = await codes.view(await codes.get(id));
    if (!simulate) throw new ApiError(501, 'ERROR_NOT_AVAILABLE', 'The device simulator is not available in this server');
    const given = request.body?.email?.trim();
    const email = given || simulatedEmail(code.domains);
    const agentApp = settings.get().agent_app;
    const result = await simulate({
      deeplink: code.deeplink,
      email,
      firstname: null,
      lastname: null,
      type: type ?? 'android',
      agent_app: agentApp,
    });
    await events.record(
      'code.simulated',
      `Simulated ${type ?? 'android'} device run on enrollment code "${code.name}" as ${email}`,
      { entityId: code.entity_id },
      { code_id: id, name: code.name, email, type: type ?? 'android', ok: result.ok },
    );
    return { ...result, email };
  });
};

/** A fresh address for a simulated person, in the first allowed domain (example.com when any is allowed). */
export function simulatedEmail(domains: string[]): string {
  return `person-${randomBytes(3).toString('hex')}@${domains[0] ?? 'example.com'}`;
}
