import {
  Alert,
  Anchor,
  Badge,
  Button,
  Group,
  Modal,
  NumberInput,
  SegmentedControl,
  Select,
  Stack,
  Table,
  TagsInput,
  Text,
  TextInput,
} from '@mantine/core';
import { IconBan, IconPlus, IconRefresh } from '@tabler/icons-react';
import { useState, type FormEvent } from 'react';
import { AdminApiError } from '../api/client.ts';
import { CODE_LIFETIME_DAYS, CODE_MAX_USES } from '../../src-shared/contract/rules.ts';
import { CODE_STATUS, useCodes, useCreateCode, useRevokeCode, useRotateCode, usesText } from '../api/codes.ts';
import type { EnrollmentCode } from '../../src-shared/contract/index.ts';
import { useFleets } from '../api/queries.ts';
import { Link, navigate } from '../lib/router.tsx';
import {
  confirmAction,
  EmptyState,
  ErrorState,
  LoadingState,
  notifyError,
  notifySuccess,
  PageHeader,
  RelativeTime,
} from '../components/common.tsx';
import { Gate } from '../components/permissions.tsx';
import { ExportMenu } from '../components/export-menu.tsx';

const DOMAIN = /^@?[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$/i;

/** One code: name, fleet, allowed domains, uses, lifetime, approval. */
function NewCodeModal({ opened, onClose }: { opened: boolean; onClose: () => void }) {
  const fleets = useFleets();
  const create = useCreateCode();
  const [name, setName] = useState('');
  const [fleet, setFleet] = useState<string | null>(null);
  const [domains, setDomains] = useState<string[]>([]);
  const [maxUses, setMaxUses] = useState<number | string>('');
  const [days, setDays] = useState<number | string>('');
  const [approval, setApproval] = useState<'auto' | 'manual'>('auto');
  const [serverError, setServerError] = useState<string | null>(null);
  const badDomains = domains.filter((d) => !DOMAIN.test(d.trim()));

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!name.trim() || badDomains.length) return;
    setServerError(null);
    create.mutate(
      {
        name: name.trim(),
        ...(fleet ? { fleet } : {}),
        ...(domains.length ? { domains } : {}),
        ...(maxUses !== '' ? { max_uses: Number(maxUses) } : {}),
        ...(days !== '' ? { days: Number(days) } : {}),
        approval,
      },
      {
        onSuccess: (code) => {
          notifySuccess(`Enrollment code "${code.name}" created`);
          onClose();
          navigate(`/codes/${code.id}`);
        },
        onError: (error) => setServerError(error instanceof AdminApiError ? error.message : String(error)),
      },
    );
  };

  return (
    <Modal opened={opened} onClose={onClose} title="New enrollment code" size="lg">
      <form onSubmit={submit}>
        <Stack>
          <TextInput
            label="Name"
            placeholder="Reception poster, Sales team phones…"
            value={name}
            onChange={(e) => setName(e.currentTarget.value)}
            required
            data-autofocus
            maxLength={100}
          />
          <Select
            label="Fleet"
            placeholder="Default fleet"
            data={(fleets.data ?? []).map((f) => f.name)}
            value={fleet}
            onChange={setFleet}
            clearable
          />
          <TagsInput
            label="Allowed email domains"
            description="Only people with an address at one of these may enroll. Leave empty to allow any address. Press Enter after each."
            placeholder="example.com"
            value={domains}
            onChange={setDomains}
            error={badDomains.length ? `Not a domain: ${badDomains.join(', ')}` : null}
            splitChars={[',', ' ', ';']}
            aria-label="Allowed email domains"
          />
          <Group grow align="flex-start">
            <NumberInput
              label="Maximum uses"
              description="Empty: unlimited"
              min={1}
              max={CODE_MAX_USES}
              value={maxUses}
              onChange={setMaxUses}
              allowDecimal={false}
            />
            <NumberInput
              label="Valid for (days)"
              description={`${CODE_LIFETIME_DAYS.min} to ${CODE_LIFETIME_DAYS.max}; empty: never expires`}
              min={CODE_LIFETIME_DAYS.min}
              max={CODE_LIFETIME_DAYS.max}
              value={days}
              onChange={setDays}
              allowDecimal={false}
            />
          </Group>
          <div>
            <Text size="sm" fw={500} mb={4}>
              Approval
            </Text>
            <SegmentedControl
              aria-label="Approval"
              data={[
                { value: 'auto', label: 'Automatic' },
                { value: 'manual', label: 'An admin approves each device' },
              ]}
              value={approval}
              onChange={(value) => setApproval(value as 'auto' | 'manual')}
            />
          </div>
          {serverError ? (
            <Alert color="red" variant="light">
              {serverError}
            </Alert>
          ) : null}
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={create.isPending} disabled={!name.trim() || badDomains.length > 0}>
              Create code
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

export function CodeStatusBadge({ code, size = 'md' }: { code: Pick<EnrollmentCode, 'status'>; size?: 'md' | 'lg' }) {
  const { label, color } = CODE_STATUS[code.status];
  return (
    <Badge color={color} variant="light" size={size} data-testid="code-status">
      {label}
    </Badge>
  );
}

/** Revoke and rotate, asking first: both make printed copies stop working. */
export function CodeActions({ code }: { code: EnrollmentCode }) {
  const revoke = useRevokeCode();
  const rotate = useRotateCode();
  return (
    <Group gap="xs" wrap="nowrap">
      <Gate permission="codes.write">
        <Button
          size="xs"
          variant="default"
          leftSection={<IconRefresh size={14} />}
          loading={rotate.isPending}
          disabled={code.status === 'revoked'}
          onClick={() =>
            confirmAction(
              {
                title: `Rotate "${code.name}"?`,
                message:
                  'A new QR code and link replace the current ones: every printed poster and shared copy stops working. Devices already enrolled are not affected.',
                confirmLabel: 'Rotate',
              },
              () =>
                rotate.mutate(code.id, {
                  onSuccess: () => notifySuccess('New QR code and link: print them again'),
                  onError: (e) => notifyError('Not rotated', e),
                }),
            )
          }
        >
          Rotate
        </Button>
      </Gate>
      <Gate permission="codes.revoke">
        <Button
          size="xs"
          variant="default"
          color="red"
          leftSection={<IconBan size={14} />}
          loading={revoke.isPending}
          disabled={code.status === 'revoked'}
          onClick={() =>
            confirmAction(
              {
                title: `Revoke "${code.name}"?`,
                message: 'No further device can enroll with it. Devices already enrolled are not affected.',
                confirmLabel: 'Revoke',
              },
              () =>
                revoke.mutate(code.id, {
                  onSuccess: () => notifySuccess('Code revoked'),
                  onError: (e) => notifyError('Not revoked', e),
                }),
            )
          }
        >
          Revoke
        </Button>
      </Gate>
    </Group>
  );
}

export function CodesPage() {
  const codes = useCodes();
  const [creating, setCreating] = useState(false);
  return (
    <>
      <PageHeader
        title="Enrollment codes"
        description="One QR code for many devices: each person enrolls with their own email address, within the domains, uses, expiry and approval you set."
        actions={
          <>
            <ExportMenu path="/api/codes/export" what="codes" filtered={false} testId="codes-export" label="Export codes" />
            <ExportMenu path="/api/code-uses/export" what="uses" filtered={false} testId="code-uses-export" label="Export uses" />
            <Gate permission="codes.write">
              <Button leftSection={<IconPlus size={16} />} onClick={() => setCreating(true)}>
                New code
              </Button>
            </Gate>
          </>
        }
      />
      <NewCodeModal opened={creating} onClose={() => setCreating(false)} />
      {codes.isPending ? (
        <LoadingState />
      ) : codes.isError ? (
        <ErrorState error={codes.error} onRetry={() => void codes.refetch()} />
      ) : codes.data.length === 0 ? (
        <EmptyState
          title="No enrollment codes yet"
          action={
            <Gate permission="codes.write">
              <Button onClick={() => setCreating(true)}>Create one</Button>
            </Gate>
          }
        >
          Print one code on a poster or hand it to a team: everyone enrolls their own device with it.
        </EmptyState>
      ) : (
        <Table.ScrollContainer minWidth={900}>
          <Table striped highlightOnHover verticalSpacing="sm" data-testid="codes-table">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th>Uses</Table.Th>
                <Table.Th>Expires</Table.Th>
                <Table.Th>Domains</Table.Th>
                <Table.Th>Fleet</Table.Th>
                <Table.Th>Approval</Table.Th>
                <Table.Th />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {codes.data.map((code) => (
                <Table.Tr key={code.id} data-testid="code-row" data-code-id={code.id}>
                  <Table.Td>
                    <Anchor component={Link} to={`/codes/${code.id}`} fw={500}>
                      {code.name}
                    </Anchor>
                  </Table.Td>
                  <Table.Td style={{ minWidth: 110 }}>
                    <CodeStatusBadge code={code} />
                  </Table.Td>
                  <Table.Td data-testid="code-uses" style={{ whiteSpace: 'nowrap' }}>
                    {usesText(code)}
                    {code.refused_attempts ? (
                      <Text span size="xs" c="red" ml={6}>
                        {code.refused_attempts} refused
                      </Text>
                    ) : null}
                  </Table.Td>
                  <Table.Td>
                    {code.expires_at ? (
                      <RelativeTime iso={code.expires_at} />
                    ) : (
                      <Text span c="dimmed">
                        never
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    {code.domains.length ? (
                      code.domains.join(', ')
                    ) : (
                      <Text span c="dimmed">
                        any
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>{code.fleet}</Table.Td>
                  <Table.Td style={{ whiteSpace: 'nowrap' }}>
                    {code.approval === 'manual' ? 'Manual' : 'Automatic'}
                    {code.pending_approval ? (
                      <Badge color="orange" variant="light" ml={6} component={Link} to="/approvals" style={{ cursor: 'pointer' }}>
                        {code.pending_approval} waiting
                      </Badge>
                    ) : null}
                  </Table.Td>
                  <Table.Td>
                    <CodeActions code={code} />
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
