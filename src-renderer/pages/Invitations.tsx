import {
  Anchor,
  Button,
  Card,
  Checkbox,
  Group,
  Pagination,
  SegmentedControl,
  Select,
  Table,
  Text,
  TextInput,
  Tooltip,
} from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { IconMailPlus, IconPrinter, IconSearch, IconUsersPlus } from '@tabler/icons-react';
import { useEffect, useMemo, useState } from 'react';
import { useFleets, useInvitations } from '../api/queries.ts';
import type { InvitationFilter, InvitationStatus } from '../../src-shared/contract/index.ts';
import { Link, navigate, useLocation } from '../lib/router.tsx';
import { EmptyState, ErrorState, InvitationStatusBadge, LoadingState, PageHeader, RelativeTime } from '../components/common.tsx';
import { ExportMenu } from '../components/export-menu.tsx';
import { DeliveryMark } from '../features/mail.tsx';
import { fullName } from '../lib/format.ts';
import { printQuery } from '../lib/print-layout.ts';
import { BulkImportModal } from './BulkImportModal.tsx';
import { NewInvitationModal } from './NewInvitationModal.tsx';
import { Gate, useCan } from '../components/permissions.tsx';

const PAGE_SIZE = 50;
const STATUSES: { value: string; label: string }[] = [
  { value: 'all', label: 'All' },
  { value: 'pending', label: 'Pending' },
  { value: 'enrolled', label: 'Enrolled' },
  { value: 'expired', label: 'Expired' },
  { value: 'revoked', label: 'Revoked' },
];

export function Invitations() {
  const { search } = useLocation();
  const params = new URLSearchParams(search);
  // The address says "enrolled", as the console does; the API's word for it is "done" (an older link's too).
  const asked = params.get('status') === 'done' ? 'enrolled' : params.get('status');
  const status = (STATUSES.some((s) => s.value === asked) ? asked : 'all')!;
  const fleetId = params.get('fleet');
  const [q, setQ] = useState(params.get('q') ?? '');
  const [debouncedQ] = useDebouncedValue(q.trim(), 250);
  const [page, setPage] = useState(1);
  const [selected, setSelected] = useState<Set<number>>(new Set());
  const newOpen = params.get('new') === '1';
  const bulkOpen = params.get('bulk') === '1';
  const mayInvite = useCan('invitations.create').allowed;
  const fleets = useFleets();

  const setParam = (name: string, value: string | null) => {
    const next = new URLSearchParams(search);
    if (value === null || value === '' || value === 'all') next.delete(name);
    else next.set(name, value);
    const text = next.toString();
    navigate(`/invitations${text ? `?${text}` : ''}`, { replace: true });
  };

  // Only the debounced text writes the address; setParam is a new function each render.
  // eslint-disable-next-line react-hooks/exhaustive-deps -- see above
  useEffect(() => setParam('q', debouncedQ || null), [debouncedQ]);
  useEffect(() => setPage(1), [status, debouncedQ, fleetId]);

  const filter: InvitationFilter = useMemo(
    () => ({
      ...(status !== 'all' ? { status: (status === 'enrolled' ? 'done' : status) as InvitationStatus } : {}),
      ...(debouncedQ ? { q: debouncedQ } : {}),
      ...(fleetId ? { fleet_id: Number(fleetId) } : {}),
      limit: PAGE_SIZE,
      offset: (page - 1) * PAGE_SIZE,
    }),
    [status, debouncedQ, fleetId, page],
  );
  const list = useInvitations(filter);
  const items = list.data?.items ?? [];
  const total = list.data?.total ?? 0;
  const pageIds = items.map((item) => item.id);
  const allOnPage = pageIds.length > 0 && pageIds.every((id) => selected.has(id));
  const someOnPage = pageIds.some((id) => selected.has(id));
  const filtered = status !== 'all' || debouncedQ !== '' || fleetId !== null;

  const toggle = (id: number) =>
    setSelected((current) => {
      const next = new Set(current);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });

  return (
    <>
      <PageHeader
        title="Invitations"
        description="Each invitation carries a QR code and a deeplink that enrolls one device."
        actions={
          <>
            <ExportMenu
              path="/api/invitations/export"
              what="invitations"
              filtered={filtered}
              testId="invitations-export"
              params={{ status: filter.status, q: filter.q, fleet_id: filter.fleet_id }}
            />
            <Gate permission="invitations.create">
              <Button variant="default" leftSection={<IconUsersPlus size={16} />} onClick={() => setParam('bulk', '1')}>
                Invite many
              </Button>
            </Gate>
            <Gate permission="invitations.create">
              <Button leftSection={<IconMailPlus size={16} />} onClick={() => setParam('new', '1')}>
                New invitation
              </Button>
            </Gate>
          </>
        }
      />
      <Card withBorder radius="md" p={0}>
        <Group p="md" gap="sm" justify="space-between" wrap="wrap">
          <Group gap="sm" wrap="wrap">
            <SegmentedControl
              data={STATUSES}
              value={status}
              onChange={(value) => setParam('status', value)}
              aria-label="Status"
              visibleFrom="md"
            />
            <Select
              data={STATUSES}
              value={status}
              onChange={(value) => setParam('status', value)}
              aria-label="Status"
              allowDeselect={false}
              hiddenFrom="md"
              w={150}
            />
            <TextInput
              placeholder="Search email or name"
              aria-label="Search invitations"
              leftSection={<IconSearch size={16} />}
              value={q}
              onChange={(e) => setQ(e.currentTarget.value)}
              w={240}
            />
            <Select
              placeholder="All fleets"
              aria-label="Fleet"
              data={(fleets.data ?? []).map((f) => ({ value: String(f.id), label: f.name }))}
              value={fleetId}
              onChange={(value) => setParam('fleet', value)}
              clearable
              w={170}
            />
          </Group>
          <Group gap="sm">
            {selected.size ? (
              <Anchor component="button" size="sm" onClick={() => setSelected(new Set())}>
                Clear selection
              </Anchor>
            ) : null}
            <Tooltip label="Select invitations with the checkboxes" disabled={selected.size > 0}>
              <Button
                variant="light"
                leftSection={<IconPrinter size={16} />}
                disabled={selected.size === 0}
                onClick={() => navigate(`/print${printQuery([...selected])}`)}
              >
                Print sheet{selected.size ? ` (${selected.size})` : ''}
              </Button>
            </Tooltip>
          </Group>
        </Group>
        {list.isPending ? (
          <LoadingState />
        ) : list.isError ? (
          <div style={{ padding: 16 }}>
            <ErrorState error={list.error} onRetry={() => void list.refetch()} />
          </div>
        ) : items.length === 0 ? (
          filtered ? (
            <EmptyState title="No invitation matches">Try another status, fleet or search.</EmptyState>
          ) : (
            <EmptyState
              title="No invitations yet"
              action={
                <Gate permission="invitations.create">
                  <Button leftSection={<IconMailPlus size={16} />} onClick={() => setParam('new', '1')}>
                    Create the first one
                  </Button>
                </Gate>
              }
            >
              Invite people by email: each gets a QR code to scan with the device to enroll.
            </EmptyState>
          )
        ) : (
          <Table.ScrollContainer minWidth={820}>
            <Table
              highlightOnHover
              verticalSpacing="sm"
              data-testid="invitations-table"
              style={{ opacity: list.isPlaceholderData ? 0.6 : 1 }}
            >
              <Table.Thead>
                <Table.Tr>
                  <Table.Th w={40}>
                    <Checkbox
                      aria-label="Select all on this page"
                      checked={allOnPage}
                      indeterminate={someOnPage && !allOnPage}
                      onChange={() =>
                        setSelected((current) => {
                          const next = new Set(current);
                          for (const id of pageIds) {
                            if (allOnPage) next.delete(id);
                            else next.add(id);
                          }
                          return next;
                        })
                      }
                    />
                  </Table.Th>
                  <Table.Th>Person</Table.Th>
                  <Table.Th>Status</Table.Th>
                  <Table.Th>Fleet</Table.Th>
                  <Table.Th>Expires</Table.Th>
                  <Table.Th>Device</Table.Th>
                  <Table.Th>Created</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {items.map((item) => (
                  <Table.Tr
                    key={item.id}
                    data-invitation-id={item.id}
                    data-status={item.status}
                    bg={selected.has(item.id) ? 'var(--mantine-primary-color-light)' : undefined}
                  >
                    <Table.Td>
                      <Checkbox
                        aria-label={`Select ${item.email}`}
                        checked={selected.has(item.id)}
                        onChange={() => toggle(item.id)}
                      />
                    </Table.Td>
                    <Table.Td>
                      <Anchor component={Link} to={`/invitations/${item.id}`} fw={500} size="sm">
                        {item.email}
                      </Anchor>
                      {fullName(item) ? (
                        <Text size="xs" c="dimmed">
                          {fullName(item)}
                        </Text>
                      ) : null}
                    </Table.Td>
                    <Table.Td>
                      <Group gap={6} wrap="nowrap">
                        <InvitationStatusBadge status={item.status} />
                        <DeliveryMark delivery={item.delivery} />
                        {item.refused_attempts > 0 ? (
                          <Tooltip label={`${item.refused_attempts} refused enrollment attempt(s)`}>
                            <Text size="xs" c="red">
                              {item.refused_attempts} refused
                            </Text>
                          </Tooltip>
                        ) : null}
                      </Group>
                    </Table.Td>
                    <Table.Td>
                      <Text size="sm">{item.fleet ?? '—'}</Text>
                    </Table.Td>
                    <Table.Td>
                      <Text size="sm" c={item.status === 'pending' ? undefined : 'dimmed'}>
                        {item.status === 'pending' || item.status === 'expired' ? (
                          <RelativeTime iso={item.expires_at} future />
                        ) : (
                          '—'
                        )}
                      </Text>
                    </Table.Td>
                    <Table.Td>
                      {item.agent ? (
                        <Anchor component={Link} to={`/devices?agent=${item.agent.id}`} size="sm">
                          {item.agent.name}
                        </Anchor>
                      ) : (
                        <Text size="sm" c="dimmed">
                          —
                        </Text>
                      )}
                    </Table.Td>
                    <Table.Td>
                      <Text size="sm">
                        <RelativeTime iso={item.created_at} />
                      </Text>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
        {total > PAGE_SIZE ? (
          <Group justify="space-between" p="md">
            <Text size="sm" c="dimmed">
              {((page - 1) * PAGE_SIZE + 1).toLocaleString()}–{Math.min(page * PAGE_SIZE, total).toLocaleString()} of{' '}
              {total.toLocaleString()}
            </Text>
            <Pagination total={Math.ceil(total / PAGE_SIZE)} value={page} onChange={setPage} size="sm" />
          </Group>
        ) : items.length ? (
          <Text size="sm" c="dimmed" p="md">
            {total.toLocaleString()} invitation{total === 1 ? '' : 's'}
          </Text>
        ) : null}
      </Card>
      <NewInvitationModal opened={newOpen && mayInvite} onClose={() => setParam('new', null)} />
      <BulkImportModal opened={bulkOpen && mayInvite} onClose={() => setParam('bulk', null)} />
    </>
  );
}
