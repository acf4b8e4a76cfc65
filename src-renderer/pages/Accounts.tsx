import {
  ActionIcon,
  Alert,
  Badge,
  Button,
  Checkbox,
  Code,
  Group,
  Menu,
  Modal,
  MultiSelect,
  NumberInput,
  Select,
  Stack,
  Table,
  Text,
  TextInput,
  Tooltip,
  VisuallyHidden,
} from '@mantine/core';
import {
  IconDots,
  IconLock,
  IconLockOpen,
  IconMailForward,
  IconShieldHalf,
  IconShieldOff,
  IconTrash,
  IconUserPlus,
} from '@tabler/icons-react';
import { useState, type FormEvent } from 'react';
import { errorMessage } from '../api/client.ts';
import { formatDateTime } from '../lib/format.ts';
import { useFleets } from '../api/queries.ts';
import {
  useAccounts,
  useDeleteAdmin,
  useDisableAdmin,
  useEnableAdmin,
  useInviteAdmin,
  useMe,
  useReinviteAdmin,
  useResetAdminTwoFactor,
  useSetAdminRole,
} from '../api/accounts.ts';
import type { AccountEntry, AccountInvited, Role } from '../../src-shared/contract/index.ts';
import { ACCOUNT_INVITE_DAYS, isValidEmail, ROLES } from '../../src-shared/contract/rules.ts';
import {
  confirmAction,
  CopyIcon,
  Email,
  EmptyState,
  notifyError,
  notifySuccess,
  PageHeader,
  QueryView,
  RelativeTime,
} from '../components/common.tsx';

const ROLE_HELP: Record<Role, string> = {
  owner: 'Owner: everything, accounts and settings included',
  admin: 'Admin: everything but accounts',
  operator: 'Operator: helpdesk actions (invite, approve, lock …), no wipe or deletion',
  observer: 'Observer: read only',
};
const ROLE_CHOICES = ROLES.map((value) => ({ value, label: ROLE_HELP[value] }));
const STATUS_COLOR = { active: 'teal', invited: 'blue', disabled: 'gray' } as const;

const nameOf = (account: AccountEntry) => account.email ?? account.display_name;
const scopable = (role: Role) => role === 'operator' || role === 'observer';

/** The fleets an operator or observer is scoped to; none chosen: every fleet. */
function FleetScope({ value, onChange, testId }: { value: string[]; onChange: (ids: string[]) => void; testId: string }) {
  const fleets = useFleets();
  return (
    <MultiSelect
      label="Fleets"
      description="Only these fleets’ devices, invitations and codes; none chosen: every fleet"
      placeholder={value.length === 0 ? 'Every fleet' : undefined}
      data={(fleets.data ?? []).map((fleet) => ({ value: String(fleet.id), label: fleet.name }))}
      value={value}
      onChange={onChange}
      searchable
      clearable
      data-testid={testId}
    />
  );
}
const EMAIL_STATE = {
  queued: 'email queued',
  sending: 'email being sent',
  sent: 'email sent',
  outbox: 'email in the outbox (no SMTP set up)',
  failed: 'email failed',
} as const;

/** The set-up link made without an email: shown to copy and hand over. */
function LinkToHandOver({ result }: { result: AccountInvited }) {
  return (
    <Stack gap="sm">
      <Alert color="blue" variant="light" title="No email sent: hand this link over">
        {result.account.email} opens it to choose a password. It works once, until{' '}
        {formatDateTime(result.account.invitation?.expires_at)}.
      </Alert>
      <Group gap="xs" wrap="nowrap">
        <Code block style={{ flex: 1, wordBreak: 'break-all' }} data-testid="setup-link">
          {result.setup_url}
        </Code>
        <CopyIcon value={result.setup_url ?? ''} label="Copy the set-up link" />
      </Group>
    </Stack>
  );
}

/** Invite an admin by email with a role; the email carries the set-up link, or the link is shown to hand over. */
function InviteModal({ opened, onClose }: { opened: boolean; onClose: () => void }) {
  const invite = useInviteAdmin();
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('operator');
  const [days, setDays] = useState<number | string>(ACCOUNT_INVITE_DAYS.default);
  const [sendEmail, setSendEmail] = useState(true);
  const [fleetIds, setFleetIds] = useState<string[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [result, setResult] = useState<AccountInvited | null>(null);

  const close = () => {
    setEmail('');
    setName('');
    setFleetIds([]);
    setError(null);
    setResult(null);
    onClose();
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!isValidEmail(email)) {
      setError('Enter the email address they will sign in with.');
      return;
    }
    setError(null);
    invite.mutate(
      {
        email: email.trim(),
        role,
        ...(name.trim() ? { display_name: name.trim() } : {}),
        ...(days === '' ? {} : { days: Number(days) }),
        ...(sendEmail ? {} : { no_email: true }),
        ...(scopable(role) && fleetIds.length > 0 ? { fleet_ids: fleetIds.map(Number) } : {}),
      },
      {
        onSuccess: (answer) => {
          if (answer.setup_url) setResult(answer);
          else {
            notifySuccess(`${answer.account.email} is invited: the set-up link is on its way by email`);
            close();
          }
        },
        onError: (failure) => setError(errorMessage(failure)),
      },
    );
  };

  return (
    <Modal opened={opened} onClose={close} title={result ? 'Admin invited' : 'Invite an admin'} size="lg">
      {result ? (
        <Stack gap="md">
          <LinkToHandOver result={result} />
          <Group justify="flex-end">
            <Button onClick={close}>Done</Button>
          </Group>
        </Stack>
      ) : (
        <form onSubmit={submit} noValidate>
          <Stack gap="md">
            <TextInput
              label="Email"
              description="They sign in with it"
              type="email"
              value={email}
              onChange={(e) => setEmail(e.currentTarget.value)}
              data-autofocus
              data-testid="invite-admin-email"
            />
            <TextInput
              label="Name"
              description="Optional: they can correct it when they set their password"
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              data-testid="invite-admin-name"
            />
            <Select
              label="Role"
              data={ROLE_CHOICES}
              value={role}
              onChange={(value) => value && setRole(value as Role)}
              allowDeselect={false}
              data-testid="invite-admin-role"
            />
            {scopable(role) ? <FleetScope value={fleetIds} onChange={setFleetIds} testId="invite-admin-fleets" /> : null}
            <NumberInput
              label="The link works for (days)"
              min={ACCOUNT_INVITE_DAYS.min}
              max={ACCOUNT_INVITE_DAYS.max}
              value={days}
              onChange={setDays}
              data-testid="invite-admin-days"
            />
            <Checkbox
              label="Email them the set-up link"
              description="Unticked: the link is shown here, to hand over another way"
              checked={sendEmail}
              onChange={(e) => setSendEmail(e.currentTarget.checked)}
              data-testid="invite-admin-send-email"
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
                loading={invite.isPending}
                leftSection={<IconUserPlus size={16} />}
                data-testid="invite-admin-submit"
              >
                Invite
              </Button>
            </Group>
          </Stack>
        </form>
      )}
    </Modal>
  );
}

function RoleModal({ account, onClose }: { account: AccountEntry | null; onClose: () => void }) {
  const setRole = useSetAdminRole();
  const [role, setChosen] = useState<Role | null>(null);
  const [fleets, setFleets] = useState<string[] | null>(null);
  const chosen = role ?? account?.role ?? 'operator';
  const chosenFleets = fleets ?? (account?.fleet_ids ?? []).map(String);
  const close = () => {
    setChosen(null);
    setFleets(null);
    onClose();
  };
  const save = () => {
    if (!account) return;
    setRole.mutate(
      { id: account.id, role: chosen, fleetIds: scopable(chosen) ? chosenFleets.map(Number) : null },
      {
        onSuccess: (changed) => {
          notifySuccess(
            `${nameOf(account)} is now ${changed.role}${changed.fleet_ids.length > 0 ? `, scoped to ${changed.fleet_ids.length} fleet(s)` : ''}`,
          );
          close();
        },
        onError: (failure) => notifyError('Could not change the role', failure),
      },
    );
  };
  return (
    <Modal opened={account !== null} onClose={close} title={account ? `Role and fleets of ${nameOf(account)}` : ''}>
      <Stack gap="md">
        <Select
          label="Role"
          data={ROLE_CHOICES}
          value={chosen}
          onChange={(value) => value && setChosen(value as Role)}
          allowDeselect={false}
          data-testid="role-select"
        />
        {scopable(chosen) ? <FleetScope value={chosenFleets} onChange={setFleets} testId="role-fleets" /> : null}
        <Group justify="flex-end">
          <Button variant="default" onClick={close}>
            Cancel
          </Button>
          <Button onClick={save} loading={setRole.isPending} data-testid="role-save">
            Save
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

function ScopeNames({ ids }: { ids: number[] }) {
  const fleets = useFleets();
  const names = ids.map((id) => fleets.data?.find((fleet) => fleet.id === id)?.name ?? `#${id}`);
  return (
    <Text size="xs" c="dimmed" mt={2} data-testid="account-fleets">
      fleets: {names.join(', ')}
    </Text>
  );
}

function StatusCell({ account }: { account: AccountEntry }) {
  const invitation = account.invitation;
  const delivery = invitation?.delivery;
  return (
    <Stack gap={2}>
      <Badge color={STATUS_COLOR[account.status]} variant="light" data-testid="account-status">
        {account.status}
      </Badge>
      {invitation ? (
        <Text size="xs" c={invitation.expired ? 'red' : 'dimmed'}>
          {invitation.expired ? 'link expired ' : 'link expires '}
          <RelativeTime iso={invitation.expires_at} future={!invitation.expired} />
          {' · '}
          {!delivery
            ? 'no email (link handed over)'
            : delivery.state === 'failed'
              ? `email failed: ${delivery.error ?? ''}`
              : delivery.retry_at
                ? `email will retry at ${new Date(delivery.retry_at).toLocaleTimeString()}`
                : EMAIL_STATE[delivery.state]}
        </Text>
      ) : null}
    </Stack>
  );
}

/** Why a control is off for this row, or null: never yourself, never the data dir's owner. */
function lockedBecause(account: AccountEntry, myId: number | undefined): string | null {
  if (account.id === myId) return 'This is you: another owner changes your account';
  if (account.data_dir_owner) return 'Holds the data dir’s admin token (the CLI’s): it stays an enabled owner';
  return null;
}

function AccountRow({
  account,
  myId,
  onRole,
  onLink,
}: {
  account: AccountEntry;
  myId: number | undefined;
  onRole: (account: AccountEntry) => void;
  onLink: (result: AccountInvited) => void;
}) {
  const disable = useDisableAdmin();
  const enable = useEnableAdmin();
  const remove = useDeleteAdmin();
  const reinvite = useReinviteAdmin();
  const resetTwoFactor = useResetAdminTwoFactor();
  const name = nameOf(account);
  const locked = lockedBecause(account, myId);

  const askDisable = () =>
    confirmAction(
      {
        title: `Disable ${name}?`,
        message: 'Their console sessions end now and their API tokens are refused until you enable the account again.',
        confirmLabel: 'Disable',
      },
      () =>
        disable.mutate(account.id, {
          onSuccess: () => notifySuccess(`${name} is disabled`),
          onError: (failure) => notifyError('Could not disable the account', failure),
        }),
    );
  const askDelete = () =>
    confirmAction(
      {
        title: `Delete ${name}?`,
        message: 'The account and its API tokens are deleted; its entries in the audit trail stay. This cannot be undone.',
        confirmLabel: 'Delete',
      },
      () =>
        remove.mutate(account.id, {
          onSuccess: () => notifySuccess(`${name} is deleted`),
          onError: (failure) => notifyError('Could not delete the account', failure),
        }),
    );
  const askResetTwoFactor = () =>
    confirmAction(
      {
        title: `Reset ${name}'s two-factor sign-in?`,
        message:
          'For a lost phone: their authenticator secret and recovery codes are deleted. They sign in with their password alone, or enrol a new app at their next sign-in when two-factor is required.',
        confirmLabel: 'Reset two-factor',
      },
      () =>
        resetTwoFactor.mutate(account.id, {
          onSuccess: () => notifySuccess(`${name}'s two-factor sign-in is reset`),
          onError: (failure) => notifyError('Could not reset two-factor sign-in', failure),
        }),
    );
  const sendLink = (noEmail: boolean) =>
    reinvite.mutate(
      { id: account.id, body: noEmail ? { no_email: true } : {} },
      {
        onSuccess: (answer) => {
          if (answer.setup_url) onLink(answer);
          else notifySuccess(`A new set-up link is on its way to ${name}; the previous one no longer works`);
        },
        onError: (failure) => notifyError('Could not make a new link', failure),
      },
    );

  return (
    <Table.Tr data-testid={`account-${account.id}`}>
      <Table.Td>
        <Text size="sm" fw={500}>
          {account.display_name}
          {account.id === myId ? (
            <Text span c="dimmed" size="xs">
              {' '}
              (you)
            </Text>
          ) : null}
        </Text>
        <Text size="xs" c="dimmed">
          {account.email ? <Email address={account.email} /> : 'this computer’s user'}
        </Text>
      </Table.Td>
      <Table.Td>
        <Badge variant="light" data-testid="account-role">
          {account.role}
        </Badge>
        {account.fleet_ids.length > 0 ? <ScopeNames ids={account.fleet_ids} /> : null}
      </Table.Td>
      <Table.Td>
        <StatusCell account={account} />
      </Table.Td>
      <Table.Td>
        <Badge color={account.two_factor ? 'teal' : 'gray'} variant="outline" data-testid="account-two-factor">
          {account.two_factor ? 'on' : 'off'}
        </Badge>
      </Table.Td>
      <Table.Td>
        <RelativeTime iso={account.last_sign_in_at} />
      </Table.Td>
      <Table.Td>
        {locked ? (
          <Tooltip label={locked} multiline w={240}>
            <Text size="xs" c="dimmed" data-testid="account-locked">
              {account.id === myId ? 'you' : 'the CLI’s owner'}
            </Text>
          </Tooltip>
        ) : (
          <Menu position="bottom-end" withinPortal>
            <Menu.Target>
              <ActionIcon variant="subtle" aria-label={`Actions for ${name}`} data-testid="account-actions">
                <IconDots size={18} />
              </ActionIcon>
            </Menu.Target>
            <Menu.Dropdown>
              <Menu.Item leftSection={<IconShieldHalf size={16} />} onClick={() => onRole(account)}>
                Change role or fleets…
              </Menu.Item>
              {account.status === 'invited' ? (
                <>
                  <Menu.Item leftSection={<IconMailForward size={16} />} onClick={() => sendLink(false)}>
                    Email a new set-up link
                  </Menu.Item>
                  <Menu.Item leftSection={<IconMailForward size={16} />} onClick={() => sendLink(true)}>
                    New set-up link to hand over
                  </Menu.Item>
                </>
              ) : null}
              {account.two_factor ? (
                <Menu.Item leftSection={<IconShieldOff size={16} />} onClick={askResetTwoFactor}>
                  Reset two-factor…
                </Menu.Item>
              ) : null}
              {account.disabled ? (
                <Menu.Item
                  leftSection={<IconLockOpen size={16} />}
                  onClick={() =>
                    enable.mutate(account.id, {
                      onSuccess: () => notifySuccess(`${name} is enabled again`),
                      onError: (failure) => notifyError('Could not enable the account', failure),
                    })
                  }
                >
                  Enable
                </Menu.Item>
              ) : (
                <Menu.Item leftSection={<IconLock size={16} />} onClick={askDisable}>
                  Disable…
                </Menu.Item>
              )}
              <Menu.Divider />
              <Menu.Item color="red" leftSection={<IconTrash size={16} />} onClick={askDelete}>
                Delete…
              </Menu.Item>
            </Menu.Dropdown>
          </Menu>
        )}
      </Table.Td>
    </Table.Tr>
  );
}

/** The admins: invite by email with a role, change roles, disable, enable, delete; who signed in when. */
export function AccountsPage() {
  const me = useMe();
  // Managing admins needs accounts.manage (the owner's): /api/me lists what this role may do.
  const isOwner = me.data?.permissions.includes('accounts.manage') === true;
  const accounts = useAccounts(isOwner);
  const [inviting, setInviting] = useState(false);
  const [roleOf, setRoleOf] = useState<AccountEntry | null>(null);
  const [link, setLink] = useState<AccountInvited | null>(null);
  const myId = me.data?.account.id;

  return (
    <>
      <PageHeader
        title="Accounts"
        description="The people who run this console: invite one by email with a role, change roles, disable or delete an account."
        actions={
          isOwner ? (
            <Button leftSection={<IconUserPlus size={16} />} onClick={() => setInviting(true)} data-testid="invite-admin-button">
              Invite an admin
            </Button>
          ) : null
        }
      />
      {me.data && !isOwner ? (
        <Alert color="gray" variant="light" title="Managing admins is the owner’s" data-testid="accounts-not-allowed">
          You are signed in as {me.data.role}, which cannot manage accounts (it needs accounts.manage): ask an owner to invite
          someone or change a role.
        </Alert>
      ) : (
        <QueryView query={accounts}>
          {(items) =>
            items.length === 0 ? (
              <EmptyState title="No admins yet" />
            ) : (
              <Table.ScrollContainer minWidth={720}>
                <Table verticalSpacing="sm" highlightOnHover data-testid="accounts-table">
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Admin</Table.Th>
                      <Table.Th>Role</Table.Th>
                      <Table.Th>Status</Table.Th>
                      <Table.Th>Two-factor</Table.Th>
                      <Table.Th>Last sign-in</Table.Th>
                      <Table.Th>
                        <VisuallyHidden>Actions</VisuallyHidden>
                      </Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {items.map((account) => (
                      <AccountRow key={account.id} account={account} myId={myId} onRole={setRoleOf} onLink={setLink} />
                    ))}
                  </Table.Tbody>
                </Table>
              </Table.ScrollContainer>
            )
          }
        </QueryView>
      )}
      <InviteModal opened={inviting} onClose={() => setInviting(false)} />
      <RoleModal account={roleOf} onClose={() => setRoleOf(null)} />
      <Modal opened={link !== null} onClose={() => setLink(null)} title="New set-up link" size="lg">
        {link ? <LinkToHandOver result={link} /> : null}
      </Modal>
    </>
  );
}
