import { ActionIcon, Button, Group, Stack, Table, Text, Title, Tooltip } from '@mantine/core';
import { IconChevronDown, IconChevronRight, IconTrash } from '@tabler/icons-react';
import { Fragment, useMemo, useState } from 'react';
import { useAgentPolicies, useAssignments, usePolicyCatalogue, useSetPolicies, useUnsetPolicy } from '../api/queries.ts';
import type { Assignment, EffectivePolicy, PolicyCatalogueEntry } from '../../src-shared/contract/index.ts';
import { confirmAction, notifyError, notifySuccess, QueryView, RelativeTime } from '../components/common.tsx';
import { DeploymentProgress, TaskRows, TaskStatusBadge } from './deployments.tsx';
import { DevicePolicyForm, UnsetOwnValue } from './device-policy-form.tsx';
import { Marks, showValue, ValueControl, type Value } from './policy-controls.tsx';
import { TaskVerificationCell } from './verification.tsx';
import { Gate, RoleNotice } from '../components/permissions.tsx';

/** One policy of a fleet: its control, the value in force with its progress, and each device's status. */
function PolicyRow({
  policy,
  assignment,
  fleetId,
}: {
  policy: PolicyCatalogueEntry;
  assignment: Assignment | undefined;
  fleetId: number;
}) {
  const current = (assignment?.value ?? null) as Value | null;
  const [draft, setDraft] = useState<Value>(current ?? (policy.recommended as Value));
  const [open, setOpen] = useState(false);
  const set = useSetPolicies();
  const unset = useUnsetPolicy();
  const changed = current === null || draft !== current;
  return (
    <>
      <Table.Tr data-policy={policy.symbol} data-set={assignment ? 'yes' : 'no'}>
        <Table.Td w={36}>
          {assignment ? (
            <ActionIcon
              variant="subtle"
              color="gray"
              aria-label={open ? 'Hide devices' : 'Show devices'}
              aria-expanded={open}
              onClick={() => setOpen(!open)}
            >
              {open ? <IconChevronDown size={16} /> : <IconChevronRight size={16} />}
            </ActionIcon>
          ) : null}
        </Table.Td>
        <Table.Td>
          <Text size="sm" fw={500}>
            {policy.label}
          </Text>
          <Text size="xs" c="dimmed">
            {policy.explanation} Recommended: {showValue(policy, policy.recommended as Value)}.
          </Text>
          <Marks policy={policy} />
        </Table.Td>
        <Table.Td w={190}>
          <ValueControl policy={policy} value={draft} onChange={setDraft} />
        </Table.Td>
        <Table.Td w={250}>
          {assignment ? (
            <Stack gap={2}>
              <Text size="xs">In force: {showValue(policy, current)}</Text>
              <DeploymentProgress counts={assignment} text={assignment.progress} />
            </Stack>
          ) : (
            <Text size="xs" c="dimmed">
              Not set (devices keep their own setting)
            </Text>
          )}
        </Table.Td>
        <Table.Td w={120}>
          <Group gap={4} wrap="nowrap">
            <Gate permission="policies.write">
              <Button
                size="compact-xs"
                variant={changed ? 'filled' : 'default'}
                disabled={!changed}
                loading={set.isPending}
                onClick={() =>
                  set.mutate([{ set: { policy: policy.symbol, value: draft, fleet_id: fleetId }, replaces: assignment?.id }], {
                    onSuccess: () => notifySuccess(`${policy.label}: ${showValue(policy, draft)}`),
                    onError: (e) => notifyError('Not applied', e),
                  })
                }
              >
                {assignment ? 'Change' : 'Apply'}
              </Button>
            </Gate>
            {assignment ? (
              <Gate permission="policies.write">
                <Tooltip label="Unset (devices keep their own setting)">
                  <ActionIcon
                    variant="subtle"
                    color="red"
                    aria-label={`Unset ${policy.label}`}
                    loading={unset.isPending}
                    onClick={() =>
                      unset.mutate(assignment.id, {
                        onSuccess: () => notifySuccess(`${policy.label} unset`),
                        onError: (e) => notifyError('Not unset', e),
                      })
                    }
                  >
                    <IconTrash size={16} />
                  </ActionIcon>
                </Tooltip>
              </Gate>
            ) : null}
          </Group>
        </Table.Td>
      </Table.Tr>
      {open && assignment ? (
        <Table.Tr>
          <Table.Td />
          <Table.Td colSpan={4}>
            <TaskRows id={assignment.id} />
          </Table.Td>
        </Table.Tr>
      ) : null}
    </>
  );
}

/** A fleet's policies: forms generated from the catalogue, grouped by category, live progress per policy. */
export function FleetPolicies({ fleetId, fleetName }: { fleetId: number; fleetName: string }) {
  const catalogue = usePolicyCatalogue();
  const assignments = useAssignments({ fleet_id: fleetId, state: 'active', kind: 'value' });
  const set = useSetPolicies();
  const byPolicy = useMemo(() => new Map((assignments.data ?? []).map((a) => [a.policy, a])), [assignments.data]);
  return (
    <QueryView query={catalogue}>
      {(entries) => {
        const values = entries.filter((p) => p.type !== 'deployment');
        const categories = [...new Set(values.map((p) => p.category))];
        const missing = values.filter((p) => !byPolicy.has(p.symbol));
        return (
          <Stack gap="sm" data-testid="fleet-policies">
            <RoleNotice permission="policies.write" />
            <Group justify="space-between">
              <Text size="sm" c="dimmed">
                {values.length - missing.length} of {values.length} policies set on {fleetName}.
              </Text>
              <Gate permission="policies.write">
                <Button
                  size="xs"
                  variant="light"
                  disabled={missing.length === 0 || !assignments.data}
                  loading={set.isPending}
                  onClick={() =>
                    confirmAction(
                      {
                        title: 'Apply the recommended baseline?',
                        message: `Sets the ${missing.length} policies not set on ${fleetName} to their recommended values (the ones already set stay as they are). Devices that cannot apply one report it incompatible.`,
                        confirmLabel: 'Apply baseline',
                        danger: false,
                      },
                      () =>
                        set.mutate(
                          missing.map((p) => ({ set: { policy: p.symbol, value: p.recommended as Value, fleet_id: fleetId } })),
                          {
                            onSuccess: (n) => notifySuccess(`${n} policies applied to ${fleetName}`),
                            onError: (e) => notifyError('Baseline not fully applied', e),
                          },
                        ),
                    )
                  }
                >
                  Apply the recommended baseline
                </Button>
              </Gate>
            </Group>
            <Table.ScrollContainer minWidth={760}>
              <Table verticalSpacing="xs">
                {categories.map((category) => (
                  <Fragment key={category}>
                    <Table.Thead>
                      <Table.Tr>
                        <Table.Th colSpan={5}>
                          <Title order={6}>{category}</Title>
                        </Table.Th>
                      </Table.Tr>
                    </Table.Thead>
                    <Table.Tbody>
                      {values
                        .filter((p) => p.category === category)
                        .map((p) => (
                          <PolicyRow
                            key={`${p.symbol}-${byPolicy.get(p.symbol)?.id ?? 'none'}`}
                            policy={p}
                            assignment={byPolicy.get(p.symbol)}
                            fleetId={fleetId}
                          />
                        ))}
                    </Table.Tbody>
                  </Fragment>
                ))}
              </Table>
            </Table.ScrollContainer>
          </Stack>
        );
      }}
    </QueryView>
  );
}

/** A device's effective policies: each value, where it comes from, its status and last change. */
export function DevicePolicies({ agentId }: { agentId: number }) {
  const catalogue = usePolicyCatalogue();
  const policies = useAgentPolicies(agentId);
  const bySymbol = useMemo(() => new Map((catalogue.data ?? []).map((p) => [p.symbol, p])), [catalogue.data]);
  return (
    <Stack gap="sm">
      <QueryView query={policies}>
        {(items: EffectivePolicy[]) =>
          items.length === 0 ? (
            <Text size="sm" c="dimmed">
              No policy applies to this device.
            </Text>
          ) : (
            <Table fz="sm" verticalSpacing={4} data-testid="device-policies">
              <Table.Tbody>
                {items.map((p) => (
                  <Table.Tr key={p.task_id} data-policy={p.policy} data-effective={p.effective} opacity={p.effective ? 1 : 0.55}>
                    <Table.Td>
                      <Text size="sm">{p.label}</Text>
                      <Text size="xs" c="dimmed">
                        {p.value === null ? p.item_name : showValue(bySymbol.get(p.policy), p.value)} · from{' '}
                        {p.source === 'device' ? 'this device' : p.source_name}
                        {p.effective ? '' : ' · not applied'}
                      </Text>
                    </Table.Td>
                    <Table.Td w={130}>
                      <TaskStatusBadge status={p.status} />
                    </Table.Td>
                    <Table.Td>
                      <Text size="xs" c={p.status === 'failed' ? 'red' : 'dimmed'}>
                        {p.reason ?? ''}
                      </Text>
                      <TaskVerificationCell verification={p.verification} agentId={agentId} agentName="this device" />
                    </Table.Td>
                    <Table.Td w={110}>
                      <Text size="xs" c="dimmed">
                        <RelativeTime iso={p.updated_at} />
                      </Text>
                    </Table.Td>
                    <Table.Td w={40}>{p.source === 'device' && p.value !== null ? <UnsetOwnValue policy={p} /> : null}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          )
        }
      </QueryView>
      <DevicePolicyForm agentId={agentId} />
    </Stack>
  );
}
