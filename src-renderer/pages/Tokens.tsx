import {
  Alert,
  Badge,
  Button,
  Code,
  Group,
  Modal,
  MultiSelect,
  NumberInput,
  Select,
  Stack,
  Table,
  Text,
  TextInput,
  VisuallyHidden,
} from '@mantine/core';
import { IconBan, IconKey, IconPlus } from '@tabler/icons-react';
import { useState, type FormEvent } from 'react';
import { errorMessage } from '../api/client.ts';
import { useMe, useRevokeToken, useTokens, useCreateToken } from '../api/accounts.ts';
import { useFleets } from '../api/queries.ts';
import type { ApiToken, ApiTokenCreated, Role } from '../../src-shared/contract/index.ts';
import { ROLES, roleAtLeast } from '../../src-shared/contract/rules.ts';
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

const ROLE_HELP: Record<Role, string> = {
  owner: 'owner: everything',
  admin: 'admin: everything but accounts',
  operator: 'operator: day-to-day helpdesk actions',
  observer: 'observer: read only',
};
const STATUS_COLOR = { active: 'teal', expired: 'gray', revoked: 'red' } as const;
/** The roles a token can be scoped to fleets with (an owner or admin sees every fleet). */
const SCOPABLE: readonly Role[] = ['operator', 'observer'];

/** A new personal token: a name, a role no higher than one's own, an optional lifetime; shown once. */
function NewTokenModal({ opened, onClose, mine }: { opened: boolean; onClose: () => void; mine: Role }) {
  const create = useCreateToken();
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>(mine === 'owner' ? 'admin' : mine);
  const [days, setDays] = useState<number | string>(90);
  const [fleetIds, setFleetIds] = useState<string[]>([]);
  const fleets = useFleets();
  const scopable = SCOPABLE.includes(role);
  const [created, setCreated] = useState<ApiTokenCreated | null>(null);
  const [error, setError] = useState<string | null>(null);

  const close = () => {
    setCreated(null);
    setName('');
    setFleetIds([]);
    setError(null);
    onClose();
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!name.trim()) {
      setError('Name the token after what will use it (a script, a colleague’s laptop).');
      return;
    }
    setError(null);
    create.mutate(
      {
        name: name.trim(),
        role,
        ...(days === '' ? {} : { days: Number(days) }),
        ...(scopable && fleetIds.length > 0 ? { fleet_ids: fleetIds.map(Number) } : {}),
      },
      { onSuccess: setCreated, onError: (failure) => setError(errorMessage(failure)) },
    );
  };

  return (
    <Modal opened={opened} onClose={close} title={created ? 'API token created' : 'New API token'} size="lg">
      {created ? (
        <Stack gap="md">
          <Alert color="orange" variant="light" title="Copy it now: it is shown this once">
            The server keeps only a hash of it. Use it as <Code>Authorization: Bearer &lt;token&gt;</Code>, or as{' '}
            <Code>MDM_CONSOLE_TOKEN</Code> for the CLI.
          </Alert>
          <Group gap="xs" wrap="nowrap">
            <Code block style={{ flex: 1, wordBreak: 'break-all' }} data-testid="new-token">
              {created.token}
            </Code>
            <CopyIcon value={created.token} label="Copy the token" />
          </Group>
          <Group justify="flex-end">
            <Button onClick={close}>Done</Button>
          </Group>
        </Stack>
      ) : (
        <form onSubmit={submit} noValidate>
          <Stack gap="md">
            <TextInput
              label="Name"
              placeholder="nightly export script"
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              data-autofocus
              data-testid="token-name"
            />
            <Select
              label="Role"
              description="What the token may do; never more than your own role"
              data={ROLES.filter((r) => roleAtLeast(mine, r)).map((r) => ({ value: r, label: ROLE_HELP[r] }))}
              value={role}
              onChange={(value) => value && setRole(value as Role)}
              allowDeselect={false}
              data-testid="token-role"
            />
            {scopable ? (
              <MultiSelect
                label="Fleets"
                description="Only these fleets’ devices, invitations and codes; none chosen: every fleet you see"
                placeholder={fleetIds.length === 0 ? 'Every fleet you see' : undefined}
                data={(fleets.data ?? []).map((fleet) => ({ value: String(fleet.id), label: fleet.name }))}
                value={fleetIds}
                onChange={setFleetIds}
                searchable
                clearable
                data-testid="token-fleets"
              />
            ) : null}
            <NumberInput
              label="Expires after (days)"
              description="Leave empty for a token that never expires"
              min={1}
              max={3650}
              value={days}
              onChange={setDays}
              data-testid="token-days"
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
              <Button type="submit" loading={create.isPending} leftSection={<IconKey size={16} />} data-testid="token-create">
                Create token
              </Button>
            </Group>
          </Stack>
        </form>
      )}
    </Modal>
  );
}

function TokenRow({ token }: { token: ApiToken }) {
  const revoke = useRevokeToken();
  const fleets = useFleets();
  const fleetNames = (ids: number[]) => ids.map((id) => fleets.data?.find((f) => f.id === id)?.name ?? `#${id}`).join(', ');
  const ask = () =>
    confirmAction(
      {
        title: `Revoke "${token.name}"?`,
        message: 'Whatever uses it is refused from now on. This cannot be undone.',
        confirmLabel: 'Revoke',
      },
      () =>
        revoke.mutate(token.id, {
          onSuccess: () => notifySuccess(`API token "${token.name}" revoked`),
          onError: (failure) => notifyError('Could not revoke the token', failure),
        }),
    );
  return (
    <Table.Tr data-testid={`token-${token.id}`}>
      <Table.Td>
        <Text size="sm" fw={500}>
          {token.name}
        </Text>
        <Text size="xs" c="dimmed">
          of {token.account_name}
          {token.fleet_ids.length > 0 ? ` · fleets ${fleetNames(token.fleet_ids)}` : ''}
        </Text>
      </Table.Td>
      <Table.Td>
        <Badge variant="light">{token.role}</Badge>
      </Table.Td>
      <Table.Td>
        <Badge color={STATUS_COLOR[token.status]} variant="light" data-testid="token-status">
          {token.status}
        </Badge>
      </Table.Td>
      <Table.Td>{token.expires_at ? <RelativeTime iso={token.expires_at} future /> : 'never'}</Table.Td>
      <Table.Td>{token.last_used_at ? <RelativeTime iso={token.last_used_at} /> : 'never'}</Table.Td>
      <Table.Td>
        {token.kind === 'data-dir' ? (
          <Text size="xs" c="dimmed">
            the CLI&apos;s (replace the file to change it)
          </Text>
        ) : token.status === 'active' ? (
          <Button
            size="xs"
            variant="subtle"
            color="red"
            leftSection={<IconBan size={14} />}
            onClick={ask}
            loading={revoke.isPending}
            aria-label={`Revoke ${token.name}`}
          >
            Revoke
          </Button>
        ) : null}
      </Table.Td>
    </Table.Tr>
  );
}

/** Personal API tokens for scripts and the CLI: each with a role, an expiry and its last use. */
export function TokensPage() {
  const tokens = useTokens();
  const me = useMe();
  const [opened, setOpened] = useState(false);
  const mine = me.data?.role ?? 'observer';
  return (
    <>
      <PageHeader
        title="API tokens"
        description="For scripts and the CLI: each acts as you, with the role you give it. Revoke one and whatever uses it stops at once."
        actions={
          <Button leftSection={<IconPlus size={16} />} onClick={() => setOpened(true)} data-testid="new-token-button">
            New token
          </Button>
        }
      />
      <NewTokenModal opened={opened} onClose={() => setOpened(false)} mine={mine} />
      <QueryView query={tokens}>
        {(items) =>
          items.length === 0 ? (
            <EmptyState title="No API tokens yet" />
          ) : (
            <Table.ScrollContainer minWidth={720}>
              <Table verticalSpacing="sm" highlightOnHover>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Name</Table.Th>
                    <Table.Th>Role</Table.Th>
                    <Table.Th>Status</Table.Th>
                    <Table.Th>Expires</Table.Th>
                    <Table.Th>Last used</Table.Th>
                    <Table.Th>
                      <VisuallyHidden>Actions</VisuallyHidden>
                    </Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {items.map((token) => (
                    <TokenRow key={token.id} token={token} />
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
          )
        }
      </QueryView>
    </>
  );
}
