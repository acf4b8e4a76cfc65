import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type {
  AgentSummary,
  AssignBody,
  AssignmentFilter,
  DeployBody,
  DeploymentFilter,
  InvitationBulk,
  InvitationCreate,
  InvitationDetail,
  InvitationFilter,
  InvitationInput,
  PackagePatch,
  SettingsPatch,
  StoredKind,
  ViewAssignBody,
} from '../../src-shared/contract/index.ts';
import { admin, collectionOf } from './client.ts';

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
  // Policies live under 'deployments': the same events (assignments, task statuses) refresh them.
  policyCatalogue: ['policyCatalogue'] as const,
  assignmentList: (filter: AssignmentFilter) => ['deployments', 'assignments', filter] as const,
  agentPolicies: (id: number) => ['deployments', 'agentPolicies', id] as const,
  compliance: (fleetId: number | null) => ['deployments', 'compliance', fleetId] as const,
  /** The Reports page's figures: one query per report, range and fleet. */
  reportsOf: (name: string) => ['reports', name] as const,
  report: (name: string, days: number, fleetId: number | null) => ['reports', name, days, fleetId] as const,
  // Saved views with their live counts, and the devices a filter expression selects: refreshed by
  // the events that can change who matches (devices, tasks, views).
  views: ['views'] as const,
  agentsWhere: ['agentsWhere'] as const,
  // Under 'views': membership and task events refresh them with the counts.
  viewAssignments: (viewId: number) => ['views', 'assignments', viewId] as const,
  agentsMatching: (where: string) => ['agentsWhere', where] as const,
};

export const FEED_SIZE = 100;

/** `refetchMs`: asked again that often (the nodes' heartbeats, which no event announces); default: on events only. */
export function useStatus({ refetchMs }: { refetchMs?: number | false } = {}) {
  return useQuery({
    queryKey: keys.status,
    queryFn: ({ signal }) => admin.status({ signal }),
    refetchInterval: refetchMs ?? false,
  });
}

export function useFeed() {
  return useQuery({
    queryKey: keys.events,
    queryFn: async ({ signal }) => (await admin.events({ query: { limit: FEED_SIZE }, signal })).items,
    staleTime: Infinity,
  });
}

export function useInvitations(filter: InvitationFilter) {
  return useQuery({
    queryKey: keys.invitationList(filter),
    queryFn: ({ signal }) => admin.invitations.list({ query: filter, signal }),
    placeholderData: keepPreviousData,
  });
}

export function useInvitation(id: number) {
  return useQuery({ queryKey: keys.invitation(id), queryFn: ({ signal }) => admin.invitations.get({ params: { id }, signal }) });
}

/** The invitations of a print sheet, in the order asked. */
export function useInvitationsByIds(ids: readonly number[]) {
  return useQuery({
    queryKey: keys.invitationsByIds(ids),
    queryFn: async ({ signal }) => {
      const results = await Promise.all(ids.map((id) => admin.invitations.get({ params: { id }, signal }).catch(() => null)));
      return results.filter((item): item is InvitationDetail => item !== null);
    },
    enabled: ids.length > 0,
  });
}

export function useAgents() {
  return useQuery({
    queryKey: keys.agentList,
    queryFn: async ({ signal }) => (await admin.agents.list({ signal })).items,
    // No deep comparison of the new list with the old one: with 10,000 devices it took half the
    // time of every live update (bench: console). Live updates keep unchanged rows as they were
    // (upsertAgents), so nothing relies on it.
    structuralSharing: false,
  });
}

/** The ids of the devices an expression of the filter language selects (null: no filter). */
export function useAgentsMatching(where: string | null) {
  return useQuery({
    queryKey: keys.agentsMatching(where ?? ''),
    queryFn: async ({ signal }) =>
      new Set((await admin.agents.list({ query: { where: where! }, signal })).items.map((a) => a.id)),
    enabled: where !== null,
    placeholderData: keepPreviousData,
    retry: false,
  });
}

export function useViews(enabled = true) {
  return useQuery({ queryKey: keys.views, queryFn: async ({ signal }) => (await admin.views.list({ signal })).items, enabled });
}

export function useSaveView() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (input: { id?: number; name: string; where: string }) =>
      input.id === undefined
        ? admin.views.create({ body: { name: input.name, where: input.where } })
        : admin.views.update({ params: { id: input.id }, body: { name: input.name, where: input.where } }),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.views }),
  });
}

export function useViewAssignments(viewId: number | null) {
  return useQuery({
    queryKey: keys.viewAssignments(viewId ?? 0),
    queryFn: async ({ signal }) => (await admin.views.assignments({ params: { id: viewId! }, signal })).items,
    enabled: viewId !== null,
  });
}

export function useUnassignView() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (id: number) => admin.views.unassign({ params: { id } }),
    onSuccess: () =>
      Promise.all([client.invalidateQueries({ queryKey: keys.views }), client.invalidateQueries({ queryKey: keys.deployments })]),
  });
}

/** A policy or deployment assigned to a saved view (carried to its members as they come and go). */
export function useAssignToView() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ viewId, body }: { viewId: number; body: ViewAssignBody }) =>
      admin.views.assign({ params: { id: viewId }, body }),
    onSuccess: () =>
      Promise.all([client.invalidateQueries({ queryKey: keys.views }), client.invalidateQueries({ queryKey: keys.deployments })]),
  });
}

export function useDeleteView() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (id: number) => admin.views.remove({ params: { id } }),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.views }),
  });
}

export function useAgent(id: number | null) {
  return useQuery({
    queryKey: keys.agent(id ?? 0),
    queryFn: ({ signal }) => admin.agents.get({ params: { id: id! }, signal }),
    enabled: id !== null,
  });
}

export function useFleets() {
  return useQuery({ queryKey: keys.fleets, queryFn: async ({ signal }) => (await admin.fleets.list({ signal })).items });
}

export function useSettings() {
  return useQuery({ queryKey: keys.settings, queryFn: ({ signal }) => admin.settings.get({ signal }) });
}

export function useStored(kind: StoredKind) {
  return useQuery({
    queryKey: keys.stored(kind),
    queryFn: ({ signal }) => admin[collectionOf(kind)].list({ signal }),
  });
}

// Mutations. The event stream refreshes the caches for everyone; each mutation also refreshes
// what it changed right away, so this window does not wait for the round trip of the event.

export function useCreateInvitation() {
  // No refresh of its own: the window opens the new invitation (one fetch), and its
  // invitation.created event refreshes the lists, in this window as in every other. What this
  // window fetches after the answer is not fetched again for that event (meta.causes, LiveSync).
  return useMutation({
    mutationFn: (input: InvitationCreate) => admin.invitations.create({ body: input }),
    meta: { causes: 'invitation.created' },
  });
}

export function validateInvitations(invitations: InvitationInput[], another = false) {
  return admin.invitations.validate({ body: { invitations, ...(another ? { another } : {}) } });
}

export function createInvitations(invitations: InvitationInput[], sendEmail?: boolean, another = false) {
  const bulk: InvitationBulk = {
    invitations,
    ...(sendEmail === undefined ? {} : { send_email: sendEmail }),
    ...(another ? { another } : {}),
  };
  return admin.invitations.createMany({ body: bulk });
}

export function useRevokeInvitation() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (id: number) => admin.invitations.revoke({ params: { id } }),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.invitations }),
  });
}

export function useDeleteInvitation() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (id: number) => admin.invitations.remove({ params: { id } }),
    onSuccess: (_data, id) => {
      client.removeQueries({ queryKey: keys.invitation(id) });
      return client.invalidateQueries({ queryKey: keys.invitations });
    },
  });
}

export function useSimulateDevice() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ id, type }: { id: number; type: 'android' | 'apple' }) =>
      admin.invitations.simulate({ params: { id }, query: { type } }),
    onSettled: (_data, _error, { id }) => client.invalidateQueries({ queryKey: keys.invitation(id) }),
  });
}

export function useDeleteAgent() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (id: number) => admin.agents.remove({ params: { id } }),
    onSuccess: (_data, id) => {
      client.setQueryData<AgentSummary[]>(keys.agentList, (list) => list?.filter((agent) => agent.id !== id));
      client.removeQueries({ queryKey: keys.agent(id) });
    },
  });
}

/** The one-click fix of "phones cannot reach this server": a LAN address becomes the public host now. */
export function useChoosePublicHost() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (host: string) => admin.choosePublicHost({ body: { host } }),
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
    mutationFn: (changes: SettingsPatch) => admin.settings.update({ body: changes }),
    onSuccess: (settings) => {
      client.setQueryData(keys.settings, settings);
      return Promise.all([
        client.invalidateQueries({ queryKey: keys.status }),
        client.invalidateQueries({ queryKey: keys.invitations }),
      ]);
    },
  });
}

export function useCreateFleet() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (name: string) => admin.fleets.create({ body: { name } }),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.fleets }),
  });
}

export function useRenameFleet() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ id, name }: { id: number; name: string }) => admin.fleets.rename({ params: { id }, body: { name } }),
    onSuccess: () =>
      Promise.all([client.invalidateQueries({ queryKey: keys.fleets }), client.invalidateQueries({ queryKey: keys.agents })]),
  });
}

export function useDeleteStored(kind: StoredKind) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (id: number) => admin[collectionOf(kind)].remove({ params: { id } }),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.stored(kind) }),
  });
}

export function useDeleteFleet() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (id: number) => admin.fleets.remove({ params: { id } }),
    onSuccess: () =>
      Promise.all([
        client.invalidateQueries({ queryKey: keys.fleets }),
        client.invalidateQueries({ queryKey: keys.deployments }),
      ]),
  });
}

export function useDeployments(filter: DeploymentFilter, enabled = true) {
  return useQuery({
    queryKey: keys.deploymentList(filter),
    queryFn: async ({ signal }) => (await admin.deployments.list({ query: filter, signal })).items,
    placeholderData: keepPreviousData,
    enabled,
  });
}

export function useDeployment(id: number | null) {
  return useQuery({
    queryKey: keys.deployment(id ?? 0),
    queryFn: ({ signal }) => admin.deployments.get({ params: { id: id! }, signal }),
    enabled: id !== null,
  });
}

export function useAgentTasks(id: number | null) {
  return useQuery({
    queryKey: keys.agentTasks(id ?? 0),
    queryFn: async ({ signal }) => (await admin.agents.tasks({ params: { id: id! }, signal })).items,
    enabled: id !== null,
  });
}

export function useDeploy() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (input: DeployBody) => admin.deployments.create({ body: input }),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.deployments }),
  });
}

export function useUndeploy() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (id: number) => admin.deployments.remove({ params: { id } }),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.deployments }),
  });
}

export function useUpdatePackage() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ id, ...changes }: { id: number } & PackagePatch) => admin.packages.update({ params: { id }, body: changes }),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.stored('package') }),
  });
}

/** The policy catalogue (GET /api/policies): it never changes while the server runs. */
export function usePolicyCatalogue() {
  return useQuery({
    queryKey: keys.policyCatalogue,
    queryFn: async ({ signal }) => (await admin.policies.catalogue({ signal })).items,
    staleTime: Infinity,
  });
}

export function useAssignments(filter: AssignmentFilter, enabled = true) {
  return useQuery({
    queryKey: keys.assignmentList(filter),
    queryFn: async ({ signal }) => (await admin.policies.list({ query: filter, signal })).items,
    placeholderData: keepPreviousData,
    enabled,
  });
}

export function useAgentPolicies(id: number | null) {
  return useQuery({
    queryKey: keys.agentPolicies(id ?? 0),
    queryFn: async ({ signal }) => (await admin.policies.ofAgent({ params: { id: id! }, signal })).items,
    enabled: id !== null,
  });
}

export function useCompliance(fleetId: number | null) {
  return useQuery({
    queryKey: keys.compliance(fleetId),
    queryFn: async ({ signal }) => (await admin.policies.compliance({ query: { fleet_id: fleetId ?? undefined }, signal })).items,
    placeholderData: keepPreviousData,
  });
}

/** Sets values (one request each, in order), unsetting first the assignments they replace. */
export function useSetPolicies() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: async (changes: { set: AssignBody; replaces?: number | undefined }[]) => {
      for (const change of changes) {
        if (change.replaces !== undefined) await admin.policies.unset({ params: { id: change.replaces } });
        await admin.policies.set({ body: change.set });
      }
      return changes.length;
    },
    onSettled: () => client.invalidateQueries({ queryKey: keys.deployments }),
  });
}

export function useUnsetPolicy() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (id: number) => admin.policies.unset({ params: { id } }),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.deployments }),
  });
}
