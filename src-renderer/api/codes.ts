// Enrollment codes and the devices waiting for approval: types, queries and mutations.
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { get, post, query } from './client.ts';
import { keys } from './queries.ts';
import type { Agent, Helpdesk, SimulateResult } from './types.ts';

export type CodeStatus = 'active' | 'expired' | 'used_up' | 'revoked';

export interface EnrollmentCode {
  id: number;
  name: string;
  status: CodeStatus;
  fleet_id: number;
  fleet: string | null;
  domains: string[];
  max_uses: number | null;
  uses: number;
  approval: 'auto' | 'manual';
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  rotated_at: string | null;
  last_used_at: string | null;
  refused_attempts: number;
  pending_approval: number;
  token: string;
  user_token: string;
  deeplink: string;
  deeplink_data: string;
  app_link: string;
  helpdesk: Helpdesk;
}

export interface CodeLogEntry {
  id: number;
  at: string;
  outcome: 'refused' | 'used';
  message: string;
  email: string | null;
  serial: string | null;
  uuid: string | null;
  remote_addr: string | null;
  agent_id: number | null;
  agent_name: string | null;
  enroll_status: string | null;
}

export interface CodeDetail extends EnrollmentCode {
  log: CodeLogEntry[];
}

export interface CodeInput {
  name: string;
  fleet?: string;
  domains?: string[];
  max_uses?: number;
  days?: number;
  approval?: 'auto' | 'manual';
}

export const codeKeys = {
  all: ['codes'] as const,
  list: ['codes', 'list'] as const,
  one: (id: number) => ['codes', 'one', id] as const,
};

export function useCodes() {
  return useQuery({ queryKey: codeKeys.list, queryFn: async ({ signal }) => (await get<{ items: EnrollmentCode[] }>('/codes', signal)).items });
}

export function useCode(id: number) {
  return useQuery({ queryKey: codeKeys.one(id), queryFn: ({ signal }) => get<CodeDetail>(`/codes/${id}`, signal) });
}

function useCodeMutation<I, O>(fn: (input: I) => Promise<O>) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: fn,
    onSettled: () => Promise.all([client.invalidateQueries({ queryKey: codeKeys.all }), client.invalidateQueries({ queryKey: keys.agents })]),
  });
}

export const useCreateCode = () => useCodeMutation((input: CodeInput) => post<EnrollmentCode>('/codes', input));
export const useRevokeCode = () => useCodeMutation((id: number) => post<EnrollmentCode>(`/codes/${id}/revoke`));
export const useRotateCode = () => useCodeMutation((id: number) => post<EnrollmentCode>(`/codes/${id}/rotate`));
export const useSimulateWithCode = () =>
  useCodeMutation(({ id, email, type }: { id: number; email?: string; type: 'android' | 'apple' }) =>
    post<SimulateResult & { email: string }>(`/codes/${id}/simulate${query({ type })}`, email ? { email } : {}),
  );
export const useApproveAgents = () =>
  useCodeMutation((ids: number[]) => post<{ approved: number[]; skipped: { id: number; reason: string }[] }>('/agents/approve', { ids }));
export const useRejectAgent = () => useCodeMutation((id: number) => post<Agent>(`/agents/${id}/reject`));

export const CODE_STATUS: Record<CodeStatus, { label: string; color: string }> = {
  active: { label: 'Active', color: 'teal' },
  expired: { label: 'Expired', color: 'gray' },
  used_up: { label: 'Used up', color: 'orange' },
  revoked: { label: 'Revoked', color: 'red' },
};

/** "3 / 10" or "3 / ∞". */
export const usesText = (code: Pick<EnrollmentCode, 'uses' | 'max_uses'>) => `${code.uses} / ${code.max_uses ?? '∞'}`;
