import { ActionIcon, Badge, Button, Group, Modal, Stack, Table, Text, Tooltip } from '@mantine/core';
import { IconTrash } from '@tabler/icons-react';
import { useMemo, useState } from 'react';
import { useAssignToView, usePolicyCatalogue, useUnassignView, useViewAssignments } from '../api/queries.ts';
import type { DeviceView, PolicyCatalogueEntry, ViewAssignment } from '../../src-shared/contract/index.ts';
import { notifyError, notifySuccess, QueryView } from '../components/common.tsx';
import { Gate, RoleNotice } from '../components/permissions.tsx';
import { Marks, showValue, ValueControl, type Value } from './policy-controls.tsx';

/** "2 devices · 1 done · 1 pending": a view assignment's members. */
const progressOf = (a: ViewAssignment) =>
  [
    `${a.devices} device${a.devices === 1 ? '' : 's'}`,
    a.done ? `${a.done} done` : '',
    a.pending ? `${a.pending} pending` : '',
    a.failed ? `${a.failed} failed` : '',
    a.overriden ? `${a.overriden} overriden` : '',
  ]
    .filter(Boolean)
    .join(' · ');

function ViewPolicyRow({
  view,
  policy,
  assignment,
}: {
  view: DeviceView;
  policy: PolicyCatalogueEntry;
  assignment: ViewAssignment | undefined;
}) {
  const current = (assignment?.value ?? null) as Value | null;
  const [draft, setDraft] = useState<Value>(current ?? (policy.recommended as Value));
  const assign = useAssignToView();
  const unassign = useUnassignView();
  const changed = current === null || draft !== current;
  const apply = async () => {
    if (assignment) await unassign.mutateAsync(assignment.id);
    await assign.mutateAsync({ viewId: view.id, body: { policy: policy.symbol, value: draft } });
  };
  return (
    <Table.Tr data-policy={policy.symbol} data-set={assignment ? 'yes' : 'no'}>
      <Table.Td>
        <Text size="sm" fw={500}>
          {policy.label}
        </Text>
        <Marks policy={policy} />
      </Table.Td>
      <Table.Td w={190}>
        <ValueControl policy={policy} value={draft} onChange={setDraft} />
      </Table.Td>
      <Table.Td w={230}>
        {assignment ? (
          <Stack gap={0}>
            <Text size="xs">In force: {showValue(policy, current)}</Text>
            <Text size="xs" c="dimmed" data-testid="view-policy-progress">
              {progressOf(assignment)}
            </Text>
          </Stack>
        ) : (
          <Text size="xs" c="dimmed">
            Not set on this view
          </Text>
        )}
      </Table.Td>
      <Table.Td w={110}>
        <Group gap={4} wrap="nowrap">
          <Gate permission="policies.write">
            <Button
              size="compact-xs"
              variant={changed ? 'filled' : 'default'}
              disabled={!changed}
              loading={assign.isPending || unassign.isPending}
              onClick={() => {
                apply().then(
                  () => notifySuccess(`${policy.label} on view "${view.name}": ${showValue(policy, draft)}`),
                  (e: unknown) => notifyError('Not applied', e),
                );
              }}
            >
              {assignment ? 'Change' : 'Apply'}
            </Button>
          </Gate>
          {assignment ? (
            <Gate permission="policies.write">
              <Tooltip label="Unset (the devices' fleet or own value applies)">
                <ActionIcon
                  variant="subtle"
                  color="red"
                  aria-label={`Unset ${policy.label} on the view`}
                  loading={unassign.isPending}
                  onClick={() =>
                    unassign.mutate(assignment.id, {
                      onSuccess: () => notifySuccess(`${policy.label} unset on view "${view.name}"`),
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
  );
}

/**
 * The policies and deployments of a saved view: each value policy of the catalogue set, changed or
 * unset on the view (carried to each device in it, and to those that enter it later), and the
 * deployments assigned to it (Files & packages → Deploy… → A saved view adds one).
 */
export function ViewPoliciesModal({ view, opened, onClose }: { view: DeviceView; opened: boolean; onClose: () => void }) {
  const catalogue = usePolicyCatalogue();
  const assignments = useViewAssignments(opened ? view.id : null);
  const unassign = useUnassignView();
  const active = useMemo(() => (assignments.data ?? []).filter((a) => a.state === 'active'), [assignments.data]);
  const byPolicy = useMemo(() => new Map(active.map((a) => [a.policy, a])), [active]);
  const deployments = active.filter((a) => ['deployApp', 'deployFile', 'removeApp', 'removeFile'].includes(a.policy));
  return (
    <Modal opened={opened} onClose={onClose} title={`Policies of view "${view.name}"`} size="xl">
      <Stack gap="sm" data-testid="view-policies">
        <RoleNotice permission="policies.write" />
        <Text size="sm" c="dimmed">
          Carried to each device in the view on its own topic, and to devices that enter it later; a device that leaves the view
          gets its fleet&apos;s value back. A device&apos;s own value beats the view&apos;s; the view&apos;s beats the
          fleet&apos;s.
        </Text>
        {deployments.length > 0 ? (
          <Stack gap={4}>
            {deployments.map((a) => (
              <Group key={a.id} gap="xs" data-testid="view-deployment">
                <Badge variant="light">{a.label}</Badge>
                <Text size="sm">{a.item_name}</Text>
                <Text size="xs" c="dimmed">
                  {progressOf(a)}
                </Text>
                <Gate permission="policies.write">
                  <ActionIcon
                    variant="subtle"
                    color="red"
                    aria-label={`Remove ${a.item_name} from the view`}
                    onClick={() =>
                      unassign.mutate(a.id, {
                        onSuccess: () => notifySuccess(`${a.item_name} removed from view "${view.name}"`),
                        onError: (e) => notifyError('Not removed', e),
                      })
                    }
                  >
                    <IconTrash size={16} />
                  </ActionIcon>
                </Gate>
              </Group>
            ))}
          </Stack>
        ) : null}
        <QueryView query={catalogue}>
          {(entries) => (
            <Table verticalSpacing="xs">
              <Table.Tbody>
                {entries
                  .filter((p) => p.type !== 'deployment')
                  .map((p) => (
                    <ViewPolicyRow
                      key={`${p.symbol}-${byPolicy.get(p.symbol)?.id ?? 'none'}`}
                      view={view}
                      policy={p}
                      assignment={byPolicy.get(p.symbol)}
                    />
                  ))}
              </Table.Tbody>
            </Table>
          )}
        </QueryView>
      </Stack>
    </Modal>
  );
}
