import {
  Alert,
  Badge,
  Button,
  Code,
  Group,
  Modal,
  MultiSelect,
  NumberInput,
  PasswordInput,
  SegmentedControl,
  Select,
  Stack,
  Switch,
  Table,
  Tabs,
  TagsInput,
  Text,
  TextInput,
  Tooltip,
  VisuallyHidden,
} from '@mantine/core';
import { IconBell, IconPlus, IconRefresh, IconSend, IconTrash, IconWebhook, IconList, IconPencil } from '@tabler/icons-react';
import { useState, type FormEvent } from 'react';
import {
  useAlertRules,
  useCreateRule,
  useCreateWebhook,
  useDeleteRule,
  useDeleteWebhook,
  useDeliveries,
  useEvaluateAlerts,
  useIncidents,
  useTestWebhook,
  useUpdateRule,
  useUpdateWebhook,
  useWebhooks,
} from '../api/alerts.ts';
import { errorMessage } from '../api/client.ts';
import { useFleets } from '../api/queries.ts';
import { ALERT_KIND_INFO, ALERT_KINDS, type AlertKind } from '../../src-shared/contract/alert-kinds.ts';
import type { AlertRule, Webhook, WebhookCreated, WebhookDelivery } from '../../src-shared/contract/index.ts';
import { isValidEmail } from '../../src-shared/contract/rules.ts';
import {
  confirmAction,
  CopyIcon,
  EmptyState,
  notifyError,
  notifySuccess,
  PageHeader,
  QueryView,
  RelativeTime,
} from '../components/common.tsx';
import { Gate, useCan } from '../components/permissions.tsx';

const DELIVERY_COLOR: Record<WebhookDelivery['state'], string> = {
  queued: 'orange',
  sending: 'blue',
  delivered: 'teal',
  failed: 'red',
};

function DeliveryBadge({ delivery }: { delivery: WebhookDelivery }) {
  const label =
    delivery.state === 'queued' && delivery.attempts > 0
      ? `retrying (${delivery.attempts}/${delivery.max_attempts})`
      : delivery.state;
  return (
    <Badge color={DELIVERY_COLOR[delivery.state]} variant="light" data-testid="delivery-state">
      {label}
    </Badge>
  );
}

/** A new rule (or one to edit: its kind stays): the condition and its threshold, a fleet, who to tell. */
function RuleModal({
  opened,
  onClose,
  webhooks,
  rule = null,
}: {
  opened: boolean;
  onClose: () => void;
  webhooks: Webhook[];
  rule?: AlertRule | null;
}) {
  const create = useCreateRule();
  const update = useUpdateRule();
  const fleets = useFleets();
  const [kind, setKind] = useState<AlertKind>(rule?.kind ?? 'device_silent');
  const [threshold, setThreshold] = useState<number | string>(
    rule ? (rule.threshold ?? '') : ALERT_KIND_INFO.device_silent.threshold!.default,
  );
  const [fleet, setFleet] = useState<string | null>(rule?.fleet_id ? String(rule.fleet_id) : null);
  const [emails, setEmails] = useState<string[]>(rule?.emails ?? []);
  const [hooks, setHooks] = useState<string[]>(rule?.webhook_ids.map(String) ?? []);
  const [name, setName] = useState(rule?.name ?? '');
  const [error, setError] = useState<string | null>(null);
  const info = ALERT_KIND_INFO[kind].threshold;

  const close = () => {
    setError(null);
    if (!rule) {
      setName('');
      setEmails([]);
      setHooks([]);
      setFleet(null);
    }
    onClose();
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const bad = emails.filter((email) => !isValidEmail(email));
    if (bad.length > 0) {
      setError(`Not an email address: ${bad.join(', ')}`);
      return;
    }
    setError(null);
    const done = {
      onSuccess: (saved: AlertRule) => {
        notifySuccess(`Alert rule "${saved.name}" ${rule ? 'saved' : 'created'}`);
        close();
      },
      onError: (failure: unknown) => setError(errorMessage(failure)),
    };
    if (rule) {
      update.mutate(
        {
          id: rule.id,
          patch: {
            ...(info && threshold !== '' ? { threshold: Number(threshold) } : {}),
            fleet_id: fleet ? Number(fleet) : null,
            emails,
            webhook_ids: hooks.map(Number),
            ...(name.trim() ? { name: name.trim() } : {}),
          },
        },
        done,
      );
      return;
    }
    create.mutate(
      {
        kind,
        ...(info && threshold !== '' ? { threshold: Number(threshold) } : {}),
        ...(fleet ? { fleet_id: Number(fleet) } : {}),
        ...(emails.length > 0 ? { emails } : {}),
        ...(hooks.length > 0 ? { webhook_ids: hooks.map(Number) } : {}),
        ...(name.trim() ? { name: name.trim() } : {}),
      },
      done,
    );
  };

  return (
    <Modal opened={opened} onClose={close} title={rule ? `Edit "${rule.name}"` : 'New alert rule'} size="lg">
      <form onSubmit={submit} noValidate>
        <Stack gap="md">
          <Select
            label="When"
            data={ALERT_KINDS.map((value) => ({ value, label: ALERT_KIND_INFO[value].label }))}
            value={kind}
            onChange={(value) => {
              if (!value) return;
              const next = value as AlertKind;
              setKind(next);
              setThreshold(ALERT_KIND_INFO[next].threshold?.default ?? '');
            }}
            allowDeselect={false}
            disabled={rule !== null}
            description={rule ? 'A rule keeps its condition: make another rule for another one' : undefined}
            data-testid="rule-kind"
          />
          {info ? (
            <NumberInput
              label={`For more than (${info.unit})`}
              min={1}
              max={info.max}
              value={threshold}
              onChange={setThreshold}
              data-testid="rule-threshold"
            />
          ) : null}
          <Select
            label="Fleet"
            placeholder="Every fleet"
            data={(fleets.data ?? []).map((f) => ({ value: String(f.id), label: f.name }))}
            value={fleet}
            onChange={setFleet}
            clearable
            data-testid="rule-fleet"
          />
          <TagsInput
            label="Email"
            description="Addresses told once when incidents open and once when they resolve (Enter after each)"
            value={emails}
            onChange={setEmails}
            placeholder="ops@example.org"
            data-testid="rule-emails"
          />
          <MultiSelect
            label="Webhooks"
            placeholder={webhooks.length === 0 ? 'No webhooks yet (add one below)' : 'None'}
            data={webhooks.map((w) => ({ value: String(w.id), label: w.name }))}
            value={hooks}
            onChange={setHooks}
            data-testid="rule-webhooks"
          />
          <TextInput
            label="Name"
            description={rule ? undefined : 'Leave empty to name it after its condition'}
            value={name}
            onChange={(e) => setName(e.currentTarget.value)}
          />
          {error ? (
            <Text c="red" size="sm" role="alert">
              {error}
            </Text>
          ) : null}
          <Group justify="flex-end">
            <Button variant="default" onClick={close}>
              Cancel
            </Button>
            <Button
              type="submit"
              loading={create.isPending || update.isPending}
              leftSection={<IconBell size={16} />}
              data-testid="rule-create"
            >
              {rule ? 'Save' : 'Create rule'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

function RuleRow({ rule, webhooks }: { rule: AlertRule; webhooks: Webhook[] }) {
  const [editing, setEditing] = useState(false);
  const update = useUpdateRule();
  const remove = useDeleteRule();
  const can = useCan('alerts.write');
  const hookNames = rule.webhook_ids.map((id) => webhooks.find((w) => w.id === id)?.name ?? `#${id}`);
  const channels = [...rule.emails, ...hookNames];
  const ask = () =>
    confirmAction(
      { title: `Delete "${rule.name}"?`, message: 'Its incidents are deleted with it.', confirmLabel: 'Delete' },
      () =>
        remove.mutate(rule.id, {
          onSuccess: () => notifySuccess(`Alert rule "${rule.name}" deleted`),
          onError: (failure) => notifyError('Could not delete the rule', failure),
        }),
    );
  return (
    <Table.Tr data-testid={`rule-${rule.id}`}>
      <Table.Td>
        <Text size="sm" fw={500}>
          {rule.name}
        </Text>
        {rule.name.startsWith(rule.condition) ? null : (
          <Text size="xs" c="dimmed">
            {rule.condition}
          </Text>
        )}
      </Table.Td>
      <Table.Td>
        {rule.fleet_name ?? (
          <Text c="dimmed" size="sm">
            every fleet
          </Text>
        )}
      </Table.Td>
      <Table.Td>
        <Text size="sm">
          {channels.join(', ') || (
            <Text span c="dimmed" size="sm">
              console only
            </Text>
          )}
        </Text>
      </Table.Td>
      <Table.Td>
        <Badge color={rule.open_incidents > 0 ? 'red' : 'gray'} variant="light" data-testid="rule-open">
          {rule.open_incidents}
        </Badge>
      </Table.Td>
      <Table.Td>
        <Switch
          checked={rule.enabled}
          disabled={!can.allowed || update.isPending}
          onChange={(e) =>
            update.mutate(
              { id: rule.id, patch: { enabled: e.currentTarget.checked } },
              { onError: (failure) => notifyError('Could not change the rule', failure) },
            )
          }
          aria-label={`${rule.name} enabled`}
        />
      </Table.Td>
      <Table.Td>
        {editing ? <RuleModal opened rule={rule} webhooks={webhooks} onClose={() => setEditing(false)} /> : null}
        <Group gap={4} wrap="nowrap" justify="flex-end">
          <Gate permission="alerts.write">
            <Button
              size="xs"
              variant="subtle"
              leftSection={<IconPencil size={14} />}
              onClick={() => setEditing(true)}
              aria-label={`Edit ${rule.name}`}
            >
              Edit
            </Button>
          </Gate>
          <Gate permission="alerts.write">
            <Button size="xs" variant="subtle" color="red" onClick={ask} aria-label={`Delete ${rule.name}`}>
              <IconTrash size={14} />
            </Button>
          </Gate>
        </Group>
      </Table.Td>
    </Table.Tr>
  );
}

function IncidentsPanel() {
  const [state, setState] = useState<'open' | 'resolved'>('open');
  const incidents = useIncidents(state);
  return (
    <Stack gap="sm">
      <SegmentedControl
        value={state}
        onChange={(value) => setState(value as 'open' | 'resolved')}
        data={[
          { value: 'open', label: 'Open' },
          { value: 'resolved', label: 'Resolved' },
        ]}
        w={240}
        data-testid="incident-state"
      />
      <QueryView query={incidents}>
        {(items) =>
          items.length === 0 ? (
            <EmptyState title={state === 'open' ? 'Nothing needs attention' : 'No resolved incidents yet'} />
          ) : (
            <Table.ScrollContainer minWidth={760}>
              <Table verticalSpacing="sm" highlightOnHover data-testid="incidents">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Subject</Table.Th>
                    <Table.Th>Rule</Table.Th>
                    <Table.Th>Why</Table.Th>
                    <Table.Th>Opened</Table.Th>
                    <Table.Th>{state === 'open' ? 'Last checked' : 'Resolved'}</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {items.map((incident) => (
                    <Table.Tr key={incident.id}>
                      <Table.Td>
                        <Text size="sm" fw={500}>
                          {incident.subject}
                        </Text>
                      </Table.Td>
                      <Table.Td>
                        <Text size="sm">{incident.rule_name}</Text>
                      </Table.Td>
                      <Table.Td>
                        <Text size="sm">{incident.detail}</Text>
                      </Table.Td>
                      <Table.Td>
                        <RelativeTime iso={incident.opened_at} />
                      </Table.Td>
                      <Table.Td>
                        <RelativeTime iso={state === 'open' ? incident.last_seen_at : incident.resolved_at} />
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
          )
        }
      </QueryView>
    </Stack>
  );
}

/** Add or edit a webhook; a secret the server draws is shown once. */
function WebhookModal({ webhook, opened, onClose }: { webhook: Webhook | null; opened: boolean; onClose: () => void }) {
  const create = useCreateWebhook();
  const update = useUpdateWebhook();
  const [url, setUrl] = useState(webhook?.url ?? '');
  const [name, setName] = useState(webhook?.name ?? '');
  const [secret, setSecret] = useState('');
  const [created, setCreated] = useState<WebhookCreated | null>(null);
  const [error, setError] = useState<string | null>(null);
  const close = () => {
    setCreated(null);
    setError(null);
    setSecret('');
    if (!webhook) {
      setUrl('');
      setName('');
    }
    onClose();
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!/^https?:\/\//i.test(url.trim())) {
      setError('The URL must start with http:// or https://');
      return;
    }
    if (secret && secret.length < 16) {
      setError('The secret needs at least 16 characters (or leave it empty)');
      return;
    }
    setError(null);
    const fields = { url: url.trim(), ...(name.trim() ? { name: name.trim() } : {}), ...(secret ? { secret } : {}) };
    if (webhook) {
      update.mutate(
        { id: webhook.id, patch: fields },
        {
          onSuccess: () => {
            notifySuccess(`Webhook "${fields.name ?? webhook.name}" saved`);
            close();
          },
          onError: (failure) => setError(errorMessage(failure)),
        },
      );
    } else {
      create.mutate(fields, {
        onSuccess: (hook) => {
          if (hook.secret) setCreated(hook);
          else {
            notifySuccess(`Webhook "${hook.name}" added`);
            close();
          }
        },
        onError: (failure) => setError(errorMessage(failure)),
      });
    }
  };
  return (
    <Modal
      opened={opened}
      onClose={close}
      title={created ? 'Webhook added' : webhook ? `Edit "${webhook.name}"` : 'New webhook'}
      size="lg"
    >
      {created ? (
        <Stack gap="md">
          <Alert color="orange" variant="light" title="Copy the secret now: it is shown this once">
            The receiver checks each delivery’s <Code>X-MDM-Signature</Code> with it (see docs/alerts.md).
          </Alert>
          <Group gap="xs" wrap="nowrap">
            <Code block style={{ flex: 1, wordBreak: 'break-all' }} data-testid="new-webhook-secret">
              {created.secret}
            </Code>
            <CopyIcon value={created.secret!} label="Copy the secret" />
          </Group>
          <Group justify="flex-end">
            <Button onClick={close}>Done</Button>
          </Group>
        </Stack>
      ) : (
        <form onSubmit={submit} noValidate>
          <Stack gap="md">
            <TextInput
              label="URL"
              placeholder="https://hooks.example.org/mdm"
              description="http:// or https://. The server posts to any address, local and private ones included."
              value={url}
              onChange={(e) => setUrl(e.currentTarget.value)}
              data-autofocus
              data-testid="webhook-url"
            />
            <TextInput
              label="Name"
              placeholder="Its host"
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              data-testid="webhook-name"
            />
            <PasswordInput
              label={webhook ? 'New secret' : 'Secret'}
              description={
                webhook
                  ? `Now ${webhook.secret_hint}. Leave empty to keep it.`
                  : 'At least 16 characters; leave empty and the server draws one (shown once)'
              }
              value={secret}
              onChange={(e) => setSecret(e.currentTarget.value)}
              data-testid="webhook-secret"
            />
            {error ? (
              <Text c="red" size="sm" role="alert">
                {error}
              </Text>
            ) : null}
            <Group justify="flex-end">
              <Button variant="default" onClick={close}>
                Cancel
              </Button>
              <Button
                type="submit"
                loading={create.isPending || update.isPending}
                leftSection={<IconWebhook size={16} />}
                data-testid="webhook-save"
              >
                {webhook ? 'Save' : 'Add webhook'}
              </Button>
            </Group>
          </Stack>
        </form>
      )}
    </Modal>
  );
}

function DeliveryLog({ webhook, onClose }: { webhook: Webhook | null; onClose: () => void }) {
  const deliveries = useDeliveries(webhook?.id ?? null);
  return (
    <Modal opened={webhook !== null} onClose={onClose} title={`Delivery log: ${webhook?.name ?? ''}`} size="xl">
      <QueryView query={deliveries}>
        {(items) =>
          items.length === 0 ? (
            <EmptyState title="No deliveries yet" />
          ) : (
            <Table.ScrollContainer minWidth={760}>
              <Table verticalSpacing="xs" data-testid="delivery-log">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>When</Table.Th>
                    <Table.Th>Event</Table.Th>
                    <Table.Th>Status</Table.Th>
                    <Table.Th>Attempt</Table.Th>
                    <Table.Th>Answer</Table.Th>
                    <Table.Th>Next retry</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {items.map((d) => (
                    <Table.Tr key={d.id} data-testid={`delivery-${d.id}`}>
                      <Table.Td>
                        <RelativeTime iso={d.created_at} />
                      </Table.Td>
                      <Table.Td>
                        <Code>{d.event}</Code>
                      </Table.Td>
                      <Table.Td>
                        <DeliveryBadge delivery={d} />
                      </Table.Td>
                      <Table.Td>
                        {d.attempts}/{d.max_attempts}
                      </Table.Td>
                      <Table.Td>
                        <Text size="sm">
                          {d.response_code === null ? '' : `HTTP ${d.response_code}`}
                          {d.response_ms === null ? '' : ` · ${d.response_ms} ms`}
                        </Text>
                        {d.error ? (
                          <Text size="xs" c="red">
                            {d.error}
                          </Text>
                        ) : null}
                      </Table.Td>
                      <Table.Td>{d.next_attempt_at ? <RelativeTime iso={d.next_attempt_at} future /> : '—'}</Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
          )
        }
      </QueryView>
    </Modal>
  );
}

function WebhooksPanel() {
  const webhooks = useWebhooks();
  const test = useTestWebhook();
  const update = useUpdateWebhook();
  const remove = useDeleteWebhook();
  const can = useCan('alerts.write');
  const [adding, setAdding] = useState(false);
  const [editing, setEditing] = useState<Webhook | null>(null);
  const [log, setLog] = useState<Webhook | null>(null);
  const sendTest = (hook: Webhook) =>
    test.mutate(hook.id, {
      onSuccess: () => {
        notifySuccess(`Test event queued to "${hook.name}": its log shows the answer`);
        setLog(hook);
      },
      onError: (failure) => notifyError('Could not send the test event', failure),
    });
  const ask = (hook: Webhook) =>
    confirmAction(
      { title: `Delete "${hook.name}"?`, message: 'Its delivery log goes too; rules stop notifying it.', confirmLabel: 'Delete' },
      () =>
        remove.mutate(hook.id, {
          onSuccess: () => notifySuccess(`Webhook "${hook.name}" deleted`),
          onError: (failure) => notifyError('Could not delete the webhook', failure),
        }),
    );
  return (
    <Stack gap="sm">
      <Group justify="space-between">
        <Text size="sm" c="dimmed">
          Each delivery is a JSON POST signed with HMAC-SHA256 (<Code>X-MDM-Signature</Code>), retried with back-off up to 8
          times.
        </Text>
        <Gate permission="alerts.write">
          <Button leftSection={<IconPlus size={16} />} onClick={() => setAdding(true)} data-testid="new-webhook-button">
            New webhook
          </Button>
        </Gate>
      </Group>
      <WebhookModal key={adding ? 'adding' : 'idle'} webhook={null} opened={adding} onClose={() => setAdding(false)} />
      {editing ? <WebhookModal key={editing.id} webhook={editing} opened onClose={() => setEditing(null)} /> : null}
      <DeliveryLog webhook={log} onClose={() => setLog(null)} />
      <QueryView query={webhooks}>
        {(items) =>
          items.length === 0 ? (
            <EmptyState title="No webhooks yet" />
          ) : (
            <Table.ScrollContainer minWidth={820}>
              <Table verticalSpacing="sm" highlightOnHover data-testid="webhooks">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Webhook</Table.Th>
                    <Table.Th>Secret</Table.Th>
                    <Table.Th>Last delivery</Table.Th>
                    <Table.Th>Enabled</Table.Th>
                    <Table.Th>
                      <VisuallyHidden>Actions</VisuallyHidden>
                    </Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {items.map((hook) => (
                    <Table.Tr key={hook.id} data-testid={`webhook-${hook.id}`}>
                      <Table.Td maw={320}>
                        <Text size="sm" fw={500}>
                          {hook.name}
                        </Text>
                        <Text size="xs" c="dimmed" style={{ wordBreak: 'break-all' }}>
                          {hook.url}
                        </Text>
                      </Table.Td>
                      <Table.Td>
                        <Code>{hook.secret_hint}</Code>
                      </Table.Td>
                      <Table.Td>
                        {hook.last_delivery ? (
                          <Group gap={6}>
                            <DeliveryBadge delivery={hook.last_delivery} />
                            <Text size="xs" c="dimmed">
                              {hook.last_delivery.response_code === null ? '' : `HTTP ${hook.last_delivery.response_code} · `}
                              <RelativeTime iso={hook.last_delivery.updated_at} />
                            </Text>
                          </Group>
                        ) : (
                          <Text size="sm" c="dimmed">
                            never
                          </Text>
                        )}
                      </Table.Td>
                      <Table.Td>
                        <Switch
                          checked={hook.enabled}
                          disabled={!can.allowed}
                          onChange={(e) =>
                            update.mutate(
                              { id: hook.id, patch: { enabled: e.currentTarget.checked } },
                              { onError: (failure) => notifyError('Could not change the webhook', failure) },
                            )
                          }
                          aria-label={`${hook.name} enabled`}
                        />
                      </Table.Td>
                      <Table.Td>
                        <Group gap={4} wrap="nowrap" justify="flex-end">
                          <Gate permission="alerts.write">
                            <Tooltip label={hook.enabled ? 'Send a signed test event' : 'Enable it to test it'}>
                              <Button
                                size="xs"
                                variant="light"
                                leftSection={<IconSend size={14} />}
                                onClick={() => sendTest(hook)}
                                disabled={!hook.enabled}
                                aria-label={`Send a test event to ${hook.name}`}
                              >
                                Test
                              </Button>
                            </Tooltip>
                          </Gate>
                          <Button size="xs" variant="subtle" leftSection={<IconList size={14} />} onClick={() => setLog(hook)}>
                            Log
                          </Button>
                          <Gate permission="alerts.write">
                            <Button
                              size="xs"
                              variant="subtle"
                              leftSection={<IconPencil size={14} />}
                              onClick={() => setEditing(hook)}
                            >
                              Edit
                            </Button>
                          </Gate>
                          <Gate permission="alerts.write">
                            <Button
                              size="xs"
                              variant="subtle"
                              color="red"
                              onClick={() => ask(hook)}
                              aria-label={`Delete ${hook.name}`}
                            >
                              <IconTrash size={14} />
                            </Button>
                          </Gate>
                        </Group>
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
          )
        }
      </QueryView>
    </Stack>
  );
}

/** Alerts: what needs attention now (incidents), the rules that watch, and the webhooks they post to. */
export function AlertsPage() {
  const rules = useAlertRules();
  const webhooks = useWebhooks();
  const evaluate = useEvaluateAlerts();
  const [adding, setAdding] = useState(false);
  const [tab, setTab] = useState<string | null>('incidents');
  const open = (rules.data ?? []).reduce((sum, rule) => sum + rule.open_incidents, 0);
  return (
    <>
      <PageHeader
        title="Alerts"
        description="Rules watch the fleet each minute and on events; each incident is told once by email or webhook, and once when it resolves."
        actions={
          <Group gap="xs">
            <Gate permission="alerts.write">
              <Button
                variant="default"
                leftSection={<IconRefresh size={16} />}
                loading={evaluate.isPending}
                onClick={() =>
                  evaluate.mutate(undefined, {
                    onSuccess: (r) => notifySuccess(`Evaluated: ${r.opened} opened, ${r.resolved} resolved`),
                    onError: (failure) => notifyError('Could not evaluate the rules', failure),
                  })
                }
              >
                Evaluate now
              </Button>
            </Gate>
            <Gate permission="alerts.write">
              <Button leftSection={<IconPlus size={16} />} onClick={() => setAdding(true)} data-testid="new-rule-button">
                New rule
              </Button>
            </Gate>
          </Group>
        }
      />
      <RuleModal
        key={adding ? 'adding' : 'idle'}
        opened={adding}
        onClose={() => setAdding(false)}
        webhooks={webhooks.data ?? []}
      />
      <Tabs value={tab} onChange={setTab} keepMounted={false}>
        <Tabs.List mb="md">
          <Tabs.Tab
            value="incidents"
            rightSection={
              open > 0 ? (
                <Badge color="red" size="xs" circle>
                  {open}
                </Badge>
              ) : null
            }
          >
            Incidents
          </Tabs.Tab>
          <Tabs.Tab value="rules">Rules</Tabs.Tab>
          <Tabs.Tab value="webhooks">Webhooks</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="incidents">
          <IncidentsPanel />
        </Tabs.Panel>
        <Tabs.Panel value="rules">
          <QueryView query={rules}>
            {(items) =>
              items.length === 0 ? (
                <EmptyState title="No alert rules yet" />
              ) : (
                <Table.ScrollContainer minWidth={760}>
                  <Table verticalSpacing="sm" highlightOnHover data-testid="rules">
                    <Table.Thead>
                      <Table.Tr>
                        <Table.Th>Rule</Table.Th>
                        <Table.Th>Fleet</Table.Th>
                        <Table.Th>Notifies</Table.Th>
                        <Table.Th>Open</Table.Th>
                        <Table.Th>Enabled</Table.Th>
                        <Table.Th>
                          <VisuallyHidden>Actions</VisuallyHidden>
                        </Table.Th>
                      </Table.Tr>
                    </Table.Thead>
                    <Table.Tbody>
                      {items.map((rule) => (
                        <RuleRow key={rule.id} rule={rule} webhooks={webhooks.data ?? []} />
                      ))}
                    </Table.Tbody>
                  </Table>
                </Table.ScrollContainer>
              )
            }
          </QueryView>
        </Tabs.Panel>
        <Tabs.Panel value="webhooks">
          <WebhooksPanel />
        </Tabs.Panel>
      </Tabs>
    </>
  );
}
