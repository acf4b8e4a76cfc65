import { Button, Group, Table, Text, TextInput } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { IconFilterOff } from '@tabler/icons-react';
import { useState } from 'react';
import { admin } from '../api/client.ts';
import { useFeed } from '../api/queries.ts';
import type { AuditQuery } from '../../src-shared/contract/index.ts';
import { EmptyState, PageHeader, QueryView, RelativeTime } from '../components/common.tsx';

/** Who did what, from where, when: the audit trail, newest first, filtered by actor, action, object and time. */
export function AuditPage() {
  const [actor, setActor] = useState('');
  const [action, setAction] = useState('');
  const [since, setSince] = useState('');
  const filter: AuditQuery = {
    ...(actor.trim() ? { actor: actor.trim() } : {}),
    ...(action.trim() ? { action: action.trim() } : {}),
    ...(/^\d{4}-\d{2}-\d{2}$/.test(since) ? { since } : {}),
    limit: 500,
  };
  // Live: every change records an event, and the event stream keeps the feed current; the newest
  // event's id in the key fetches the trail again when something happens (no polling).
  const feed = useFeed();
  const newest = feed.data?.[0]?.id ?? 0;
  const entries = useQuery({
    queryKey: ['audit', filter, newest],
    queryFn: async ({ signal }) => (await admin.audit(filter, signal)).items,
    placeholderData: keepPreviousData,
  });
  const filtered = actor !== '' || action !== '' || since !== '';
  return (
    <>
      <PageHeader
        title="Audit"
        description="Every change made through the console, the CLI or the admin API: who (and with which API token), from where, what, on which object. Sign-ins too."
      />
      <Group gap="sm" mb="md" align="flex-end" wrap="wrap">
        <TextInput
          label="Actor"
          placeholder="name, email or token name"
          value={actor}
          onChange={(e) => setActor(e.currentTarget.value)}
          data-testid="audit-actor"
        />
        <TextInput
          label="Action"
          placeholder="agent. or invitation.revoked"
          value={action}
          onChange={(e) => setAction(e.currentTarget.value)}
          data-testid="audit-action"
        />
        <TextInput
          label="Since"
          type="date"
          value={since}
          onChange={(e) => setSince(e.currentTarget.value)}
          data-testid="audit-since"
        />
        {filtered ? (
          <Button
            variant="subtle"
            leftSection={<IconFilterOff size={16} />}
            onClick={() => {
              setActor('');
              setAction('');
              setSince('');
            }}
          >
            Clear filters
          </Button>
        ) : null}
      </Group>
      <QueryView query={entries}>
        {(items) =>
          items.length === 0 ? (
            <EmptyState title={filtered ? 'Nothing matches these filters' : 'Nothing recorded yet'} />
          ) : (
            <Table.ScrollContainer minWidth={900}>
              <Table verticalSpacing="xs" striped data-testid="audit-table">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>When</Table.Th>
                    <Table.Th>Who</Table.Th>
                    <Table.Th>From</Table.Th>
                    <Table.Th>Action</Table.Th>
                    <Table.Th>Object</Table.Th>
                    <Table.Th>What happened</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {items.map((e) => (
                    <Table.Tr key={e.id}>
                      <Table.Td>
                        <RelativeTime iso={e.at} />
                      </Table.Td>
                      <Table.Td>
                        <Text size="sm">{e.actor}</Text>
                        {e.token_name || e.role ? (
                          <Text size="xs" c="dimmed">
                            {[e.token_name ? `token "${e.token_name}"` : null, e.role].filter(Boolean).join(', ')}
                          </Text>
                        ) : null}
                      </Table.Td>
                      <Table.Td>
                        <Text size="sm" ff="monospace">
                          {e.address ?? '—'}
                        </Text>
                      </Table.Td>
                      <Table.Td>
                        <Text size="sm" ff="monospace">
                          {e.action}
                        </Text>
                      </Table.Td>
                      <Table.Td>
                        <Text size="sm">
                          {e.target_kind ? `${e.target_kind}${e.target_id ? ` #${e.target_id}` : ''}` : '—'}
                          {e.target_name ? ` ${e.target_name}` : ''}
                        </Text>
                      </Table.Td>
                      <Table.Td>
                        <Text size="sm">{e.message}</Text>
                      </Table.Td>
                    </Table.Tr>
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
