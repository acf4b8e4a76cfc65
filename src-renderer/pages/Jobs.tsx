import { Anchor, Badge, Card, Group, Progress, SegmentedControl, Table, Text, Tooltip } from '@mantine/core';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useRef, useState } from 'react';
import { useJob, useJobs } from '../api/jobs.ts';
import { EmptyState, PageHeader, QueryView, RelativeTime } from '../components/common.tsx';
import { ExportMenu } from '../components/export-menu.tsx';
import { Link, navigate } from '../lib/router.tsx';
import { JOB_ACTION_LABELS, JOB_RESULT_STATUSES, type JobResultStatus, type JobState } from '../../src-shared/contract/bulk.ts';
import type { Job, JobResult } from '../../src-shared/contract/index.ts';

// Bulk jobs (issue 25): the history of actions on many devices, and one job's progress (live, from
// its job.* events) with each device's result.

const devices = (n: number) => `${n.toLocaleString('en-US')} device${n === 1 ? '' : 's'}`;

/** Each result's colour and what it means, in the order the bar shows them. */
const STATUS: Record<JobResultStatus, { color: string; hint: string }> = {
  answered: { color: 'teal', hint: 'The device answered (its reply, inventory, position or confirmation came)' },
  done: { color: 'teal.7', hint: 'Done on the server (moved, deleted, policy set)' },
  sent: { color: 'blue', hint: 'Sent to the connected device; no answer yet' },
  offline: { color: 'gray.5', hint: 'Not connected: a lock, unlock, wipe or unenroll waits for it; a ping is not sent' },
  refused: { color: 'orange', hint: 'Not done, with the reason' },
  failed: { color: 'red', hint: 'An error while doing it' },
};
const ORDER: JobResultStatus[] = ['answered', 'done', 'sent', 'offline', 'refused', 'failed'];

const STATE: Record<JobState, { color: string; label: string }> = {
  running: { color: 'blue', label: 'Running' },
  done: { color: 'teal', label: 'Done' },
  failed: { color: 'red', label: 'Failed' },
  interrupted: { color: 'orange', label: 'Interrupted' },
};

function StateBadge({ state }: { state: JobState }) {
  return (
    <Badge color={STATE[state].color} variant="light" size="sm" data-testid="job-state">
      {STATE[state].label}
    </Badge>
  );
}

/** The job's devices by result: one bar, a section per status. */
function JobProgress({ job, size = 'sm' }: { job: Job; size?: 'sm' | 'xl' }) {
  const total = Math.max(job.total, 1);
  return (
    <Progress.Root size={size} aria-label={`${job.processed} of ${job.total} devices processed`} data-testid="job-progress">
      {ORDER.filter((status) => job.counts[status] > 0).map((status) => (
        <Tooltip key={status} label={`${job.counts[status].toLocaleString('en-US')} ${status}`}>
          <Progress.Section
            value={(job.counts[status] / total) * 100}
            color={STATUS[status].color}
            aria-label={`${job.counts[status].toLocaleString('en-US')} of ${devices(job.total)} ${status}`}
          />
        </Tooltip>
      ))}
    </Progress.Root>
  );
}

const tally = (job: Job) =>
  JOB_RESULT_STATUSES.filter((status) => job.counts[status] > 0)
    .map((status) => `${job.counts[status].toLocaleString('en-US')} ${status}`)
    .join(' · ') || 'nothing yet';

/** Every bulk job, newest first. */
export function JobsPage() {
  const jobs = useJobs();
  return (
    <>
      <PageHeader
        title="Jobs"
        description="Actions on many devices at once (select devices on the Devices page), and how far each went. Updated live."
        actions={
          <>
            <ExportMenu path="/api/jobs/export" what="jobs" filtered={false} testId="jobs-export" label="Export jobs" />
            <ExportMenu
              path="/api/job-results/export"
              what="results"
              filtered={false}
              testId="job-results-export"
              label="Export results"
            />
          </>
        }
      />
      <Card withBorder radius="md" p="md">
        <QueryView query={jobs}>
          {(items) =>
            items.length === 0 ? (
              <EmptyState title="No job yet">
                On the Devices page, select devices (or all those matching a filter) and choose an action: it runs here.
              </EmptyState>
            ) : (
              <Table highlightOnHover verticalSpacing="xs" data-testid="jobs-table">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Job</Table.Th>
                    <Table.Th>Devices</Table.Th>
                    <Table.Th w={220}>Progress</Table.Th>
                    <Table.Th>By</Table.Th>
                    <Table.Th>Started</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {items.map((job) => (
                    <Table.Tr
                      key={job.id}
                      style={{ cursor: 'pointer' }}
                      onClick={() => navigate(`/jobs/${job.id}`)}
                      data-testid="job-row"
                    >
                      <Table.Td>
                        <Anchor component={Link} to={`/jobs/${job.id}`} size="sm" fw={500} onClick={(e) => e.stopPropagation()}>
                          #{job.id} {JOB_ACTION_LABELS[job.action]}
                        </Anchor>
                        <Text size="xs" c="dimmed" truncate maw={320} title={job.selection}>
                          {job.selection}
                        </Text>
                      </Table.Td>
                      <Table.Td>
                        <Text size="sm">{devices(job.total)}</Text>
                      </Table.Td>
                      <Table.Td>
                        <Group gap={6} wrap="nowrap" mb={4}>
                          <StateBadge state={job.state} />
                          <Text size="xs" c="dimmed" truncate>
                            {tally(job)}
                          </Text>
                        </Group>
                        <JobProgress job={job} />
                      </Table.Td>
                      <Table.Td>
                        <Text size="sm">{job.actor ?? '—'}</Text>
                      </Table.Td>
                      <Table.Td>
                        <Text size="sm">
                          <RelativeTime iso={job.created_at} />
                        </Text>
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            )
          }
        </QueryView>
      </Card>
    </>
  );
}

const RESULT_ROW = 40;

/** One job: its progress, live, and each device's result (filtered by status), virtualised for thousands. */
export function JobPage({ id }: { id: number }) {
  const [status, setStatus] = useState<JobResultStatus | 'all'>('all');
  const job = useJob(id, status === 'all' ? null : status);
  return (
    <QueryView query={job}>
      {(detail) => (
        <>
          <PageHeader
            title={`Job #${detail.id}: ${JOB_ACTION_LABELS[detail.action]} ${devices(detail.total)}`}
            description={
              <>
                {detail.selection}
                {detail.params ? ` · ${paramsText(detail.params)}` : ''} · started <RelativeTime iso={detail.created_at} />
                {detail.actor ? ` by ${detail.actor}` : ''}
              </>
            }
            actions={
              <>
                <Anchor component={Link} to="/jobs" size="sm">
                  All jobs
                </Anchor>
                {/* The results shown: this job's, of the status chosen below. */}
                <ExportMenu
                  path="/api/job-results/export"
                  what="results"
                  filtered={status !== 'all'}
                  params={{ job_id: detail.id, status: status === 'all' ? null : status }}
                  testId="job-export"
                  label="Export results"
                />
              </>
            }
          />
          <Card withBorder radius="md" p="md" mb="md">
            <Group justify="space-between" mb="xs">
              <Group gap="xs">
                <StateBadge state={detail.state} />
                <Text size="sm" fw={500} data-testid="job-processed">
                  {detail.processed.toLocaleString('en-US')} of {devices(detail.total)} processed
                </Text>
              </Group>
              <Text size="sm" c="dimmed" data-testid="job-tally">
                {tally(detail)}
              </Text>
            </Group>
            <JobProgress job={detail} size="xl" />
            {detail.error ? (
              <Text size="sm" c="red" mt="xs">
                {detail.error}
              </Text>
            ) : null}
            <Text size="xs" c="dimmed" mt="xs">
              Answers are counted as they come for 15 minutes (a ping&apos;s reply, an inventory, a position, an unenrollment
              confirmed). An offline device gets a lock, unlock, wipe or unenroll when it connects.
            </Text>
          </Card>
          <Card withBorder radius="md" p="md">
            <SegmentedControl
              size="xs"
              mb="sm"
              value={status}
              onChange={(value) => setStatus(value as JobResultStatus | 'all')}
              data={[
                { value: 'all', label: `All ${detail.processed.toLocaleString('en-US')}` },
                ...ORDER.filter((s) => detail.counts[s] > 0 || s === status).map((s) => ({
                  value: s,
                  label: `${s[0]!.toUpperCase()}${s.slice(1)} ${detail.counts[s].toLocaleString('en-US')}`,
                })),
              ]}
              aria-label="Show the results"
            />
            <Results results={detail.results} />
          </Card>
        </>
      )}
    </QueryView>
  );
}

function Results({ results }: { results: JobResult[] }) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({
    count: results.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => RESULT_ROW,
    overscan: 10,
  });
  if (results.length === 0) return <EmptyState title="No device here yet">The results appear as the job acts.</EmptyState>;
  return (
    <div
      ref={scrollRef}
      style={{ height: Math.min(520, results.length * RESULT_ROW + 2), overflow: 'auto', position: 'relative' }}
      data-testid="job-results"
      role="table"
      aria-rowcount={results.length}
    >
      <div style={{ height: virtualizer.getTotalSize(), position: 'relative' }}>
        {virtualizer.getVirtualItems().map((item) => {
          const result = results[item.index]!;
          return (
            <div
              key={result.agent_id}
              role="row"
              aria-rowindex={item.index + 1}
              data-testid="job-result"
              data-agent-id={result.agent_id}
              style={{
                position: 'absolute',
                top: 0,
                left: 0,
                right: 0,
                height: RESULT_ROW,
                transform: `translateY(${item.start}px)`,
                display: 'flex',
                alignItems: 'center',
                gap: 12,
                padding: '0 8px',
                borderBottom: '1px solid var(--mantine-color-default-border)',
              }}
            >
              <Anchor
                role="cell"
                component={Link}
                to={`/devices?agent=${result.agent_id}`}
                size="sm"
                fw={500}
                w={200}
                truncate
                title={result.name}
              >
                {result.name}
              </Anchor>
              <span role="cell" style={{ width: 100 }}>
                <Tooltip label={STATUS[result.status].hint}>
                  <Badge color={STATUS[result.status].color} variant="light" size="sm" data-testid="job-result-status">
                    {result.status}
                  </Badge>
                </Tooltip>
              </span>
              <Text role="cell" size="sm" c="dimmed" style={{ flex: 1, minWidth: 0 }} truncate title={result.reason ?? undefined}>
                {result.reason ?? ''}
              </Text>
              <Text role="cell" size="xs" c="dimmed" w={150}>
                {result.answered_at ? (
                  <>
                    answered <RelativeTime iso={result.answered_at} />
                  </>
                ) : (
                  <RelativeTime iso={result.at} />
                )}
              </Text>
            </div>
          );
        })}
      </div>
    </div>
  );
}

function paramsText(params: Record<string, unknown>): string {
  if (typeof params.fleet === 'string') return `to fleet "${params.fleet}"`;
  if (typeof params.policy === 'string') return `${params.policy} = ${JSON.stringify(params.value)}`;
  return Object.entries(params)
    .map(([key, value]) => `${key} ${JSON.stringify(value)}`)
    .join(', ');
}
