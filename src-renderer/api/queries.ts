import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, del, get, patch, post, query } from './client.ts';
import type {
  Agent,
  AgentDetail,
  Deployment,
  DeploymentFilter,
  DeployInput,
  DeviceTask,
  Fleet,
  Invitation,
  InvitationDetail,
  InvitationFilter,
  InvitationInput,
  LiveEvent,
  Page,
  ServerStatus,
  Settings,
  SimulateResult,
  StoredItem,
  StoredKind,
} from './types.ts';

/** Every query key of the console, in one place: the live event sync targets them. */
export const keys = {
  status: ['status'] as const,
  events: ['events'] as const,
  invitations: ['invitations'] as const,
  invitationList: (filter: InvitationFilter) => ['invitations', 'list', filter] as const,
  invitationsByIds: (ids: readonly number[]) => ['invitations', 'byIds', ids] as const,
  invitation: (id: number) => ['invitations', 'one', id] as const,
  agents: ['agents'] as const,
  agentList: ['agents', 'list'] as const,
  agent: (id: number) => ['agents', 'one', id] as const,
  fleets: ['fleets'] as const,
  settings: ['settings'] as const,
  stored: (kind: StoredKind) => ['stored', kind] as const,
  mail: ['mail'] as const,
  mailSettings: ['mail', 'settings'] as const,
  mailBatch: (id: string) => ['mail', 'batch', id] as const,
  deployments: ['deployments'] as const,
  deploymentList: (filter: DeploymentFilter) => ['deployments', 'list', filter] as const,
  deployment: (id: number) => ['deployments', 'one', id] as const,
  agentTasks: (id: number) => ['deployments', 'agentTasks', id] as const,
};

export const FEED_SIZE = 100;

export function useStatus() {
  return useQuery({ queryKey: keys.status, queryFn: ({ signal }) => get<ServerStatus>('/status', signal) });
}

export function useFeed() {
  return useQuery({
    queryKey: keys.events,
    queryFn: async ({ signal }) => (await get<{ items: LiveEvent[] }>(`/events?limit=${FEED_SIZE}`, signal)).items,
    staleTime: Infinity,
  });
}

export function useInvitations(filter: InvitationFilter) {
  return useQuery({
    queryKey: keys.invitationList(filter),
    queryFn: ({ signal }) => get<Page<Invitation>>(`/invitations${query({ ...filter })}`, signal),
    placeholderData: keepPreviousData,
  });
}

export function useInvitation(id: number) {
  return useQuery({ queryKey: keys.invitation(id), queryFn: ({ signal }) => get<InvitationDetail>(`/invitations/${id}`, signal) });
}

/** The invitations of a print sheet, in the order asked. */
export function useInvitationsByIds(ids: readonly number[]) {
  return useQuery({
    queryKey: keys.invitationsByIds(ids),
    queryFn: async ({ signal }) => {
      const results = await Promise.all(
        ids.map((id) => get<InvitationDetail>(`/invitations/${id}`, signal).catch(() => null)),
      );
      return results.filter((item): item is InvitationDetail => item !== null);
    },
    enabled: ids.length > 0,
  });
}

export function useAgents() {
  return useQuery({
    queryKey: keys.agentList,
    queryFn: async ({ signal }) => (await get<{ items: Agent[] }>('/agents', signal)).items,
    // No deep comparison of the new list with the old one: with 10,000 devices it took half the
    // time of every live update (bench: console). Live updates keep unchanged rows as they were
    // (upsertAgents), so nothing relies on it.
    structuralSharing: false,
  });
}

export function useAgent(id: number | null) {
  return useQuery({
    queryKey: keys.agent(id ?? 0),
    queryFn: ({ signal }) => get<AgentDetail>(`/agents/${id}`, signal),
    enabled: id !== null,
  });
}

export function useFleets() {
  return useQuery({ queryKey: keys.fleets, queryFn: async ({ signal }) => (await get<{ items: Fleet[] }>('/fleets', signal)).items });
}

export function useSettings() {
  return useQuery({ queryKey: keys.settings, queryFn: ({ signal }) => get<Settings>('/settings', signal) });
}

export function useStored(kind: StoredKind) {
  return useQuery({
    queryKey: keys.stored(kind),
    queryFn: ({ signal }) => get<StoredItem[]>(kind === 'file' ? '/files' : '/packages', signal),
  });
}

// Mutations. The event stream refreshes the caches for everyone; each mutation also refreshes
// what it changed right away, so this window does not wait for the round trip of the event.

export function useCreateInvitation() {
  // No refresh of its own: the window opens the new invitation (one fetch), and its
  // invitation.created event refreshes the lists, in this window as in every other.
  return useMutation({ mutationFn: (input: InvitationInput) => post<Invitation>('/invitations', input) });
}

export function validateInvitations(invitations: InvitationInput[], another = false) {
  return post<{ errors: string[] }>('/invitations/validate', { invitations, ...(another ? { another } : {}) });
}

export function createInvitations(invitations: InvitationInput[], sendEmail?: boolean, another = false) {
  return post<{ items: Invitation[]; mail?: { batch_id: string | null; queued: number } }>('/invitations/bulk', {
    invitations,
    ...(sendEmail === undefined ? {} : { send_email: sendEmail }),
    ...(another ? { another } : {}),
  });
}

export function useRevokeInvitation() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (id: number) => post<Invitation>(`/invitations/${id}/revoke`),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.invitations }),
  });
}

export function useDeleteInvitation() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (id: number) => del(`/invitations/${id}`),
    onSuccess: (_data, id) => {
      client.removeQueries({ queryKey: keys.invitation(id) });
      return client.invalidateQueries({ queryKey: keys.invitations });
    },
  });
}

export function useSimulateDevice() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ id, type }: { id: number; type: 'android' | 'apple' }) => post<SimulateResult>(`/invitations/${id}/simulate${query({ type })}`),
    onSettled: (_data, _error, { id }) => client.invalidateQueries({ queryKey: keys.invitation(id) }),
  });
}

export function useDeleteAgent() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (id: number) => del(`/agents/${id}`),
    onSuccess: (_data, id) => {
      client.setQueryData<Agent[]>(keys.agentList, (list) => list?.filter((agent) => agent.id !== id));
      client.removeQueries({ queryKey: keys.agent(id) });
    },
  });
}

/** The one-click fix of "phones cannot reach this server": a LAN address becomes the public host now. */
export function useChoosePublicHost() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (host: string) => post<{ public_host: string }>('/public-host', { host }),
    onSuccess: () =>
      Promise.all([
        client.invalidateQueries({ queryKey: keys.status }),
        client.invalidateQueries({ queryKey: keys.settings }),
        client.invalidateQueries({ queryKey: keys.invitations }),
      ]),
  });
}

export function useSaveSettings() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (changes: Partial<Settings>) => patch<Settings>('/settings', changes),
    onSuccess: (settings) => {
      client.setQueryData(keys.settings, settings);
      return Promise.all([client.invalidateQueries({ queryKey: keys.status }), client.invalidateQueries({ queryKey: keys.invitations })]);
    },
  });
}

export function useCreateFleet() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (name: string) => post<Fleet>('/fleets', { name }),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.fleets }),
  });
}

export function useRenameFleet() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ id, name }: { id: number; name: string }) => patch<Fleet>(`/fleets/${id}`, { name }),
    onSuccess: () => Promise.all([client.invalidateQueries({ queryKey: keys.fleets }), client.invalidateQueries({ queryKey: keys.agents })]),
  });
}

export function useDeleteStored(kind: StoredKind) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (id: number) => del(`/${kind === 'file' ? 'files' : 'packages'}/${id}`),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.stored(kind) }),
  });
}

export function useDeleteFleet() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (id: number) => del(`/fleets/${id}`),
    onSuccess: () => Promise.all([client.invalidateQueries({ queryKey: keys.fleets }), client.invalidateQueries({ queryKey: keys.deployments })]),
  });
}

export function useDeployments(filter: DeploymentFilter, enabled = true) {
  return useQuery({
    queryKey: keys.deploymentList(filter),
    queryFn: async ({ signal }) => (await get<{ items: Deployment[] }>(`/deployments${query({ ...filter })}`, signal)).items,
    placeholderData: keepPreviousData,
    enabled,
  });
}

export function useDeployment(id: number | null) {
  return useQuery({
    queryKey: keys.deployment(id ?? 0),
    queryFn: ({ signal }) => get<Deployment>(`/deployments/${id}`, signal),
    enabled: id !== null,
  });
}

export function useAgentTasks(id: number | null) {
  return useQuery({
    queryKey: keys.agentTasks(id ?? 0),
    queryFn: async ({ signal }) => (await get<{ items: DeviceTask[] }>(`/agents/${id}/tasks`, signal)).items,
    enabled: id !== null,
  });
}

export function useDeploy() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (input: DeployInput) => post<Deployment>('/deployments', input),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.deployments }),
  });
}

export function useUndeploy() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (id: number) => api<{ removed: Deployment; removal: Deployment | null }>('DELETE', `/deployments/${id}`),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.deployments }),
  });
}

export function useUpdatePackage() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ id, ...changes }: { id: number; package_name?: string; version_code?: number; version_name?: string }) => patch<StoredItem>(`/packages/${id}`, changes),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.stored('package') }),
  });
}
