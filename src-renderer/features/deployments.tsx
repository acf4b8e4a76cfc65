import {
  ActionIcon,
  Badge,
  Button,
  Checkbox,
  Group,
  Modal,
  NumberInput,
  Progress,
  SegmentedControl,
  Select,
  Stack,
  Table,
  Text,
  TextInput,
  Tooltip,
} from '@mantine/core';
import { IconChevronDown, IconChevronRight, IconRocket, IconTrash } from '@tabler/icons-react';
import { Fragment, useState } from 'react';
import {
  useAgents,
  useAssignToView,
  useDeploy,
  useDeployment,
  useDeployments,
  useFleets,
  useUndeploy,
  useUpdatePackage,
  useViews,
} from '../api/queries.ts';
import type {
  Deployment,
  DeploymentFilter,
  DeviceTask,
  StoredItem,
  StoredKind,
  TaskCounts,
  TaskStatus,
} from '../../src-shared/contract/index.ts';
import { confirmAction, EmptyState, notifyError, notifySuccess, QueryView, RelativeTime } from '../components/common.tsx';
import { TaskVerificationCell } from './verification.tsx';
import { Gate } from '../components/permissions.tsx';

const STATUS_COLORS: Record<TaskStatus, string> = {
  pending: 'gray',
  received: 'blue',
  'in progress': 'blue',
  waiting: 'yellow',
  done: 'teal',
  failed: 'red',
  canceled: 'dark',
  incompatible: 'orange',
  overriden: 'grape',
};

/** A task's status; `text` (the API's status_text) says "downloaded, not confirmed" where that is so. */
export function TaskStatusBadge({ status, text }: { status: TaskStatus; text?: string }) {
  const shown = text ?? status;
  return (
    <Badge
      color={shown === status ? (STATUS_COLORS[status] ?? 'gray') : 'cyan'}
      variant="light"
      data-status={status}
      // the longer wording is shown whole, never cut
      style={{ flexShrink: 0, maxWidth: 'none' }}
      styles={{ label: { overflow: 'visible' } }}
    >
      {shown}
    </Badge>
  );
}

/** Why a task stands where it does; a failure's reason in red. */
function TaskReason({ task }: { task: { status: TaskStatus; reason?: string | null } }) {
  return (
    <Text size="xs" c={task.status === 'failed' ? 'red' : 'dimmed'}>
      {task.reason ?? ''}
    </Text>
  );
}

const POLICY_LABELS: Record<Deployment['policy'], string> = {
  deployApp: 'Install app',
  deployFile: 'Copy file',
  removeApp: 'Remove app',
  removeFile: 'Remove file',
};

/** One bar per deployment: done, failed, in progress and pending as sections, and the sentence. */
export function DeploymentProgress({ counts, text }: { counts: TaskCounts; text: string }) {
  const total = Math.max(1, counts.total - counts.canceled - counts.overriden);
  const share = (n: number) => (n / total) * 100;
  return (
    <Stack gap={4} miw={140}>
      <Progress.Root size="lg" aria-label={text}>
        <Progress.Section value={share(counts.done)} color="teal" />
        <Progress.Section value={share(counts.failed)} color="red" />
        <Progress.Section value={share(counts.incompatible)} color="orange" />
        <Progress.Section value={share(counts.in_progress)} color="blue" animated />
        <Progress.Section value={share(counts.pending)} color="gray.4" />
      </Progress.Root>
      <Text size="xs" c="dimmed" data-testid="deployment-progress">
        {text}
      </Text>
    </Stack>
  );
}

export function TaskRows({ id }: { id: number }) {
  const detail = useDeployment(id);
  return (
    <QueryView query={detail}>
      {(deployment) =>
        deployment.tasks.length === 0 ? (
          <Text size="sm" c="dimmed" p="xs">
            No device in scope yet: devices that join get a task.
          </Text>
        ) : (
          // Fixed columns, long words wrapped: a row never pushes the card wider than the page.
          <Table fz="sm" verticalSpacing={4} layout="fixed" className="wrap-anywhere" data-testid={`deployment-tasks-${id}`}>
            <Table.Tbody>
              {deployment.tasks.map((task) => (
                <Table.Tr key={task.id} data-agent-id={task.agent_id}>
                  <Table.Td w="30%">{task.agent_name}</Table.Td>
                  <Table.Td w={184}>
                    <TaskStatusBadge status={task.status} text={task.status_text} />
                  </Table.Td>
                  <Table.Td>
                    <TaskReason task={task} />
                    <TaskVerificationCell verification={task.verification} agentId={task.agent_id} agentName={task.agent_name} />
                  </Table.Td>
                  <Table.Td w={96}>
                    <Text size="xs" c="dimmed">
                      <RelativeTime iso={task.updated_at} />
                    </Text>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )
      }
    </QueryView>
  );
}

/** Deployments with live progress; a row opens to each device's task. */
export function DeploymentList({
  filter,
  emptyText,
  showTarget = true,
}: {
  filter: DeploymentFilter;
  emptyText: string;
  /** Off where every deployment has the same target (a fleet's own card): one column less to fit. */
  showTarget?: boolean;
}) {
  const list = useDeployments(filter);
  const undeploy = useUndeploy();
  const [open, setOpen] = useState<Set<number>>(new Set());
  const toggle = (id: number) =>
    setOpen((current) => {
      const next = new Set(current);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });
  return (
    <QueryView query={list}>
      {(items) =>
        items.length === 0 ? (
          <EmptyState title="No deployments">{emptyText}</EmptyState>
        ) : (
          // Fixed columns that share the card's width (no sideways scrolling); long names wrap.
          <Table verticalSpacing="sm" layout="fixed" className="wrap-anywhere" data-testid="deployment-list">
            <Table.Thead>
              <Table.Tr>
                <Table.Th w={44} />
                <Table.Th>What</Table.Th>
                {showTarget ? <Table.Th>To</Table.Th> : null}
                <Table.Th w={showTarget ? '28%' : '38%'}>Progress</Table.Th>
                <Table.Th w={48} />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {items.map((d) => (
                <Fragment key={d.id}>
                  <Table.Tr data-deployment-id={d.id} data-item-name={d.item_name}>
                    <Table.Td>
                      <ActionIcon
                        variant="subtle"
                        color="gray"
                        aria-label={open.has(d.id) ? 'Hide devices' : 'Show devices'}
                        aria-expanded={open.has(d.id)}
                        onClick={() => toggle(d.id)}
                      >
                        {open.has(d.id) ? <IconChevronDown size={16} /> : <IconChevronRight size={16} />}
                      </ActionIcon>
                    </Table.Td>
                    <Table.Td>
                      <Text size="sm" fw={500}>
                        {d.item_name}
                      </Text>
                      <Text size="xs" c="dimmed">
                        {POLICY_LABELS[d.policy]}
                        {d.destination ? ` to ${d.destination}` : ''}
                        {d.state === 'removed'
                          ? ' · removed'
                          : d.remove_on_delete
                            ? ' · removed from devices with the deployment'
                            : ''}
                      </Text>
                    </Table.Td>
                    {showTarget ? (
                      <Table.Td>
                        <Text size="sm">{d.target_name}</Text>
                      </Table.Td>
                    ) : null}
                    <Table.Td>
                      <DeploymentProgress counts={d} text={d.progress} />
                    </Table.Td>
                    <Table.Td>
                      {d.state === 'active' ? (
                        <Gate permission="deployments.write">
                          <Tooltip label="Remove deployment">
                            <ActionIcon
                              variant="subtle"
                              color="red"
                              aria-label={`Remove deployment of ${d.item_name}`}
                              loading={undeploy.isPending && undeploy.variables === d.id}
                              onClick={() =>
                                confirmAction(
                                  {
                                    title: `Remove the deployment of ${d.item_name}?`,
                                    message:
                                      d.remove_on_delete && (d.policy === 'deployApp' || d.policy === 'deployFile')
                                        ? `Devices of ${d.target_name} are told to remove it (a "${d.policy === 'deployApp' ? 'removeApp' : 'removeFile'}" task follows).`
                                        : 'Devices keep what they installed; devices that join later no longer get it.',
                                    confirmLabel: 'Remove',
                                  },
                                  () =>
                                    undeploy.mutate(d.id, {
                                      onSuccess: () => notifySuccess(`Deployment of ${d.item_name} removed`),
                                      onError: (e) => notifyError('Not removed', e),
                                    }),
                                )
                              }
                            >
                              <IconTrash size={16} />
                            </ActionIcon>
                          </Tooltip>
                        </Gate>
                      ) : null}
                    </Table.Td>
                  </Table.Tr>
                  {open.has(d.id) ? (
                    <Table.Tr>
                      <Table.Td />
                      <Table.Td colSpan={showTarget ? 4 : 3}>
                        <TaskRows id={d.id} />
                      </Table.Td>
                    </Table.Tr>
                  ) : null}
                </Fragment>
              ))}
            </Table.Tbody>
          </Table>
        )
      }
    </QueryView>
  );
}

/** "Deploy to…": a fleet or one device; files get a destination folder. */
export function DeployModal({ item, kind, onClose }: { item: StoredItem | null; kind: StoredKind; onClose: () => void }) {
  const fleets = useFleets();
  const agents = useAgents();
  const deploy = useDeploy();
  const views = useViews();
  const assignToView = useAssignToView();
  const [target, setTarget] = useState<'fleet' | 'device' | 'view'>('fleet');
  const [fleetId, setFleetId] = useState<string | null>(null);
  const [agentId, setAgentId] = useState<string | null>(null);
  const [viewId, setViewId] = useState<string | null>(null);
  const [destination, setDestination] = useState('%SDCARD%/Download/');
  const [removeOnDelete, setRemoveOnDelete] = useState(true);
  const chosen = target === 'fleet' ? fleetId : target === 'view' ? viewId : agentId;
  const submit = () => {
    if (!item || !chosen) return;
    if (target === 'view') {
      // A saved view: carried to each device in it now, and to those that enter it later.
      assignToView.mutate(
        {
          viewId: Number(chosen),
          body: {
            policy: kind === 'package' ? 'deployApp' : 'deployFile',
            value: item.id,
            ...(kind === 'file' ? { destination } : {}),
            remove_on_delete: removeOnDelete,
          },
        },
        {
          onSuccess: (created) => {
            notifySuccess(
              `${item.name} published to view "${created.view}": ${created.devices} device${created.devices === 1 ? '' : 's'}`,
              'Deployed',
            );
            onClose();
          },
          onError: (error) => notifyError('Not deployed', error),
        },
      );
      return;
    }
    deploy.mutate(
      {
        kind,
        item_id: item.id,
        ...(target === 'fleet' ? { fleet_id: Number(chosen) } : { agent_id: Number(chosen) }),
        ...(kind === 'file' ? { destination } : {}),
        remove_on_delete: removeOnDelete,
      },
      {
        onSuccess: (created) => {
          notifySuccess(`${item.name} published to ${created.target_name}: ${created.progress}`, 'Deployed');
          onClose();
        },
        onError: (error) => notifyError('Not deployed', error),
      },
    );
  };
  return (
    <Modal opened={item !== null} onClose={onClose} title={item ? `Deploy ${item.name}` : ''} size="lg">
      <Stack>
        {kind === 'package' && item ? (
          <Text size="sm" c="dimmed">
            {item.label ?? item.name} · {item.package_name ?? 'no package name'}
            {item.version_name ? ` · version ${item.version_name}` : ''}
            {item.version_code !== null && item.version_code !== undefined ? ` (code ${item.version_code})` : ''}
          </Text>
        ) : null}
        <SegmentedControl
          value={target}
          onChange={(value) => setTarget(value as 'fleet' | 'device' | 'view')}
          data={[
            { value: 'fleet', label: 'A fleet' },
            { value: 'view', label: 'A saved view' },
            { value: 'device', label: 'One device' },
          ]}
        />
        {target === 'view' ? (
          <Select
            label="Saved view"
            description="Devices entering the view later get it too; a device leaving the view has its task canceled"
            placeholder={views.data?.length ? 'Choose a view' : 'No saved view yet: save one from the Devices filter bar'}
            searchable
            data={(views.data ?? []).map((v) => ({
              value: String(v.id),
              label: `${v.name} (${v.count} device${v.count === 1 ? '' : 's'})`,
            }))}
            value={viewId}
            onChange={setViewId}
            comboboxProps={{ withinPortal: true }}
          />
        ) : target === 'fleet' ? (
          <Select
            label="Fleet"
            placeholder="Choose a fleet"
            searchable
            data={(fleets.data ?? []).map((f) => ({
              value: String(f.id),
              label: `${f.name} (${f.agent_count} device${f.agent_count === 1 ? '' : 's'})`,
            }))}
            value={fleetId}
            onChange={setFleetId}
            comboboxProps={{ withinPortal: true }}
          />
        ) : (
          <Select
            label="Device"
            placeholder="Choose a device"
            searchable
            limit={200}
            data={(agents.data ?? []).map((a) => ({ value: String(a.id), label: `${a.name}${a.email ? ` · ${a.email}` : ''}` }))}
            value={agentId}
            onChange={setAgentId}
            comboboxProps={{ withinPortal: true }}
          />
        )}
        {kind === 'file' ? (
          <TextInput
            label="Destination folder on the device"
            value={destination}
            onChange={(e) => setDestination(e.currentTarget.value)}
            required
          />
        ) : null}
        <Checkbox
          label={
            kind === 'package'
              ? 'Uninstall it from the devices when this deployment is removed'
              : 'Delete it from the devices when this deployment is removed'
          }
          checked={removeOnDelete}
          onChange={(e) => setRemoveOnDelete(e.currentTarget.checked)}
        />
        <Text size="xs" c="dimmed">
          The policy is kept on the broker: devices that are offline get it when they connect, and devices that join the fleet
          later get it too.
        </Text>
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Gate permission="deployments.write">
            <Button
              leftSection={<IconRocket size={16} />}
              disabled={!chosen || (kind === 'file' && destination.trim() === '')}
              loading={deploy.isPending || assignToView.isPending}
              onClick={submit}
            >
              Deploy
            </Button>
          </Gate>
        </Group>
      </Stack>
    </Modal>
  );
}

/** The tasks of one device (its panel). */
export function DeviceTasks({ tasks }: { tasks: DeviceTask[] }) {
  if (tasks.length === 0) {
    return (
      <Text size="sm" c="dimmed">
        No tasks: nothing was deployed to this device or its fleet.
      </Text>
    );
  }
  return (
    <Table fz="sm" verticalSpacing={4} data-testid="device-tasks">
      <Table.Tbody>
        {tasks.map((task) => (
          <Table.Tr key={task.id}>
            <Table.Td>
              <Text size="sm">{task.deployment?.item_name ?? `Task ${task.deployment_id}`}</Text>
              <Text size="xs" c="dimmed">
                {task.deployment
                  ? `${POLICY_LABELS[task.deployment.policy as Deployment['policy']] ?? task.deployment.policy} · ${task.deployment.target_name}`
                  : ''}
              </Text>
            </Table.Td>
            <Table.Td w={task.status_text === task.status ? 110 : 200}>
              <TaskStatusBadge status={task.status} text={task.status_text} />
            </Table.Td>
            <Table.Td>
              <TaskReason task={task} />
              <Text size="xs" c="dimmed">
                {(task.history ?? []).map((h) => h.status).join(' → ')}
              </Text>
              <TaskVerificationCell verification={task.verification} agentId={task.agent_id} agentName={task.agent_name} />
            </Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

const PACKAGE_NAME = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$/;

/** What devices need to install a package whose manifest was not read (anything but an APK). */
export function PackageInfoModal({ item, onClose }: { item: StoredItem | null; onClose: () => void }) {
  const update = useUpdatePackage();
  const [packageName, setPackageName] = useState(item?.package_name ?? '');
  const [versionCode, setVersionCode] = useState<number | string>(item?.version_code ?? '');
  const [versionName, setVersionName] = useState(item?.version_name ?? '');
  const nameProblem = packageName !== '' && !PACKAGE_NAME.test(packageName) ? 'Dot-separated names, e.g. com.example.app' : null;
  return (
    <Modal opened={item !== null} onClose={onClose} title={item ? `Install details of ${item.name}` : ''}>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (!item || nameProblem || packageName === '') return;
          update.mutate(
            {
              id: item.id,
              package_name: packageName,
              ...(versionCode === '' ? {} : { version_code: Number(versionCode) }),
              ...(versionName.trim() === '' ? {} : { version_name: versionName.trim() }),
            },
            {
              onSuccess: () => (notifySuccess(`${item.name}: ${packageName}`), onClose()),
              onError: (e) => notifyError('Not saved', e),
            },
          );
        }}
      >
        <Stack>
          <TextInput
            label="Package name"
            placeholder="com.example.app"
            value={packageName}
            onChange={(e) => setPackageName(e.currentTarget.value.trim())}
            error={nameProblem}
            required
            data-autofocus
          />
          <NumberInput label="Version code" min={0} allowDecimal={false} value={versionCode} onChange={setVersionCode} />
          <TextInput
            label="Version name"
            placeholder="1.0"
            value={versionName}
            onChange={(e) => setVersionName(e.currentTarget.value)}
            maxLength={100}
          />
          <Group justify="flex-end">
            <Gate permission="files.write">
              <Button type="submit" loading={update.isPending} disabled={packageName === '' || nameProblem !== null}>
                Save
              </Button>
            </Gate>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
