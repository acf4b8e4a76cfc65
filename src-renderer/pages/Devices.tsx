import { Button, Card, Group, Select, Text, TextInput } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { IconArrowDown, IconArrowUp, IconArrowsSort, IconSearch } from '@tabler/icons-react';
import { useTable, type ColumnFiltersState, type SortingState } from '@tanstack/react-table';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import { useAgents, useAgentsMatching, useCompliance, useFleets, useViews } from '../api/queries.ts';
import { AdminApiError } from '../../src-shared/contract/admin-client.ts';
import { Link, navigate, useLocation } from '../lib/router.tsx';
import { EmptyState, ErrorState, LoadingState, PageHeader } from '../components/common.tsx';
import { ExportMenu } from '../components/export-menu.tsx';
import { enrollStatusOf, matchesSearch, searchTerms } from '../lib/devices.ts';
import { countOf } from '../lib/format.ts';
import { DeviceDrawer } from './DeviceDrawer.tsx';
import { columns, features, ROW_HEIGHT, type DeviceRow } from './devices/columns.tsx';
import { COMPLIANCE_CHOICES } from './devices/compliance.tsx';
import { useFreshRows } from './devices/useFreshRows.ts';
import { FilterBar, whereProblem } from './devices/FilterBar.tsx';
import { BulkBar, SELECT_WIDTH, SelectAllBox, SelectRowBox, tableFilter, useBulkSelection } from './devices/BulkActions.tsx';

const EMPTY: DeviceRow[] = [];

/** A roving tab stop's next position among `count` for an arrow, Home or End key; null for any other key. */
function rovingNext(key: string, current: number, count: number): number | null {
  if (key === 'Home') return 0;
  if (key === 'End') return count - 1;
  if (key === 'ArrowRight') return (current + 1) % count;
  if (key === 'ArrowLeft') return (current + count - 1) % count;
  return null;
}

export function Devices() {
  const agents = useAgents();
  const fleets = useFleets();
  // Each device's compliance, counted by the server; refreshed live with the tasks (the 'deployments' keys).
  const compliance = useCompliance(null);
  const { search } = useLocation();
  const params = new URLSearchParams(search);
  const selectedId = params.get('agent') && /^\d+$/.test(params.get('agent')!) ? Number(params.get('agent')) : null;

  // The filter language (docs/where.md): from the URL (?where=), or the saved view opened (?view=ID).
  const viewId = params.get('view') && /^\d+$/.test(params.get('view')!) ? Number(params.get('view')) : null;
  const views = useViews();
  const openView = viewId === null ? null : (views.data?.find((v) => v.id === viewId) ?? null);
  const urlWhere = params.get('where');
  const [whereText, setWhereText] = useState(urlWhere ?? '');
  const [loadedView, setLoadedView] = useState<number | null>(null);
  useEffect(() => {
    // A view opened from the sidebar (or another one): its expression fills the bar; closed: emptied.
    if (openView && loadedView !== openView.id) {
      setWhereText(urlWhere ?? openView.where);
      setLoadedView(openView.id);
    } else if (viewId === null && loadedView !== null) {
      setWhereText(urlWhere ?? '');
      setLoadedView(null);
    }
  }, [openView, viewId, loadedView, urlWhere]);
  const [debouncedWhere] = useDebouncedValue(whereText, 250);
  const activeWhere = debouncedWhere.trim() !== '' && whereProblem(debouncedWhere) === null ? debouncedWhere.trim() : null;
  const matching = useAgentsMatching(activeWhere);
  const serverWhereError = matching.error instanceof AdminApiError ? matching.error.message : null;
  useEffect(() => {
    // The URL keeps the filter (reload, bookmark, share); a view's own expression is its ?view= alone.
    const next = new URLSearchParams(window.location.search);
    const text = debouncedWhere.trim();
    if (text === '' || (openView !== null && text === openView.where)) next.delete('where');
    else if (whereProblem(text) === null) next.set('where', text);
    else return;
    const query = next.toString();
    navigate(`/devices${query ? `?${query}` : ''}`, { replace: true });
  }, [debouncedWhere, openView]);

  const [query, setQuery] = useState('');
  const [debouncedQuery] = useDebouncedValue(query, 150);
  const [sorting, setSorting] = useState<SortingState>([]);
  const [columnFilters, setColumnFilters] = useState<ColumnFiltersState>([]);
  // Type and online are not columns of their own (they share one with the model and the last
  // contact): those two filters apply to the rows before the table sees them.
  const [typeFilter, setTypeFilter] = useState<string | null>(null);
  const [onlineFilter, setOnlineFilter] = useState<boolean | null>(null);
  // Compliance shares the status column: its filter applies to the rows first too.
  const [complianceFilter, setComplianceFilter] = useState<string | null>(null);
  const all = useMemo(() => {
    if (!agents.data) return EMPTY;
    const byAgent = new Map((compliance.data ?? []).map((c) => [c.agent_id, c]));
    return agents.data.map((agent): DeviceRow => ({ ...agent, compliance: byAgent.get(agent.id) ?? null }));
  }, [agents.data, compliance.data]);
  const matchingIds = activeWhere === null ? null : (matching.data ?? null);
  const data = useMemo(
    () =>
      typeFilter === null && onlineFilter === null && complianceFilter === null && matchingIds === null
        ? all
        : all.filter(
            (a) =>
              (matchingIds === null || matchingIds.has(a.id)) &&
              (typeFilter === null || a.type === typeFilter) &&
              (onlineFilter === null || a.is_online === onlineFilter) &&
              (complianceFilter === null || a.compliance?.state === complianceFilter),
          ),
    [all, typeFilter, onlineFilter, complianceFilter, matchingIds],
  );

  const fresh = useFreshRows(agents.data);

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
  // Bulk actions (devices/BulkActions.tsx): rows chosen, or all those the filters in force match.
  const filterOf = (id: string) => (columnFilters.find((f) => f.id === id)?.value as string | undefined) ?? null;
  const bulkFilter = tableFilter({
    where: activeWhere,
    search: debouncedQuery,
    type: typeFilter,
    fleet: filterOf('fleet'),
    enrollStatus: filterOf('enroll_status'),
    online: onlineFilter,
    compliance: complianceFilter,
  });
  const rowIds = useMemo(() => rows.map((row) => row.original.id), [rows]);
  const selection = useBulkSelection(rowIds, bulkFilter);

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

  const [activeRow, setActiveRow] = useState(0);
  const virtualItems = virtualizer.getVirtualItems();
  // The row that takes the Tab key: the one last focused if it is drawn, else the first drawn.
  const tabRow = virtualItems.some((item) => item.index === activeRow) ? activeRow : (virtualItems[0]?.index ?? 0);

  // The column headers are one Tab stop (the last one used); the arrow keys move along them. Stop 0 is
  // the select-all box, 1… the columns' sort buttons (the first Tab lands on the first column's).
  const [sortFocus, setSortFocus] = useState(1);
  const onHeaderKey = (event: KeyboardEvent<HTMLTableRowElement>) => {
    const next = rovingNext(event.key, sortFocus, columns.length + 1);
    if (next === null) return;
    event.preventDefault();
    setSortFocus(next);
    event.currentTarget.querySelector<HTMLElement>(`[data-column="${next}"]`)?.focus();
  };

  // The five filters are one Tab stop too (a toolbar): ← → Home End move between them.
  const [filterFocus, setFilterFocus] = useState(0);
  const onFilterKey = (event: KeyboardEvent<HTMLDivElement>) => {
    const next = rovingNext(event.key, filterFocus, 5);
    if (next === null) return;
    event.preventDefault();
    setFilterFocus(next);
    event.currentTarget.querySelector<HTMLElement>(`[data-filter="${next}"]`)?.focus();
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
    } else if (event.key === 'x') {
      event.preventDefault();
      selection.toggle(id, index, event.shiftKey);
    }
  };

  const fleetNames = useMemo(() => (fleets.data ?? []).map((f) => f.name), [fleets.data]);
  const statuses = useMemo(() => [...new Set(all.map((a) => a.enroll_status))].sort(), [all]);
  const totalWidth = table.getTotalSize() + SELECT_WIDTH;
  const filtered =
    terms.length > 0 ||
    columnFilters.length > 0 ||
    typeFilter !== null ||
    onlineFilter !== null ||
    complianceFilter !== null ||
    matchingIds !== null;
  const online = useMemo(() => all.reduce((n, a) => n + (a.is_online ? 1 : 0), 0), [all]);
  const count = (n: number) => countOf(n, 'device');

  return (
    <>
      <PageHeader
        title={openView ? `Devices: ${openView.name}` : 'Devices'}
        description={
          agents.data
            ? `${count(all.length)}, ${online.toLocaleString()} online. Updated live.`
            : 'Every device enrolled with an invitation, updated live.'
        }
      />
      <Card withBorder radius="md" p="md">
        <FilterBar
          value={whereText}
          onChange={setWhereText}
          serverError={serverWhereError}
          view={openView}
          onSaved={(saved) => {
            setLoadedView(saved.id);
            navigate(`/devices?view=${saved.id}`, { replace: true });
          }}
        />
        {/* The search, the count and the export; below, the filters: one Tab stop (← → between them). */}
        <Group gap="sm" mb="sm" wrap="wrap">
          <TextInput
            placeholder="Search name, email, serial…"
            aria-label="Search devices"
            leftSection={<IconSearch size={16} />}
            value={query}
            onChange={(e) => setQuery(e.currentTarget.value)}
            w={280}
          />
          <Text size="sm" c="dimmed" ml="auto" data-testid="devices-count">
            {filtered ? `${rows.length.toLocaleString()} of ${all.length.toLocaleString()}` : count(all.length)}
          </Text>
          {/* The filter bar's expression and the table's filters as the export's (its rows by id, whatever the sort). */}
          <ExportMenu
            path="/api/agents/export"
            what="devices"
            filtered={filtered}
            testId="devices-export"
            params={{
              where: activeWhere,
              fleet: filterValue('fleet') as string | null,
              status: filterValue('enroll_status') as string | null,
              type: typeFilter,
              online: onlineFilter,
              compliance: complianceFilter,
              q: debouncedQuery.trim(),
            }}
          />
        </Group>
        <Group gap="sm" mb="md" wrap="wrap">
          <Group role="toolbar" aria-label="Filters" gap="sm" wrap="wrap" onKeyDown={onFilterKey}>
            <Select
              tabIndex={filterFocus === 0 ? 0 : -1}
              onFocus={() => setFilterFocus(0)}
              data-filter={0}
              aria-label="Type"
              placeholder="Any type"
              data={['android', 'apple']}
              value={typeFilter}
              onChange={setTypeFilter}
              clearable
              w={120}
            />
            <Select
              tabIndex={filterFocus === 1 ? 0 : -1}
              onFocus={() => setFilterFocus(1)}
              data-filter={1}
              aria-label="Fleet"
              placeholder="Any fleet"
              data={fleetNames}
              value={(filterValue('fleet') as string) ?? null}
              onChange={(v) => setFilter('fleet', v)}
              clearable
              w={150}
            />
            <Select
              tabIndex={filterFocus === 2 ? 0 : -1}
              onFocus={() => setFilterFocus(2)}
              data-filter={2}
              aria-label="Status"
              placeholder="Any status"
              data={statuses.map((s) => ({ value: s, label: enrollStatusOf(s).label }))}
              value={(filterValue('enroll_status') as string) ?? null}
              onChange={(v) => setFilter('enroll_status', v)}
              clearable
              w={140}
            />
            <Select
              tabIndex={filterFocus === 3 ? 0 : -1}
              onFocus={() => setFilterFocus(3)}
              data-filter={3}
              aria-label="Online"
              placeholder="Online or not"
              data={[
                { value: 'true', label: 'Online' },
                { value: 'false', label: 'Offline' },
              ]}
              value={onlineFilter === null ? null : String(onlineFilter)}
              onChange={(v) => setOnlineFilter(v === null ? null : v === 'true')}
              clearable
              w={140}
            />
            <Select
              tabIndex={filterFocus === 4 ? 0 : -1}
              onFocus={() => setFilterFocus(4)}
              data-filter={4}
              aria-label="Compliance"
              placeholder="Any compliance"
              data={COMPLIANCE_CHOICES}
              value={complianceFilter}
              onChange={setComplianceFilter}
              clearable
              w={170}
            />
          </Group>
          {filtered ? (
            <Button
              variant="subtle"
              size="compact-sm"
              onClick={() => {
                setQuery('');
                setColumnFilters([]);
                setTypeFilter(null);
                setOnlineFilter(null);
                setComplianceFilter(null);
                setWhereText('');
                navigate('/devices', { replace: true });
              }}
            >
              Clear filters
            </Button>
          ) : null}
        </Group>
        <BulkBar selection={selection} matching={rows.length} filter={bulkFilter} />
        {agents.isPending ? (
          <LoadingState label="Loading devices…" />
        ) : agents.isError ? (
          <ErrorState error={agents.error} onRetry={() => void agents.refetch()} />
        ) : all.length === 0 ? (
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
                  <tr key={group.id} aria-rowindex={1} onKeyDown={onHeaderKey}>
                    <th style={{ width: SELECT_WIDTH, padding: '0 8px' }}>
                      <SelectAllBox
                        selection={selection}
                        matching={rows.length}
                        tabIndex={sortFocus === 0 ? 0 : -1}
                        data-column={0}
                        onFocus={() => setSortFocus(0)}
                      />
                    </th>
                    {group.headers.map((header, index) => {
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
                            // One Tab stop for the whole header row; ← → move between its columns.
                            tabIndex={index + 1 === sortFocus ? 0 : -1}
                            data-column={index + 1}
                            onFocus={() => setSortFocus(index + 1)}
                            onClick={header.column.getToggleSortingHandler()}
                            title="Sort (← → for the other columns)"
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
                {virtualItems.map((item) => {
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
                      // The rows are one Tab stop (the row last focused); ↑ ↓ move between them.
                      tabIndex={item.index === tabRow ? 0 : -1}
                      onFocus={() => setActiveRow(item.index)}
                      style={{ transform: `translateY(${item.start}px)`, minWidth: totalWidth }}
                      onClick={() => open(agent.id)}
                      onKeyDown={(event) => onRowKey(event, item.index, agent.id)}
                    >
                      <td style={{ width: SELECT_WIDTH, padding: '0 8px' }}>
                        <SelectRowBox selection={selection} id={agent.id} index={item.index} name={agent.name} />
                      </td>
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
          Keyboard: Tab reaches the filters (← → between them), the column headers and select-all box (← → between them) and the
          rows (↑ ↓ PgUp PgDn Home End), Enter opens the device, x selects it (shift-x or shift-click: a range).
        </Text>
      </Card>
      <DeviceDrawer id={selectedId} onClose={() => open(null)} />
    </>
  );
}
