import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { AccountInviteBody, AccountReinviteBody, ApiTokenCreate, Role } from '../../src-shared/contract/index.ts';
import { admin } from './client.ts';

export const accountKeys = {
  me: ['me'] as const,
  tokens: ['tokens'] as const,
  accounts: ['accounts'] as const,
};

/** Who is signed in to this console, with which role. */
export function useMe() {
  return useQuery({ queryKey: accountKeys.me, queryFn: ({ signal }) => admin.me({ signal }) });
}

export function useTokens() {
  return useQuery({ queryKey: accountKeys.tokens, queryFn: async ({ signal }) => (await admin.tokens.list({ signal })).items });
}

export function useCreateToken() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (input: ApiTokenCreate) => admin.tokens.create({ body: input }),
    onSuccess: () => void client.invalidateQueries({ queryKey: accountKeys.tokens }),
  });
}

export function useRevokeToken() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (id: number) => admin.tokens.revoke({ params: { id } }),
    onSuccess: () => void client.invalidateQueries({ queryKey: accountKeys.tokens }),
  });
}

/** The admins (the owner's page). */
export function useAccounts(enabled = true) {
  return useQuery({
    queryKey: accountKeys.accounts,
    queryFn: async ({ signal }) => (await admin.accounts.list({ signal })).items,
    enabled,
  });
}

/** A change to an admin: the list is fetched again (its event does it too, for other windows). */
function useAccountMutation<I, O>(mutationFn: (input: I) => Promise<O>) {
  const client = useQueryClient();
  return useMutation({
    mutationFn,
    onSuccess: () => void client.invalidateQueries({ queryKey: accountKeys.accounts }),
  });
}

export const useInviteAdmin = () => useAccountMutation((body: AccountInviteBody) => admin.accounts.invite({ body }));
export const useReinviteAdmin = () =>
  useAccountMutation(({ id, body }: { id: number; body: AccountReinviteBody }) =>
    admin.accounts.reinvite({ params: { id }, body }),
  );
export const useSetAdminRole = () =>
  useAccountMutation(({ id, role }: { id: number; role: Role }) => admin.accounts.update({ params: { id }, body: { role } }));
export const useDisableAdmin = () => useAccountMutation((id: number) => admin.accounts.disable({ params: { id } }));
export const useEnableAdmin = () => useAccountMutation((id: number) => admin.accounts.enable({ params: { id } }));
export const useResetAdminTwoFactor = () => useAccountMutation((id: number) => admin.accounts.resetTwoFactor({ params: { id } }));
export const useDeleteAdmin = () => useAccountMutation((id: number) => admin.accounts.remove({ params: { id } }));
