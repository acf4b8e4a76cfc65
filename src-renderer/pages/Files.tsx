import { ActionIcon, Badge, Button, Card, Group, Progress, Stack, Table, Tabs, Text, Tooltip } from '@mantine/core';
import { Dropzone } from '@mantine/dropzone';
import { useQueryClient } from '@tanstack/react-query';
import { IconFile, IconPackage, IconRocket, IconTrash, IconUpload, IconX } from '@tabler/icons-react';
import { useState } from 'react';
import { errorMessage } from '../api/client.ts';
import { keys, useDeleteStored, useStored } from '../api/queries.ts';
import type { StoredItem, StoredKind } from '../../src-shared/contract/index.ts';
import { navigate, useLocation } from '../app/router.tsx';
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
import { formatBytes, shortHash } from '../lib/format.ts';
import { uploadFile, type UploadHandle } from '../lib/upload.ts';
import { DeployModal, PackageInfoModal } from '../features/deployments.tsx';

interface Upload {
  key: string;
  name: string;
  size: number;
  progress: number;
  state: 'uploading' | 'done' | 'failed';
  error?: string;
  handle?: UploadHandle;
}

function UploadList({ uploads, onDismiss }: { uploads: Upload[]; onDismiss: (key: string) => void }) {
  if (uploads.length === 0) return null;
  return (
    <Stack gap="xs" mt="md" data-testid="uploads">
      {uploads.map((upload) => (
        <Group key={upload.key} gap="sm" wrap="nowrap">
          <div style={{ flex: 1, minWidth: 0 }}>
            <Group justify="space-between" gap="xs" wrap="nowrap">
              <Text size="sm" truncate>
                {upload.name}
              </Text>
              <Text size="xs" c={upload.state === 'failed' ? 'red' : 'dimmed'} style={{ flexShrink: 0 }}>
                {upload.state === 'failed'
                  ? upload.error
                  : upload.state === 'done'
                    ? `Uploaded · ${formatBytes(upload.size)}`
                    : `${Math.round(upload.progress * 100)}% of ${formatBytes(upload.size)}`}
              </Text>
            </Group>
            <Progress
              value={upload.progress * 100}
              color={upload.state === 'failed' ? 'red' : upload.state === 'done' ? 'teal' : undefined}
              animated={upload.state === 'uploading'}
              size="sm"
              mt={4}
              aria-label={`Upload of ${upload.name}`}
            />
          </div>
          <Tooltip label={upload.state === 'uploading' ? 'Cancel' : 'Dismiss'}>
            <ActionIcon
              variant="subtle"
              color="gray"
              aria-label={upload.state === 'uploading' ? `Cancel upload of ${upload.name}` : `Dismiss ${upload.name}`}
              onClick={() => (upload.state === 'uploading' ? upload.handle?.abort() : onDismiss(upload.key))}
            >
              <IconX size={16} />
            </ActionIcon>
          </Tooltip>
        </Group>
      ))}
    </Stack>
  );
}

function StoredTable({ kind, items }: { kind: StoredKind; items: StoredItem[] }) {
  const remove = useDeleteStored(kind);
  const [deploying, setDeploying] = useState<StoredItem | null>(null);
  const [describing, setDescribing] = useState<StoredItem | null>(null);
  if (items.length === 0) {
    return (
      <EmptyState title={kind === 'file' ? 'No files yet' : 'No packages yet'}>
        Drop {kind === 'file' ? 'files' : 'app packages (APK, IPA…)'} above: enrolled devices download them from this server, and
        a download that breaks off resumes where it stopped. Deploy one to a fleet to have its devices fetch it.
      </EmptyState>
    );
  }
  return (
    <Table.ScrollContainer minWidth={700}>
      <Table verticalSpacing="sm" highlightOnHover data-testid={`${kind}-table`}>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Name</Table.Th>
            <Table.Th ta="right">Size</Table.Th>
            <Table.Th>SHA-256</Table.Th>
            <Table.Th>Type</Table.Th>
            <Table.Th>Added</Table.Th>
            <Table.Th w={150} />
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {items.map((item) => (
            <Table.Tr key={item.id} data-item-name={item.name}>
              <Table.Td>
                <Group gap="sm" wrap="nowrap">
                  {item.icon ? <img src={item.icon} alt="" width={32} height={32} style={{ borderRadius: 6 }} /> : null}
                  <div>
                    <Text size="sm" fw={500}>
                      {item.label ? `${item.label} · ${item.name}` : item.name}
                    </Text>
                    <Text size="xs" c="dimmed" data-testid="package-info">
                      <Tooltip label={`The CLI's name for it: mdm-console deploy ${kind}:${item.id} …`}>
                        <span>
                          {kind === 'file' ? 'File' : 'Package'} {item.id}
                        </span>
                      </Tooltip>
                      {kind === 'package' ? (item.package_name ? ` · ${item.package_name}` : ' · no package name') : ''}
                      {item.version_name ? ` · version ${item.version_name}` : ''}
                      {item.version_code !== null && item.version_code !== undefined ? ` (code ${item.version_code})` : ''}
                    </Text>
                  </div>
                </Group>
              </Table.Td>
              <Table.Td ta="right">
                <Text size="sm">{formatBytes(item.size)}</Text>
              </Table.Td>
              <Table.Td>
                <Group gap={2} wrap="nowrap">
                  <Tooltip label={item.sha256} maw={320} multiline>
                    <Text className="mono" size="sm">
                      {shortHash(item.sha256, 16)}
                    </Text>
                  </Tooltip>
                  <CopyIcon value={item.sha256} label="Copy SHA-256" />
                </Group>
              </Table.Td>
              <Table.Td>
                <Badge variant="light" color="gray" tt="none">
                  {item.mime_type}
                </Badge>
              </Table.Td>
              <Table.Td>
                <Text size="sm">
                  <RelativeTime iso={item.created_at} />
                </Text>
              </Table.Td>
              <Table.Td>
                <Group gap={4} wrap="nowrap" justify="flex-end">
                  {kind === 'package' && !item.package_name ? (
                    <Button
                      size="xs"
                      variant="default"
                      onClick={() => setDescribing(item)}
                      aria-label={`Set the package name of ${item.name}`}
                    >
                      Set package name…
                    </Button>
                  ) : null}
                  <Tooltip
                    label={
                      kind === 'package' && !item.package_name
                        ? 'Set its package name first'
                        : 'Publish it to a fleet or a device'
                    }
                  >
                    <Button
                      size="xs"
                      variant="light"
                      leftSection={<IconRocket size={14} />}
                      disabled={kind === 'package' && !item.package_name}
                      onClick={() => setDeploying(item)}
                      aria-label={`Deploy ${item.name}`}
                    >
                      Deploy to…
                    </Button>
                  </Tooltip>
                  <Tooltip label="Delete">
                    <ActionIcon
                      variant="subtle"
                      color="red"
                      aria-label={`Delete ${item.name}`}
                      loading={remove.isPending && remove.variables === item.id}
                      onClick={async () => {
                        const ok = await confirmAction({
                          title: `Delete ${item.name}?`,
                          message: 'Devices can no longer download it.',
                          confirmLabel: 'Delete',
                        });
                        if (ok)
                          remove.mutate(item.id, {
                            onSuccess: () => notifySuccess(`${item.name} deleted`),
                            onError: (e) => notifyError('Not deleted', e),
                          });
                      }}
                    >
                      <IconTrash size={16} />
                    </ActionIcon>
                  </Tooltip>
                </Group>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <DeployModal key={deploying?.id ?? 0} item={deploying} kind={kind} onClose={() => setDeploying(null)} />
      <PackageInfoModal key={`info-${describing?.id ?? 0}`} item={describing} onClose={() => setDescribing(null)} />
    </Table.ScrollContainer>
  );
}

function StorePanel({ kind }: { kind: StoredKind }) {
  const client = useQueryClient();
  const list = useStored(kind);
  const [uploads, setUploads] = useState<Upload[]>([]);
  const update = (key: string, change: Partial<Upload>) =>
    setUploads((all) => all.map((u) => (u.key === key ? { ...u, ...change } : u)));

  const start = (files: File[]) => {
    for (const file of files) {
      const key = `${file.name}-${file.size}-${Math.random().toString(36).slice(2)}`;
      const handle = uploadFile(kind, file, (progress) => update(key, { progress }));
      setUploads((all) => [{ key, name: file.name, size: file.size, progress: 0, state: 'uploading', handle }, ...all]);
      handle.promise.then(
        () => {
          update(key, { state: 'done', progress: 1 });
          void client.invalidateQueries({ queryKey: keys.stored(kind) });
          setTimeout(() => setUploads((all) => all.filter((u) => u.key !== key || u.state !== 'done')), 4000);
        },
        (error: unknown) => update(key, { state: 'failed', error: errorMessage(error) }),
      );
    }
  };

  return (
    <Stack gap="md">
      <div>
        <Dropzone
          onDrop={start}
          multiple
          aria-label={`Upload ${kind === 'file' ? 'files' : 'packages'}`}
          data-testid={`${kind}-dropzone`}
        >
          <Group justify="center" gap="lg" mih={110} style={{ pointerEvents: 'none' }}>
            <Dropzone.Accept>
              <IconUpload size={42} stroke={1.4} />
            </Dropzone.Accept>
            <Dropzone.Reject>
              <IconX size={42} stroke={1.4} />
            </Dropzone.Reject>
            <Dropzone.Idle>
              {kind === 'file' ? <IconFile size={42} stroke={1.4} /> : <IconPackage size={42} stroke={1.4} />}
            </Dropzone.Idle>
            <div>
              <Text fw={600}>Drop {kind === 'file' ? 'files' : 'packages'} here, or click to choose</Text>
              <Text size="sm" c="dimmed">
                Several at once; each is streamed to the server with its progress shown.
              </Text>
            </div>
          </Group>
        </Dropzone>
        <UploadList uploads={uploads} onDismiss={(key) => setUploads((all) => all.filter((u) => u.key !== key))} />
      </div>
      <QueryView query={list}>{(items) => <StoredTable kind={kind} items={items} />}</QueryView>
    </Stack>
  );
}

export function FilesPage() {
  const { search } = useLocation();
  const tab = new URLSearchParams(search).get('tab') === 'packages' ? 'packages' : 'files';
  const files = useStored('file');
  const packages = useStored('package');
  return (
    <>
      <PageHeader
        title="Files & packages"
        description="Content enrolled devices download: documents and configuration files, and app packages."
      />
      <Card withBorder radius="md" p="md">
        <Tabs
          value={tab}
          onChange={(value) => navigate(value === 'packages' ? '/files?tab=packages' : '/files', { replace: true })}
        >
          <Tabs.List mb="md">
            <Tabs.Tab
              value="files"
              leftSection={<IconFile size={16} />}
              rightSection={
                files.data ? (
                  <Badge size="xs" variant="light" circle>
                    {files.data.length}
                  </Badge>
                ) : null
              }
            >
              Files
            </Tabs.Tab>
            <Tabs.Tab
              value="packages"
              leftSection={<IconPackage size={16} />}
              rightSection={
                packages.data ? (
                  <Badge size="xs" variant="light" circle>
                    {packages.data.length}
                  </Badge>
                ) : null
              }
            >
              Packages
            </Tabs.Tab>
          </Tabs.List>
          <Tabs.Panel value="files">
            <StorePanel kind="file" />
          </Tabs.Panel>
          <Tabs.Panel value="packages">
            <StorePanel kind="package" />
          </Tabs.Panel>
        </Tabs>
      </Card>
    </>
  );
}
