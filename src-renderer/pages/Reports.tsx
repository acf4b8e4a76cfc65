import { BarChart, LineChart } from '@mantine/charts';
import { Button, Card, Group, SegmentedControl, Select, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { IconFileSpreadsheet, IconPhoto } from '@tabler/icons-react';
import { useRef, useState } from 'react';
import { admin } from '../api/client.ts';
import { keys, useFleets } from '../api/queries.ts';
import type { Report, ReportName } from '../../src-shared/contract/index.ts';
import { REPORT_RANGES } from '../../src-shared/contract/report-names.ts';
import { EmptyState, notifyError, PageHeader, QueryView } from '../components/common.tsx';
import { chartPng, chartRows, reportCsv, reportFileName, saveBlob } from '../lib/report-export.ts';

/** Colours by series key; OS versions and models take the palette in order. */
const COLORS: Record<string, string> = {
  enrolled: 'blue.6',
  peak: 'teal.6',
  latest: 'blue.5',
  devices: 'gray.5',
  done: 'teal.6',
  pending: 'yellow.6',
  failed: 'red.6',
  none: 'gray.5',
};
const PALETTE = ['blue.6', 'teal.6', 'grape.6', 'orange.6', 'cyan.6', 'pink.6', 'lime.7', 'gray.5'];

/** A Mantine colour name (`blue.6`) as the page draws it, for the PNG's legend. */
function cssColor(name: string): string {
  const [hue, shade] = name.split('.');
  const value = getComputedStyle(document.documentElement).getPropertyValue(`--mantine-color-${hue}-${shade}`).trim();
  return value || '#888888';
}

const dayLabel = (day: string) =>
  new Date(`${day}T00:00:00Z`).toLocaleDateString(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });

function seriesOf(report: Report) {
  return report.series.map((series, index) => ({
    name: series.key,
    label: series.label,
    color:
      COLORS[series.key] && report.report !== 'os' && report.report !== 'models'
        ? COLORS[series.key]!
        : PALETTE[index % PALETTE.length]!,
  }));
}

/** Why a report has nothing to draw yet, and when it will; null when it has something. */
function emptyReason(report: Report): { title: string; text: string } | null {
  const values = report.points.flatMap((point) => Object.values(point.values));
  const minutes = Math.max(1, Math.round(report.sample_every_s / 60));
  const sampled = values.some((value) => value !== null);
  const something = values.some((value) => value !== null && value > 0);
  const sampling = `The server samples its devices every ${minutes} minute${minutes === 1 ? '' : 's'} while it runs`;
  switch (report.report) {
    case 'enrollments':
      return something
        ? null
        : {
            title: `No device enrolled in these ${report.days} days`,
            text: 'Each device is counted on the day it enrolls, as it enrolls: invite someone or print an enrollment code, and the first bar appears the moment a device enrolls.',
          };
    case 'deployments':
      return something
        ? null
        : {
            title: `No deployment finished in these ${report.days} days`,
            text: 'Deploy an app or a file (Files & packages → Deploy to…): each device that reports it done or failed is counted on that day, as it reports.',
          };
    case 'online':
    case 'compliance':
      if (!sampled)
        return {
          title: 'No sample yet',
          text: `${sampling}; the first one appears here within ${minutes} minute${minutes === 1 ? '' : 's'} of the server starting.`,
        };
      return something ? null : { title: 'No device enrolled yet', text: `${sampling}: the chart fills once devices enroll.` };
    case 'os':
    case 'models':
      return (report.current?.length ?? 0) > 0 || something
        ? null
        : {
            title: 'No inventory yet',
            text: `Devices send their model and OS version in their inventory (at enrollment, and when asked). ${sampling}: each day keeps its last sample.`,
          };
  }
}

function ReportChart({ report, rows }: { report: Report; rows: Record<string, string | number | null>[] }) {
  const series = seriesOf(report);
  const common = {
    h: 260,
    data: rows,
    dataKey: 'day',
    series,
    xAxisProps: { tickFormatter: dayLabel, minTickGap: 16 },
    yAxisProps: { allowDecimals: false },
    tooltipAnimationDuration: 0,
  };
  if (report.report === 'online')
    return <LineChart {...common} curveType="linear" connectNulls={false} withDots={report.days <= 30} />;
  return <BarChart {...common} type="stacked" barChartProps={{ barCategoryGap: report.days > 30 ? 1 : '20%' }} />;
}

/** The chart's lines and their colours, under it (Mantine's own legend overlaps what follows when it wraps). */
function Legend({ report }: { report: Report }) {
  return (
    <Group gap="md" justify="center" data-testid={`report-${report.report}-legend`}>
      {seriesOf(report).map((series) => (
        <Group key={series.name} gap={6} wrap="nowrap">
          <span
            style={{
              width: 10,
              height: 10,
              borderRadius: 10,
              background: `var(--mantine-color-${series.color.replace('.', '-')})`,
            }}
          />
          <Text size="xs">{series.label}</Text>
        </Group>
      ))}
    </Group>
  );
}

/** One report: its chart (or why it is empty), the distribution now (OS versions, models), and its downloads. */
function ReportCard({
  name,
  days,
  fleetId,
  fleetName,
}: {
  name: ReportName;
  days: number;
  fleetId: number | null;
  fleetName?: string;
}) {
  const chart = useRef<HTMLDivElement>(null);
  const [saving, setSaving] = useState(false);
  const query = useQuery({
    queryKey: keys.report(name, days, fleetId),
    queryFn: ({ signal }) =>
      admin.reports.get({
        params: { report: name },
        query: { days, ...(fleetId === null ? {} : { fleet_id: fleetId }) },
        signal,
      }),
    placeholderData: keepPreviousData,
    refetchInterval: 60_000,
  });
  const report = query.data;
  const empty = report ? emptyReason(report) : null;
  const savePng = async () => {
    if (!report || !chart.current) return;
    setSaving(true);
    try {
      const legend = seriesOf(report).map((series) => ({ label: series.label, color: cssColor(series.color) }));
      const scope = fleetName ? ` — ${fleetName}` : '';
      saveBlob(
        await chartPng(chart.current, `${report.title}${scope}, ${report.from} to ${report.to} (UTC)`, legend),
        reportFileName(report, 'png', fleetName),
      );
    } catch (error) {
      notifyError('The PNG could not be made', error);
    } finally {
      setSaving(false);
    }
  };
  return (
    <Card withBorder radius="md" p="md" data-testid={`report-${name}`}>
      <Group justify="space-between" align="center" wrap="nowrap" gap="xs">
        <Title order={4}>{report?.title ?? name}</Title>
        <Group gap={6} wrap="nowrap">
          <Button
            size="xs"
            variant="default"
            leftSection={<IconPhoto size={14} />}
            disabled={!report || empty !== null}
            loading={saving}
            onClick={() => void savePng()}
            data-testid={`report-${name}-png`}
          >
            Download PNG
          </Button>
          <Button
            size="xs"
            variant="default"
            leftSection={<IconFileSpreadsheet size={14} />}
            disabled={!report}
            onClick={() =>
              report && saveBlob(new Blob([reportCsv(report)], { type: 'text/csv' }), reportFileName(report, 'csv', fleetName))
            }
            data-testid={`report-${name}-csv`}
          >
            Download CSV
          </Button>
        </Group>
      </Group>
      <Text c="dimmed" size="sm" mt={4} mb="sm">
        {report?.description}
      </Text>
      <QueryView query={query}>
        {(data) =>
          empty ? (
            <EmptyState title={empty.title}>{empty.text}</EmptyState>
          ) : (
            <Stack gap="sm">
              <div ref={chart} data-testid={`report-${name}-chart`}>
                <ReportChart report={data} rows={chartRows(data)} />
              </div>
              <Legend report={data} />
              {data.current && data.current.length > 0 ? (
                <Table
                  withRowBorders={false}
                  verticalSpacing={2}
                  aria-label={`${data.title} now`}
                  data-testid={`report-${name}-now`}
                >
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Now</Table.Th>
                      <Table.Th ta="right">Devices</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {data.current.slice(0, 6).map((share) => (
                      <Table.Tr key={share.key}>
                        <Table.Td>{share.key}</Table.Td>
                        <Table.Td ta="right">{share.devices.toLocaleString()}</Table.Td>
                      </Table.Tr>
                    ))}
                    {data.current.length > 6 ? (
                      <Table.Tr>
                        <Table.Td c="dimmed">{data.current.length - 6} more</Table.Td>
                        <Table.Td ta="right" c="dimmed">
                          {data.current
                            .slice(6)
                            .reduce((sum, share) => sum + share.devices, 0)
                            .toLocaleString()}
                        </Table.Td>
                      </Table.Tr>
                    ) : null}
                  </Table.Tbody>
                </Table>
              ) : null}
            </Stack>
          )
        }
      </QueryView>
    </Card>
  );
}

const REPORTS: ReportName[] = ['enrollments', 'online', 'compliance', 'deployments', 'os', 'models'];

/** The fleet's trends: six reports over 7, 30 or 90 days, for every fleet or one; each chart saved as PNG and its data as CSV. */
export function ReportsPage() {
  const [days, setDays] = useState<number>(30);
  const [fleet, setFleet] = useState<string | null>(null);
  const fleets = useFleets();
  const fleetId = fleet === null ? null : Number(fleet);
  const fleetName = fleets.data?.find((row) => row.id === fleetId)?.name;
  return (
    <>
      <PageHeader
        title="Reports"
        description="How the fleet changes day by day: enrollments, devices online, compliance, deployments, OS versions and models. Days are UTC days; the figures are kept as the server runs."
        actions={
          <Group gap="sm">
            <Select
              aria-label="Fleet"
              placeholder="All fleets"
              clearable
              data={(fleets.data ?? []).map((row) => ({ value: String(row.id), label: row.name }))}
              value={fleet}
              onChange={setFleet}
              w={200}
              data-testid="reports-fleet"
            />
            <SegmentedControl
              aria-label="Days"
              value={String(days)}
              onChange={(value) => setDays(Number(value))}
              data={REPORT_RANGES.map((range) => ({ value: String(range), label: `${range} days` }))}
              data-testid="reports-days"
            />
          </Group>
        }
      />
      <SimpleGrid cols={{ base: 1, lg: 2 }} spacing="md">
        {REPORTS.map((name) => (
          <ReportCard key={name} name={name} days={days} fleetId={fleetId} {...(fleetName ? { fleetName } : {})} />
        ))}
      </SimpleGrid>
    </>
  );
}
