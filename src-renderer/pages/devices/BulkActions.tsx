import { Alert, Button, Checkbox, Group, Menu, Modal, Select, Stack, Text, TextInput } from '@mantine/core';
import {
  IconChevronDown,
  IconCurrentLocation,
  IconListDetails,
  IconLock,
  IconLockOpen,
  IconWifi,
  IconX,
} from '@tabler/icons-react';
import { useMemo, useState, type MouseEvent } from 'react';
import { AdminApiError } from '../../api/client.ts';
import { useStartJob } from '../../api/jobs.ts';
import { useFleets, usePolicyCatalogue, useStored } from '../../api/queries.ts';
import { notifyError } from '../../components/common.tsx';
import { Gate, useCan } from '../../components/permissions.tsx';
import { showValue, ValueControl, type Value } from '../../features/policy-controls.tsx';
import { navigate } from '../../lib/router.tsx';
import {
  describeDeviceFilter,
  isDestructiveJobAction,
  JOB_ACTION_LABELS,
  type DeviceFilterFields,
  type JobAction,
} from '../../../src-shared/contract/bulk.ts';
import { JOB_PERMISSIONS } from '../../../src-shared/contract/admin-routes.ts';
import type { JobBody } from '../../../src-shared/contract/index.ts';

// Bulk actions on the Devices table (issue 25): rows are selected with their checkboxes (shift-click
// for a range), or every device matching the table's filters at once ("select all N matching"),
// which sends the filter, not the ids. One action, one confirmation naming how many devices (the
// destructive ones ask to type that number), one job on the server; its page shows the progress.

/** The checkbox column's width (px), beside the table's own columns. */
export const SELECT_WIDTH = 32;

const devices = (n: number) => `${n.toLocaleString('en-US')} device${n === 1 ? '' : 's'}`;

/** The devices table's filters as the server takes them (only those in force). */
export function tableFilter(state: {
  where: string | null;
  search: string;
  type: string | null;
  fleet: string | null;
  enrollStatus: string | null;
  online: boolean | null;
  compliance: string | null;
}): DeviceFilterFields {
  const filter: DeviceFilterFields = {};
  if (state.where !== null && state.where.trim() !== '') filter.where = state.where.trim();
  if (state.search.trim() !== '') filter.search = state.search.trim();
  if (state.type === 'android' || state.type === 'apple') filter.type = state.type;
  if (state.fleet !== null) filter.fleet = state.fleet;
  if (state.enrollStatus !== null) filter.enroll_status = state.enrollStatus;
  if (state.online !== null) filter.online = state.online;
  if (
    state.compliance === 'compliant' ||
    state.compliance === 'pending' ||
    state.compliance === 'failing' ||
    state.compliance === 'none'
  )
    filter.compliance = state.compliance;
  return filter;
}

export interface BulkSelection {
  /** Every device matching the filter (sent as the filter), rather than the ids chosen. */
  all: boolean;
  ids: ReadonlySet<number>;
  /** How many devices are selected (all: how many match now). */
  count: number;
  isSelected(id: number): boolean;
  /** A row's checkbox; with shift, every row from the last one clicked takes the same state. */
  toggle(id: number, index: number, shift: boolean): void;
  selectAll(): void;
  clear(): void;
}

interface SelectionState {
  key: string;
  all: boolean;
  ids: Set<number>;
  anchor: number | null;
}

/** The selection of the table's rows (`rowIds`, in the order shown); it starts over when the filter changes. */
export function useBulkSelection(rowIds: readonly number[], filter: DeviceFilterFields): BulkSelection {
  const key = JSON.stringify(filter);
  const [stored, setStored] = useState<SelectionState>({ key, all: false, ids: new Set(), anchor: null });
  const state: SelectionState = stored.key === key ? stored : { key, all: false, ids: new Set(), anchor: null };
  const count = state.all ? rowIds.length : state.ids.size;
  return {
    all: state.all,
    ids: state.ids,
    count,
    isSelected: (id) => state.all || state.ids.has(id),
    toggle: (id, index, shift) => {
      const ids = state.all ? new Set(rowIds) : new Set(state.ids);
      const selecting = !(state.all || state.ids.has(id));
      if (shift && state.anchor !== null && state.anchor !== index) {
        const [from, to] = state.anchor < index ? [state.anchor, index] : [index, state.anchor];
        for (const rowId of rowIds.slice(from, to + 1)) {
          if (selecting) ids.add(rowId);
          else ids.delete(rowId);
        }
      } else if (selecting) ids.add(id);
      else ids.delete(id);
      setStored({ key, all: false, ids, anchor: index });
    },
    selectAll: () => setStored({ key, all: true, ids: new Set(), anchor: null }),
    clear: () => setStored({ key, all: false, ids: new Set(), anchor: null }),
  };
}

/** The header's checkbox: every device matching the filter, or none. */
export function SelectAllBox({
  selection,
  matching,
  ...roving
}: {
  selection: BulkSelection;
  matching: number;
  // The header row's roving Tab stop (Devices.tsx): this box is its first position.
  tabIndex: number;
  'data-column': number;
  onFocus: () => void;
}) {
  const some = selection.count > 0;
  const every = selection.all || (matching > 0 && selection.count === matching);
  return (
    <Checkbox
      size="xs"
      aria-label={some ? 'Clear the selection' : `Select all ${devices(matching)} matching the filters`}
      checked={every}
      indeterminate={some && !every}
      disabled={matching === 0}
      onChange={() => (some ? selection.clear() : selection.selectAll())}
      data-testid="select-all"
      {...roving}
    />
  );
}

/** A row's checkbox (the row's own click opens the device: this one does not). */
export function SelectRowBox({
  selection,
  id,
  index,
  name,
}: {
  selection: BulkSelection;
  id: number;
  index: number;
  name: string;
}) {
  const stop = (event: MouseEvent) => event.stopPropagation();
  return (
    <Checkbox
      size="xs"
      // The rows are one Tab stop: x on the focused row selects it, as this does.
      tabIndex={-1}
      aria-label={`Select ${name}`}
      checked={selection.isSelected(id)}
      onClick={(event) => {
        stop(event);
        selection.toggle(id, index, event.shiftKey);
      }}
      onChange={() => {}}
      onKeyDown={(event) => event.stopPropagation()}
      data-testid="select-row"
    />
  );
}

type Pending = { action: JobAction } | null;

/** The confirming button: "Lock 40 devices", "Move 40 devices". */
const VERB: Record<JobAction, string> = {
  ping: 'Ping',
  lock: 'Lock',
  unlock: 'Unlock',
  inventory: 'Ask',
  geolocate: 'Locate',
  move: 'Move',
  assign_policy: 'Set it on',
  deploy: 'Deploy to',
  unenroll: 'Unenroll',
  wipe: 'Wipe',
  delete: 'Delete',
};

/** The bar over the table while devices are selected: how many, "select all N matching", the actions. */
export function BulkBar({
  selection,
  matching,
  filter,
}: {
  selection: BulkSelection;
  /** Devices matching the filters now (the table's rows). */
  matching: number;
  filter: DeviceFilterFields;
}) {
  const [pending, setPending] = useState<Pending>(null);
  if (selection.count === 0) return null;
  const open = (action: JobAction) => setPending({ action });
  const item = (action: JobAction, label: string, icon?: React.ReactNode) => (
    <ActionItem key={action} action={action} label={label} icon={icon} onPick={open} />
  );
  return (
    <Group
      gap="sm"
      mb="sm"
      px="sm"
      py={6}
      wrap="wrap"
      style={{ background: 'var(--mantine-primary-color-light)', borderRadius: 'var(--mantine-radius-md)' }}
      data-testid="bulk-bar"
    >
      <Text size="sm" fw={600} data-testid="bulk-count">
        {selection.all ? `All ${devices(selection.count)} matching selected` : `${devices(selection.count)} selected`}
      </Text>
      {!selection.all && selection.count < matching ? (
        <Button variant="subtle" size="compact-sm" onClick={selection.selectAll} data-testid="select-all-matching">
          Select all {devices(matching)} matching{Object.keys(filter).length > 0 ? ' this filter' : ''}
        </Button>
      ) : null}
      <Group gap={6} ml="auto" wrap="wrap">
        <QuickAction action="ping" label="Ping" icon={<IconWifi size={14} />} onPick={open} />
        <QuickAction action="lock" label="Lock" icon={<IconLock size={14} />} onPick={open} />
        <QuickAction action="unlock" label="Unlock" icon={<IconLockOpen size={14} />} onPick={open} />
        <Menu position="bottom-end" withinPortal>
          <Menu.Target>
            <Button size="compact-sm" variant="default" rightSection={<IconChevronDown size={14} />}>
              More actions
            </Button>
          </Menu.Target>
          <Menu.Dropdown>
            {item('inventory', 'Ask for inventory', <IconListDetails size={14} />)}
            {item('geolocate', 'Locate', <IconCurrentLocation size={14} />)}
            {item('move', 'Move to a fleet…')}
            {item('assign_policy', 'Set a policy…')}
            {item('deploy', 'Deploy a package or file…')}
            <Menu.Divider />
            {item('unenroll', 'Unenroll…')}
            {item('wipe', 'Wipe…')}
            {item('delete', 'Delete…')}
          </Menu.Dropdown>
        </Menu>
        <Button size="compact-sm" variant="subtle" color="gray" leftSection={<IconX size={14} />} onClick={selection.clear}>
          Clear
        </Button>
      </Group>
      {pending ? (
        <ConfirmJob action={pending.action} selection={selection} filter={filter} onClose={() => setPending(null)} />
      ) : null}
    </Group>
  );
}

function QuickAction({
  action,
  label,
  icon,
  onPick,
}: {
  action: JobAction;
  label: string;
  icon: React.ReactNode;
  onPick: (action: JobAction) => void;
}) {
  return (
    <Gate permission={JOB_PERMISSIONS[action]}>
      <Button size="compact-sm" variant="default" leftSection={icon} onClick={() => onPick(action)}>
        {label}
      </Button>
    </Gate>
  );
}

function ActionItem({
  action,
  label,
  icon,
  onPick,
}: {
  action: JobAction;
  label: string;
  icon?: React.ReactNode;
  onPick: (action: JobAction) => void;
}) {
  const can = useCan(JOB_PERMISSIONS[action]);
  return (
    <Menu.Item
      leftSection={icon}
      color={isDestructiveJobAction(action) ? 'red' : undefined}
      disabled={!can.allowed}
      title={can.reason ?? undefined}
      onClick={() => onPick(action)}
    >
      {label}
    </Menu.Item>
  );
}

/** The one confirmation: how many devices, what is selected, what the action needs; the destructive ones ask for the count. */
function ConfirmJob({
  action,
  selection,
  filter,
  onClose,
}: {
  action: JobAction;
  selection: BulkSelection;
  filter: DeviceFilterFields;
  onClose: () => void;
}) {
  const start = useStartJob();
  const fleets = useFleets();
  const catalogue = usePolicyCatalogue();
  const packages = useStored('package');
  const files = useStored('file');
  const [typed, setTyped] = useState('');
  const [fleet, setFleet] = useState<string | null>(null);
  const [symbol, setSymbol] = useState<string | null>(null);
  const [value, setValue] = useState<Value | null>(null);
  const [item, setItem] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const count = selection.count;
  const destructive = isDestructiveJobAction(action);
  const label = JOB_ACTION_LABELS[action];
  const policies = useMemo(() => (catalogue.data ?? []).filter((p) => p.type !== 'deployment'), [catalogue.data]);
  const policy = policies.find((p) => p.symbol === symbol);
  const shownValue = value ?? ((policy?.recommended ?? false) as Value);
  const items = [
    ...(packages.data ?? []).map((p) => ({ value: `package:${p.id}`, label: `Package: ${p.name}` })),
    ...(files.data ?? []).map((f) => ({ value: `file:${f.id}`, label: `File: ${f.name}` })),
  ];

  const ready =
    (!destructive || typed.trim() === String(count)) &&
    (action !== 'move' || fleet !== null) &&
    (action !== 'assign_policy' || policy !== undefined) &&
    (action !== 'deploy' || item !== null);

  const submit = () => {
    const body: JobBody = {
      action,
      selection: selection.all ? { filter } : { ids: [...selection.ids] },
      ...(destructive ? { expected_count: count } : {}),
    };
    if (action === 'move' && fleet !== null) body.fleet = fleet;
    if (action === 'assign_policy' && policy) {
      body.policy = policy.symbol;
      body.value = shownValue;
    }
    if (action === 'deploy' && item !== null) {
      const [kind, id] = item.split(':');
      body.kind = kind === 'file' ? 'file' : 'package';
      body.item_id = Number(id);
    }
    setProblem(null);
    start.mutate(body, {
      onSuccess: (job) => {
        selection.clear();
        onClose();
        navigate(`/jobs/${job.id}`);
      },
      onError: (error) => {
        // A count that changed since (409), a parameter refused (400): said here, nothing was done.
        if (error instanceof AdminApiError && error.status < 500) setProblem(error.message);
        else notifyError(`${label} not started`, error);
      },
    });
  };

  return (
    <Modal opened onClose={onClose} title={`${label}: ${devices(count)}?`} centered size="lg" data-testid="bulk-confirm">
      <Stack gap="sm">
        <Text size="sm">
          {selection.all
            ? `Every device matching ${describeDeviceFilter(filter)}: ${devices(count)} now. The server selects them again when the job starts, within the fleets you may act on.`
            : `The ${devices(count)} you selected.`}
        </Text>
        {action === 'move' ? (
          <Select
            label="Move to fleet"
            placeholder="Choose a fleet"
            data={(fleets.data ?? []).map((f) => f.name)}
            value={fleet}
            onChange={setFleet}
            comboboxProps={{ withinPortal: true }}
            data-autofocus
          />
        ) : null}
        {action === 'assign_policy' ? (
          <Group align="flex-end" gap="sm">
            <Select
              label="Policy"
              placeholder="Choose a policy"
              searchable
              data={policies.map((p) => ({ value: p.symbol, label: p.label }))}
              value={symbol}
              onChange={(next) => {
                setSymbol(next);
                setValue(null);
              }}
              comboboxProps={{ withinPortal: true }}
              w={280}
            />
            {policy ? <ValueControl policy={policy} value={shownValue} onChange={setValue} /> : null}
          </Group>
        ) : null}
        {action === 'assign_policy' && policy ? (
          <Text size="xs" c="dimmed">
            {policy.explanation} Each device gets {showValue(policy, shownValue)} as its own value (it beats its fleet&apos;s).
          </Text>
        ) : null}
        {action === 'deploy' ? (
          <Select
            label="Deploy"
            placeholder="Choose a package or file"
            data={items}
            value={item}
            onChange={setItem}
            comboboxProps={{ withinPortal: true }}
            nothingFoundMessage="Upload one in Files & packages first"
          />
        ) : null}
        {destructive ? (
          <>
            <Alert color="red" variant="light" title="This cannot be undone">
              {action === 'delete'
                ? 'The devices are removed from the server: their records, history and API tokens.'
                : action === 'wipe'
                  ? 'Each device erases its data when it receives the command (an offline one when it connects).'
                  : 'Each device leaves management when it receives the command (an offline one when it connects).'}
            </Alert>
            <TextInput
              label={`Type ${count} to confirm`}
              value={typed}
              onChange={(event) => setTyped(event.currentTarget.value)}
              inputMode="numeric"
              autoComplete="off"
              data-autofocus
              data-testid="bulk-confirm-count"
            />
          </>
        ) : null}
        {problem ? (
          <Alert color="orange" variant="light" data-testid="bulk-problem">
            {problem}
          </Alert>
        ) : null}
        <Group justify="flex-end" gap="sm">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button
            color={destructive ? 'red' : undefined}
            disabled={!ready}
            loading={start.isPending}
            onClick={submit}
            data-testid="bulk-confirm-go"
          >
            {VERB[action]} {devices(count)}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
