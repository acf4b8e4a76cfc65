// Enrollment codes and the devices waiting for approval: queries and mutations.
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { CodeCreate, CodeStatus, EnrollmentCode } from '../../src-shared/contract/index.ts';
import { admin } from './client.ts';
import { keys } from './queries.ts';

export const codeKeys = {
  all: ['codes'] as const,
  list: ['codes', 'list'] as const,
  one: (id: number) => ['codes', 'one', id] as const,
};

export function useCodes() {
  return useQuery({ queryKey: codeKeys.list, queryFn: async ({ signal }) => (await admin.codes.list({ signal })).items });
}

export function useCode(id: number) {
  return useQuery({ queryKey: codeKeys.one(id), queryFn: ({ signal }) => admin.codes.get({ params: { id }, signal }) });
}

function useCodeMutation<I, O>(fn: (input: I) => Promise<O>) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: fn,
    onSettled: () =>
      Promise.all([client.invalidateQueries({ queryKey: codeKeys.all }), client.invalidateQueries({ queryKey: keys.agents })]),
  });
}

export const useCreateCode = () => useCodeMutation((input: CodeCreate) => admin.codes.create({ body: input }));
export const useRevokeCode = () => useCodeMutation((id: number) => admin.codes.revoke({ params: { id } }));
export const useRotateCode = () => useCodeMutation((id: number) => admin.codes.rotate({ params: { id } }));
export const useSimulateWithCode = () =>
  useCodeMutation(({ id, email, type }: { id: number; email?: string; type: 'android' | 'apple' }) =>
    admin.codes.simulate({ params: { id }, query: { type }, body: email ? { email } : {} }),
  );
export const useApproveAgents = () => useCodeMutation((ids: number[]) => admin.agents.approveMany({ body: { ids } }));
export const useRejectAgent = () => useCodeMutation((id: number) => admin.agents.reject({ params: { id } }));

export const CODE_STATUS: Record<CodeStatus, { label: string; color: string }> = {
  active: { label: 'Active', color: 'teal' },
  expired: { label: 'Expired', color: 'gray' },
  used_up: { label: 'Used up', color: 'orange' },
  revoked: { label: 'Revoked', color: 'red' },
};

/** "3 / 10" or "3 / ∞". */
export const usesText = (code: Pick<EnrollmentCode, 'uses' | 'max_uses'>) => `${code.uses} / ${code.max_uses ?? '∞'}`;
