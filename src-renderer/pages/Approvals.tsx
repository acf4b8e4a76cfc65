import { Anchor, Button, Checkbox, Group, Table, Text } from '@mantine/core';
import { IconChecks } from '@tabler/icons-react';
import { useMemo, useState } from 'react';
import { useApproveAgents } from '../api/codes.ts';
import { useAgents } from '../api/queries.ts';
import { Link } from '../lib/router.tsx';
import {
  EmptyState,
  ErrorState,
  LoadingState,
  notifyError,
  notifySuccess,
  PageHeader,
  RelativeTime,
} from '../components/common.tsx';
import { DecideButtons } from '../features/approval.tsx';
import { Gate } from '../components/permissions.tsx';

/** Devices enrolled with a code that needs approval: approve (one, some or all) or reject. */
export function ApprovalsPage() {
  const agents = useAgents();
  const approve = useApproveAgents();
  const [selected, setSelected] = useState<Set<number>>(new Set());
  const waiting = useMemo(() => (agents.data ?? []).filter((agent) => agent.enroll_status === 'pending_approval'), [agents.data]);
  const chosen = waiting.filter((agent) => selected.has(agent.id)).map((agent) => agent.id);

  const approveMany = (ids: number[]) =>
    approve.mutate(ids, {
      onSuccess: ({ approved, skipped }) => {
        notifySuccess(
          `${approved.length} device${approved.length === 1 ? '' : 's'} approved${skipped.length ? `; ${skipped.length} skipped (${skipped[0]!.reason})` : ''}`,
        );
        setSelected(new Set());
      },
      onError: (error) => notifyError('Not approved', error),
    });

  return (
    <>
      <PageHeader
        title="Waiting for approval"
        description="Devices enrolled with an enrollment code that needs an admin's approval. Until approved they can only wait: the broker refuses them, and no report, position, task status or download of theirs is accepted (nothing they send is shown). A rejected device is freed."
        actions={
          <Group gap="sm">
            <Gate permission="devices.approve">
              <Button
                variant="default"
                leftSection={<IconChecks size={16} />}
                disabled={chosen.length === 0}
                loading={approve.isPending}
                onClick={() => approveMany(chosen)}
              >
                Approve selected ({chosen.length})
              </Button>
            </Gate>
            <Gate permission="devices.approve">
              <Button
                leftSection={<IconChecks size={16} />}
                disabled={waiting.length === 0}
                loading={approve.isPending}
                onClick={() => approveMany(waiting.map((a) => a.id))}
              >
                Approve all ({waiting.length})
              </Button>
            </Gate>
          </Group>
        }
      />
      {agents.isPending ? (
        <LoadingState />
      ) : agents.isError ? (
        <ErrorState error={agents.error} onRetry={() => void agents.refetch()} />
      ) : waiting.length === 0 ? (
        <EmptyState title="No device is waiting">Devices enrolled with a code whose approval is manual appear here.</EmptyState>
      ) : (
        <Table.ScrollContainer minWidth={760}>
          <Table striped verticalSpacing="sm" data-testid="approval-queue">
            <Table.Thead>
              <Table.Tr>
                <Table.Th w={40}>
                  <Checkbox
                    aria-label="Select all"
                    checked={chosen.length === waiting.length}
                    indeterminate={chosen.length > 0 && chosen.length < waiting.length}
                    onChange={(e) => setSelected(e.currentTarget.checked ? new Set(waiting.map((a) => a.id)) : new Set())}
                  />
                </Table.Th>
                <Table.Th>Person</Table.Th>
                <Table.Th>Device</Table.Th>
                <Table.Th>Code</Table.Th>
                <Table.Th>Fleet</Table.Th>
                <Table.Th>Enrolled</Table.Th>
                <Table.Th />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {waiting.map((agent) => (
                <Table.Tr key={agent.id} data-testid="approval-row" data-email={agent.email ?? ''}>
                  <Table.Td>
                    <Checkbox
                      aria-label={`Select ${agent.name}`}
                      checked={selected.has(agent.id)}
                      onChange={(e) => {
                        const next = new Set(selected);
                        if (e.currentTarget.checked) next.add(agent.id);
                        else next.delete(agent.id);
                        setSelected(next);
                      }}
                    />
                  </Table.Td>
                  <Table.Td>
                    {agent.email ?? (
                      <Text span c="dimmed">
                        —
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td className="mono">
                    <Anchor component={Link} to={`/devices?agent=${agent.id}`}>
                      {agent.name}
                    </Anchor>{' '}
                    <Text span size="xs" c="dimmed">
                      {agent.type} {agent.version}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    {typeof agent.enrollment_code_id === 'number' ? (
                      <Anchor component={Link} to={`/codes/${agent.enrollment_code_id}`}>
                        {String(agent.enrollment_code ?? agent.enrollment_code_id)}
                      </Anchor>
                    ) : (
                      '—'
                    )}
                  </Table.Td>
                  <Table.Td>{agent.fleet}</Table.Td>
                  <Table.Td>
                    <RelativeTime iso={agent.updated_at} />
                  </Table.Td>
                  <Table.Td>
                    <DecideButtons agentId={agent.id} />
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </>
  );
}
