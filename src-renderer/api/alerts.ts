// Alert rules, incidents and webhooks: queries and mutations.
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { AlertRuleCreate, AlertRulePatch, WebhookCreate, WebhookPatch } from '../../src-shared/contract/index.ts';
import { admin } from './client.ts';

export const alertKeys = {
  all: ['alerts'] as const,
  rules: ['alerts', 'rules'] as const,
  incidents: (state: 'open' | 'resolved') => ['alerts', 'incidents', state] as const,
  webhooks: ['alerts', 'webhooks'] as const,
  deliveries: (id: number) => ['alerts', 'deliveries', id] as const,
};

export function useAlertRules() {
  return useQuery({ queryKey: alertKeys.rules, queryFn: async ({ signal }) => (await admin.alerts.rules({ signal })).items });
}

export function useIncidents(state: 'open' | 'resolved') {
  return useQuery({
    queryKey: alertKeys.incidents(state),
    queryFn: async ({ signal }) => (await admin.alerts.incidents({ query: { state, limit: 200 }, signal })).items,
  });
}

export function useWebhooks() {
  return useQuery({ queryKey: alertKeys.webhooks, queryFn: async ({ signal }) => (await admin.webhooks.list({ signal })).items });
}

export function useDeliveries(id: number | null) {
  return useQuery({
    queryKey: alertKeys.deliveries(id ?? 0),
    queryFn: async ({ signal }) => (await admin.webhooks.deliveries({ params: { id: id! }, query: { limit: 50 }, signal })).items,
    enabled: id !== null,
  });
}

function useAlertMutation<I, O>(fn: (input: I) => Promise<O>) {
  const client = useQueryClient();
  return useMutation({ mutationFn: fn, onSettled: () => client.invalidateQueries({ queryKey: alertKeys.all }) });
}

export const useCreateRule = () => useAlertMutation((body: AlertRuleCreate) => admin.alerts.createRule({ body }));
export const useUpdateRule = () =>
  useAlertMutation(({ id, patch }: { id: number; patch: AlertRulePatch }) =>
    admin.alerts.updateRule({ params: { id }, body: patch }),
  );
export const useDeleteRule = () => useAlertMutation((id: number) => admin.alerts.deleteRule({ params: { id } }));
export const useEvaluateAlerts = () => useAlertMutation(() => admin.alerts.evaluate());
export const useCreateWebhook = () => useAlertMutation((body: WebhookCreate) => admin.webhooks.create({ body }));
export const useUpdateWebhook = () =>
  useAlertMutation(({ id, patch }: { id: number; patch: WebhookPatch }) =>
    admin.webhooks.update({ params: { id }, body: patch }),
  );
export const useDeleteWebhook = () => useAlertMutation((id: number) => admin.webhooks.delete({ params: { id } }));
export const useTestWebhook = () => useAlertMutation((id: number) => admin.webhooks.test({ params: { id } }));
