import { Badge, Button, Card, Group, Select, Text, TextInput, Tooltip } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import {
  IconArrowDown,
  IconArrowUp,
  IconArrowsSort,
  IconCircleFilled,
  IconEraser,
  IconLock,
  IconSearch,
} from '@tabler/icons-react';
import {
  columnFilteringFeature,
  columnSizingFeature,
  createColumnHelper,
  createFilteredRowModel,
  createSortedRowModel,
  filterFn_equals,
  filterFn_equalsString,
  globalFilteringFeature,
  rowSortingFeature,
  sortFn_alphanumeric,
  sortFn_basic,
  sortFn_datetime,
  tableFeatures,
  useTable,
  type ColumnFiltersState,
  type SortingState,
} from '@tanstack/react-table';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useMemo, useRef, useState, type KeyboardEvent, type ReactNode } from 'react';
import { useAgents, useFleets } from '../api/queries.ts';
import type { AgentSummary as Agent } from '../../src-shared/contract/index.ts';
import { Link, navigate, useLocation } from '../lib/router.tsx';
import { EmptyState, ErrorState, LoadingState, PageHeader, useNow } from '../components/common.tsx';
import { changedIds, enrollStatusOf, matchesSearch, searchTerms } from '../lib/devices.ts';
import { fullName, relativeTime } from '../lib/format.ts';
import { DeviceDrawer } from './DeviceDrawer.tsx';

const features = tableFeatures({
  columnSizingFeature,
  rowSortingFeature,
  sortedRowModel: createSortedRowModel(),
  sortFns: { alphanumeric: sortFn_alphanumeric, basic: sortFn_basic, datetime: sortFn_datetime },
  columnFilteringFeature,
  globalFilteringFeature,
  filteredRowModel: createFilteredRowModel(),
  filterFns: { equals: filterFn_equals, equalsString: filterFn_equalsString },
});

const helper = createColumnHelper<typeof features, Agent>();
const ROW_HEIGHT = 44;

/** Plain text cut with an ellipsis when the column is too narrow (cells are flex boxes). */
const plainCell = (info: { getValue: () => unknown }) => (
  <Text size="sm" truncate title={String(info.getValue() ?? '')}>
    {String(info.getValue() ?? '')}
  </Text>
);

/** A main value over a dimmed second one (type and version, model and OS), each cut with an ellipsis. */
function TwoLines({ first, second }: { first: string | null | undefined; second: string | null | undefined }) {
  return (
    <div style={{ minWidth: 0, lineHeight: 1.25 }}>
      <Text size="sm" truncate title={first ?? undefined}>
        {first || '—'}
      </Text>
      {second ? (
        <Text size="xs" c="dimmed" truncate title={second}>
          {second}
        </Text>
      ) : null}
    </div>
  );
}

// Widths in px; the person column takes what is left. They add up to 960 px, so every column
// shows in a 1,280 px window with the navigation open.
/** A small icon beside the status that marks a state (locked, wipe ordered), named for screen readers. */
function StateIcon({
  tooltip,
  color,
  testId,
  label,
  children,
}: {
  tooltip: string;
  color: string;
  testId: string;
  label: string;
  children: ReactNode;
}) {
  return (
    <Tooltip label={tooltip}>
      <Text span c={color} lh={0} data-testid={testId} aria-label={label} role="img">
        {children}
      </Text>
    </Tooltip>
  );
}

const columns = helper.columns([
  helper.accessor('name', {
    id: 'name',
    header: 'Device',
    size: 105,
    sortFn: 'alphanumeric',
    cell: (info) => (
      <Text size="sm" fw={500} truncate>
        {info.getValue()}
      </Text>
    ),
  }),
  helper.accessor((agent) => agent.email ?? '', {
    id: 'person',
    header: 'Person',
    size: 140,
    sortFn: 'alphanumeric',
    cell: (info) => {
      const agent = info.row.original;
      const name = fullName(agent);
      return (
        <div style={{ minWidth: 0, lineHeight: 1.25 }}>
          <Text size="sm" truncate>
            {agent.email ?? '—'}
          </Text>
          {name ? (
            <Text size="xs" c="dimmed" truncate>
              {name}
            </Text>
          ) : null}
        </div>
      );
    },
  }),
  helper.accessor((agent) => agent.serial ?? agent.uuid ?? '', {
    id: 'serial',
    header: 'Serial',
    size: 100,
    sortFn: 'alphanumeric',
    cell: (info) => <span className="mono">{info.getValue()}</span>,
  }),
  // Two lines, like the person: the agent type over its version.
  helper.accessor('type', {
    id: 'type',
    header: 'Type',
    size: 80,
    filterFn: 'equalsString',
    sortFn: 'alphanumeric',
    cell: (info) => <TwoLines first={info.getValue()} second={info.row.original.version} />,
  }),
  // From the device's last inventory (empty until it sends one): the model over its OS.
  helper.accessor((agent) => agent.model ?? '', {
    id: 'model',
    header: 'Model',
    size: 120,
    sortFn: 'alphanumeric',
    cell: (info) => (
      <TwoLines
        first={info.getValue()}
        second={[info.row.original.os_name, info.row.original.os_version].filter(Boolean).join(' ')}
      />
    ),
  }),
  helper.accessor('fleet', {
    id: 'fleet',
    header: 'Fleet',
    size: 90,
    filterFn: 'equalsString',
    sortFn: 'alphanumeric',
    cell: plainCell,
  }),
  helper.accessor('enroll_status', {
    id: 'enroll_status',
    header: 'Status',
    size: 125,
    filterFn: 'equalsString',
    sortFn: 'alphanumeric',
    cell: (info) => {
      const status = enrollStatusOf(info.getValue());
      const { lock, wipe } = info.row.original;
      return (
        <Group gap={4} wrap="nowrap">
          <Badge color={status.color} variant="light" data-testid="enroll-status">
            {status.label}
          </Badge>
          {lock ? (
            <StateIcon tooltip="Locked (a lock command was sent)" color="orange.8" testId="device-locked" label="Locked">
              <IconLock size={16} />
            </StateIcon>
          ) : null}
          {wipe ? (
            <StateIcon
              tooltip="Wipe ordered: the device erases itself when it gets the command"
              color="red.8"
              testId="device-wiped"
              label="Wipe ordered"
            >
              <IconEraser size={16} />
            </StateIcon>
          ) : null}
        </Group>
      );
    },
  }),
  helper.accessor('is_online', {
    id: 'is_online',
    header: 'Online',
    size: 75,
    filterFn: 'equals',
    sortFn: 'basic',
    cell: (info) =>
      info.getValue() ? (
        <Group gap={6} wrap="nowrap" data-testid="online" data-online="true">
          <IconCircleFilled size={10} color="var(--mantine-color-green-6)" />
          <Text size="sm">Online</Text>
        </Group>
      ) : (
        <Group gap={6} wrap="nowrap" data-testid="online" data-online="false">
          <IconCircleFilled size={10} color="var(--mantine-color-gray-5)" />
          <Text size="sm" c="dimmed">
            Offline
          </Text>
        </Group>
      ),
  }),
  helper.accessor((agent) => agent.last_contact ?? undefined, {
    id: 'last_contact',
    header: 'Last contact',
    size: 125,
    sortFn: 'alphanumeric',
    sortUndefined: 'last',
    cell: (info) => <LastContact iso={info.getValue() ?? null} />,
  }),
]);

function LastContact({ iso }: { iso: string | null }) {
  const now = useNow(30_000);
  return (
    <Text size="sm" c={iso ? undefined : 'dimmed'} title={iso ?? undefined}>
      {relativeTime(iso, Math.max(now, Date.now()), { past: true })}
    </Text>
  );
}

const EMPTY: Agent[] = [];

export function Devices() {
  const agents = useAgents();
  const fleets = useFleets();
  const { search } = useLocation();
  const params = new URLSearchParams(search);
  const selectedId = params.get('agent') && /^\d+$/.test(params.get('agent')!) ? Number(params.get('agent')) : null;

  const [query, setQuery] = useState('');
  const [debouncedQuery] = useDebouncedValue(query, 150);
  const [sorting, setSorting] = useState<SortingState>([]);
  const [columnFilters, setColumnFilters] = useState<ColumnFiltersState>([]);
  const data = agents.data ?? EMPTY;

  // Rows that just appeared or changed flash once (a device enrolling during a demo).
  const previous = useRef<Agent[] | undefined>(undefined);
  const [fresh, setFresh] = useState<Set<number>>(new Set());
  useEffect(() => {
    if (!agents.data) return;
    const ids = changedIds(previous.current, agents.data);
    previous.current = agents.data;
    if (ids.length === 0 || ids.length > 200) return;
    setFresh((current) => new Set([...current, ...ids]));
    const timer = setTimeout(() => setFresh((current) => new Set([...current].filter((id) => !ids.includes(id)))), 2600);
    return () => clearTimeout(timer);
  }, [agents.data]);

  const terms = useMemo(() => searchTerms(debouncedQuery), [debouncedQuery]);
  const table = useTable({
    features,
    columns,
    data,
    state: { sorting, columnFilters, globalFilter: terms },
    onSortingChange: setSorting,
    onColumnFiltersChange: setColumnFilters,
    getRowId: (agent) => String(agent.id),
    // One search over every text field of the agent (all words must match).
    globalFilterFn: (row) => matchesSearch(row.original, terms),
    getColumnCanGlobalFilter: (column) => column.id === 'name',
    enableSortingRemoval: true,
  });
  const rows = table.getRowModel().rows;

  const filterValue = (id: string) => (columnFilters.find((f) => f.id === id)?.value as string | boolean | undefined) ?? null;
  const setFilter = (id: string, value: unknown) =>
    setColumnFilters((current) => [
      ...current.filter((f) => f.id !== id),
      ...(value === null || value === undefined ? [] : [{ id, value }]),
    ]);

  const scrollRef = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    getItemKey: (index) => rows[index]!.id,
    overscan: 10,
  });

  const open = (id: number | null) => {
    const next = new URLSearchParams(search);
    if (id === null) next.delete('agent');
    else next.set('agent', String(id));
    const text = next.toString();
    navigate(`/devices${text ? `?${text}` : ''}`, { replace: id === null });
  };

  const focusRow = (index: number) => {
    const clamped = Math.max(0, Math.min(rows.length - 1, index));
    virtualizer.scrollToIndex(clamped, { align: 'auto' });
    requestAnimationFrame(() => scrollRef.current?.querySelector<HTMLElement>(`tr[data-index="${clamped}"]`)?.focus());
  };

  const onRowKey = (event: KeyboardEvent<HTMLTableRowElement>, index: number, id: number) => {
    if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      open(id);
    } else if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      focusRow(index + (event.key === 'ArrowDown' ? 1 : -1));
    } else if (event.key === 'PageDown' || event.key === 'PageUp') {
      event.preventDefault();
      const page = Math.max(1, Math.floor((scrollRef.current?.clientHeight ?? 400) / ROW_HEIGHT) - 1);
      focusRow(index + (event.key === 'PageDown' ? page : -page));
    } else if (event.key === 'Home' || event.key === 'End') {
      event.preventDefault();
      focusRow(event.key === 'Home' ? 0 : rows.length - 1);
    }
  };

  const fleetNames = useMemo(() => (fleets.data ?? []).map((f) => f.name), [fleets.data]);
  const statuses = useMemo(() => [...new Set(data.map((a) => a.enroll_status))].sort(), [data]);
  const totalWidth = table.getTotalSize();
  const filtered = terms.length > 0 || columnFilters.length > 0;
  const online = useMemo(() => data.reduce((n, a) => n + (a.is_online ? 1 : 0), 0), [data]);

  return (
    <>
      <PageHeader
        title="Devices"
        description={
          agents.data
            ? `${data.length.toLocaleString()} enrolled device${data.length === 1 ? '' : 's'}, ${online.toLocaleString()} online. Updated live.`
            : 'Every device enrolled with an invitation, updated live.'
        }
      />
      <Card withBorder radius="md" p="md">
        <Group gap="sm" mb="md" wrap="wrap">
          <TextInput
            placeholder="Search name, email, serial…"
            aria-label="Search devices"
            leftSection={<IconSearch size={16} />}
            value={query}
            onChange={(e) => setQuery(e.currentTarget.value)}
            w={280}
          />
          <Select
            aria-label="Type"
            placeholder="Any type"
            data={['android', 'apple']}
            value={(filterValue('type') as string) ?? null}
            onChange={(v) => setFilter('type', v)}
            clearable
            w={130}
          />
          <Select
            aria-label="Fleet"
            placeholder="Any fleet"
            data={fleetNames}
            value={(filterValue('fleet') as string) ?? null}
            onChange={(v) => setFilter('fleet', v)}
            clearable
            w={160}
          />
          <Select
            aria-label="Status"
            placeholder="Any status"
            data={statuses.map((s) => ({ value: s, label: enrollStatusOf(s).label }))}
            value={(filterValue('enroll_status') as string) ?? null}
            onChange={(v) => setFilter('enroll_status', v)}
            clearable
            w={150}
          />
          <Select
            aria-label="Online"
            placeholder="Online or not"
            data={[
              { value: 'true', label: 'Online' },
              { value: 'false', label: 'Offline' },
            ]}
            value={filterValue('is_online') === null ? null : String(filterValue('is_online'))}
            onChange={(v) => setFilter('is_online', v === null ? null : v === 'true')}
            clearable
            w={150}
          />
          {filtered ? (
            <Button
              variant="subtle"
              size="compact-sm"
              onClick={() => {
                setQuery('');
                setColumnFilters([]);
              }}
            >
              Clear filters
            </Button>
          ) : null}
          <Text size="sm" c="dimmed" ml="auto" data-testid="devices-count">
            {filtered
              ? `${rows.length.toLocaleString()} of ${data.length.toLocaleString()}`
              : `${data.length.toLocaleString()} devices`}
          </Text>
        </Group>
        {agents.isPending ? (
          <LoadingState label="Loading devices…" />
        ) : agents.isError ? (
          <ErrorState error={agents.error} onRetry={() => void agents.refetch()} />
        ) : data.length === 0 ? (
          <EmptyState
            title="No device has enrolled yet"
            action={
              <Button component={Link} to="/invitations" variant="light">
                Go to invitations
              </Button>
            }
          >
            Devices appear here the moment they enroll with an invitation. On an invitation's page, "Simulate a device" enrolls
            one without a phone.
          </EmptyState>
        ) : (
          <div
            ref={scrollRef}
            className="devices-scroll"
            style={{
              height: `min(max(360px, calc(100dvh - 290px)), ${rows.length * ROW_HEIGHT + 44}px)`,
              minHeight: rows.length ? undefined : 220,
            }}
            data-testid="devices-scroll"
          >
            <table
              className="devices-table"
              style={{ minWidth: totalWidth }}
              aria-rowcount={rows.length + 1}
              data-testid="devices-table"
            >
              <thead>
                {table.getHeaderGroups().map((group) => (
                  <tr key={group.id} aria-rowindex={1}>
                    {group.headers.map((header) => {
                      const sorted = header.column.getIsSorted();
                      const grow = header.column.id === 'person';
                      return (
                        <th
                          key={header.id}
                          style={{ width: header.getSize(), flexGrow: grow ? 1 : 0 }}
                          aria-sort={sorted === 'asc' ? 'ascending' : sorted === 'desc' ? 'descending' : 'none'}
                        >
                          <button
                            type="button"
                            className="sort-button"
                            onClick={header.column.getToggleSortingHandler()}
                            title="Sort"
                          >
                            <table.FlexRender header={header} />
                            {sorted === 'asc' ? (
                              <IconArrowUp size={14} />
                            ) : sorted === 'desc' ? (
                              <IconArrowDown size={14} />
                            ) : (
                              <IconArrowsSort size={14} opacity={0.35} />
                            )}
                          </button>
                        </th>
                      );
                    })}
                  </tr>
                ))}
              </thead>
              <tbody style={{ height: virtualizer.getTotalSize() }}>
                {virtualizer.getVirtualItems().map((item) => {
                  const row = rows[item.index]!;
                  const agent = row.original;
                  return (
                    <tr
                      key={row.id}
                      data-index={item.index}
                      data-agent-id={agent.id}
                      data-selected={agent.id === selectedId}
                      data-fresh={fresh.has(agent.id)}
                      aria-rowindex={item.index + 2}
                      tabIndex={0}
                      style={{ transform: `translateY(${item.start}px)`, minWidth: totalWidth }}
                      onClick={() => open(agent.id)}
                      onKeyDown={(event) => onRowKey(event, item.index, agent.id)}
                    >
                      {row.getAllCells().map((cell) => (
                        <td key={cell.id} style={{ width: cell.column.getSize(), flexGrow: cell.column.id === 'person' ? 1 : 0 }}>
                          <table.FlexRender cell={cell} />
                        </td>
                      ))}
                    </tr>
                  );
                })}
              </tbody>
            </table>
            {rows.length === 0 ? <EmptyState title="No device matches">Try fewer words or clear the filters.</EmptyState> : null}
          </div>
        )}
        <Text size="xs" c="dimmed" mt="xs">
          Keyboard: ↑ ↓ PgUp PgDn Home End move between rows, Enter opens the device.
        </Text>
      </Card>
      <DeviceDrawer id={selectedId} onClose={() => open(null)} />
    </>
  );
}
