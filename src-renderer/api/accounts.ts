import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type {
  AccountInviteBody,
  AccountReinviteBody,
  ApiTokenCreate,
  PasswordChangeBody,
  Role,
  SignInSettingsPatch,
} from '../../src-shared/contract/index.ts';
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

export const signInKeys = {
  twoFactor: ['two-factor'] as const,
  sessions: ['admin-sessions'] as const,
  settings: ['sign-in-settings'] as const,
};

/** One's own two-factor sign-in: on or off, recovery codes left, whether the owner requires it. */
export function useTwoFactor() {
  return useQuery({ queryKey: signInKeys.twoFactor, queryFn: ({ signal }) => admin.twoFactor.status({ signal }) });
}

/** Turns two-factor on (the enrolment confirmed by a code): the recovery codes, shown once. */
export function useConfirmTwoFactor() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (code: string) => admin.twoFactor.confirm({ body: { code } }),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: signInKeys.twoFactor });
      void client.invalidateQueries({ queryKey: accountKeys.me });
    },
  });
}

export function useDisableTwoFactor() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (code: string) => admin.twoFactor.disable({ body: { code } }),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: signInKeys.twoFactor });
      void client.invalidateQueries({ queryKey: accountKeys.me });
    },
  });
}

export function useChangePassword() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: PasswordChangeBody) => admin.password.change({ body }),
    onSuccess: () => void client.invalidateQueries({ queryKey: signInKeys.sessions }),
  });
}

/** One's own console sessions, the current one marked. */
export function useAdminSessions() {
  return useQuery({
    queryKey: signInKeys.sessions,
    queryFn: async ({ signal }) => (await admin.sessions.list({ signal })).items,
  });
}

export function useEndSession() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (id: string) => admin.sessions.end({ params: { id } }),
    onSuccess: () => void client.invalidateQueries({ queryKey: signInKeys.sessions }),
  });
}

export function useEndOtherSessions() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => admin.sessions.endOthers(),
    onSuccess: () => void client.invalidateQueries({ queryKey: signInKeys.sessions }),
  });
}

/** The owner's sign-in settings: two-factor for everyone, session idle time and maximum age. */
export function useSignInSettings() {
  return useQuery({ queryKey: signInKeys.settings, queryFn: ({ signal }) => admin.signInSettings.get({ signal }) });
}

export function useUpdateSignInSettings() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: SignInSettingsPatch) => admin.signInSettings.update({ body }),
    onSuccess: (settings) => {
      client.setQueryData(signInKeys.settings, settings);
      void client.invalidateQueries({ queryKey: signInKeys.twoFactor });
    },
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
/** A new role and, for an operator or observer, the fleets they are scoped to (none: every fleet). */
export const useSetAdminRole = () =>
  useAccountMutation(async ({ id, role, fleetIds }: { id: number; role: Role; fleetIds: number[] | null }) => {
    const changed = await admin.accounts.update({ params: { id }, body: { role } });
    if (fleetIds === null) return changed;
    return admin.accounts.setScope({ params: { id }, body: { fleet_ids: fleetIds } });
  });
export const useDisableAdmin = () => useAccountMutation((id: number) => admin.accounts.disable({ params: { id } }));
export const useEnableAdmin = () => useAccountMutation((id: number) => admin.accounts.enable({ params: { id } }));
export const useResetAdminTwoFactor = () => useAccountMutation((id: number) => admin.accounts.resetTwoFactor({ params: { id } }));
export const useDeleteAdmin = () => useAccountMutation((id: number) => admin.accounts.remove({ params: { id } }));
