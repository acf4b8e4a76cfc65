import { Button, Code, Group, Menu, Table, Text, TextInput } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { IconDownload, IconFilterOff } from '@tabler/icons-react';
import { useState } from 'react';
import { admin } from '../api/client.ts';
import { useFeed } from '../api/queries.ts';
import type { AuditEntry, AuditExportFormat, AuditQuery } from '../../src-shared/contract/index.ts';
import { EmptyState, PageHeader, QueryView, RelativeTime } from '../components/common.tsx';

/** A date input's value (`2026-05-01`) as the start of that day, or its end (`until` is exclusive). */
function dayBound(value: string, end: boolean): string | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return undefined;
  const day = new Date(`${value}T00:00:00`);
  if (Number.isNaN(day.getTime())) return undefined;
  if (end) day.setDate(day.getDate() + 1);
  return day.toISOString();
}

/** The export's address for the filters in force: the same filters, every matching entry. */
export function exportUrl(filter: Omit<AuditQuery, 'limit'>, format: AuditExportFormat): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(filter)) if (value !== undefined) params.set(key, String(value));
  params.set('format', format);
  return `/api/audit/export?${params.toString()}`;
}

/** A changed field's value as the Changes column shows it: a text in quotes as it is (no JSON backslashes), others as JSON. */
export const show = (value: unknown) =>
  value === null || value === undefined ? '—' : typeof value === 'string' ? `"${value}"` : JSON.stringify(value);

function Changes({ changes }: { changes: AuditEntry['changes'] }) {
  if (!changes) return null;
  return (
    <Text size="xs" c="dimmed" component="div" data-testid="audit-changes">
      {Object.entries(changes).map(([field, change]) => (
        <div key={field}>
          <Code>{field}</Code> {show(change.before)} → {show(change.after)}
        </div>
      ))}
    </Text>
  );
}

/** Who did what, from where, when: the audit trail, newest first, filtered by actor, action, object and time; live; exported as CSV or JSON lines. */
export function AuditPage() {
  const [actor, setActor] = useState('');
  const [action, setAction] = useState('');
  const [target, setTarget] = useState('');
  const [since, setSince] = useState('');
  const [until, setUntil] = useState('');
  const sinceAt = dayBound(since, false);
  const untilAt = dayBound(until, true);
  const filter: Omit<AuditQuery, 'limit'> = {
    ...(actor.trim() ? { actor: actor.trim() } : {}),
    ...(action.trim() ? { action: action.trim() } : {}),
    ...(target.trim() ? { target_name: target.trim() } : {}),
    ...(sinceAt ? { since: sinceAt } : {}),
    ...(untilAt ? { until: untilAt } : {}),
  };
  // Live: every change records an event, and the event stream keeps the feed current; the newest
  // event's id in the key fetches the trail again when something happens (no polling).
  const feed = useFeed();
  const newest = feed.data?.[0]?.id ?? 0;
  const entries = useQuery({
    queryKey: ['audit', filter, newest],
    queryFn: async ({ signal }) => (await admin.audit.list({ query: { ...filter, limit: 500 }, signal })).items,
    placeholderData: keepPreviousData,
  });
  const filtered = actor !== '' || action !== '' || target !== '' || since !== '' || until !== '';
  return (
    <>
      <PageHeader
        title="Audit"
        description="Every change made through the console, the CLI or the admin API: who (and with which API token), from where, what, on which object, and the fields it changed. Sign-ins too."
        actions={
          <Menu position="bottom-end">
            <Menu.Target>
              <Button variant="default" leftSection={<IconDownload size={16} />} data-testid="audit-export">
                Download
              </Button>
            </Menu.Target>
            <Menu.Dropdown>
              <Menu.Label>{filtered ? 'The entries these filters match' : 'The whole trail'}</Menu.Label>
              <Menu.Item component="a" href={exportUrl(filter, 'csv')} download data-testid="audit-export-csv">
                CSV (spreadsheets)
              </Menu.Item>
              <Menu.Item component="a" href={exportUrl(filter, 'jsonl')} download data-testid="audit-export-jsonl">
                JSON lines
              </Menu.Item>
            </Menu.Dropdown>
          </Menu>
        }
      />
      <Group gap="sm" mb="md" align="flex-end" wrap="wrap">
        <TextInput
          label="Actor"
          placeholder="name, email, token"
          value={actor}
          onChange={(e) => setActor(e.currentTarget.value)}
          data-testid="audit-actor"
        />
        <TextInput
          label="Action"
          placeholder="e.g. agent.command"
          value={action}
          onChange={(e) => setAction(e.currentTarget.value)}
          data-testid="audit-action"
        />
        <TextInput
          label="Object"
          placeholder="device, email, fleet …"
          value={target}
          onChange={(e) => setTarget(e.currentTarget.value)}
          data-testid="audit-target"
        />
        <TextInput
          label="From"
          type="date"
          value={since}
          onChange={(e) => setSince(e.currentTarget.value)}
          data-testid="audit-since"
        />
        <TextInput
          label="To"
          type="date"
          value={until}
          onChange={(e) => setUntil(e.currentTarget.value)}
          data-testid="audit-until"
        />
        {filtered ? (
          <Button
            variant="subtle"
            leftSection={<IconFilterOff size={16} />}
            onClick={() => {
              setActor('');
              setAction('');
              setTarget('');
              setSince('');
              setUntil('');
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
                        <Changes changes={e.changes} />
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
