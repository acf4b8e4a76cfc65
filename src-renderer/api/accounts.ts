import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { ApiTokenCreate } from '../../src-shared/contract/index.ts';
import { admin } from './client.ts';

export const accountKeys = {
  me: ['me'] as const,
  tokens: ['tokens'] as const,
};

/** Who is signed in to this console, with which role. */
export function useMe() {
  return useQuery({ queryKey: accountKeys.me, queryFn: ({ signal }) => admin.me(signal) });
}

export function useTokens() {
  return useQuery({ queryKey: accountKeys.tokens, queryFn: async ({ signal }) => (await admin.tokens.list(signal)).items });
}

export function useCreateToken() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (input: ApiTokenCreate) => admin.tokens.create(input),
    onSuccess: () => void client.invalidateQueries({ queryKey: accountKeys.tokens }),
  });
}

export function useRevokeToken() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (id: number) => admin.tokens.revoke(id),
    onSuccess: () => void client.invalidateQueries({ queryKey: accountKeys.tokens }),
  });
}
