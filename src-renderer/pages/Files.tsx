import {
  ActionIcon,
  Badge,
  Button,
  Card,
  Group,
  List,
  Modal,
  NumberInput,
  Progress,
  Stack,
  Table,
  Tabs,
  Text,
  TextInput,
  Tooltip,
} from '@mantine/core';
import { Dropzone } from '@mantine/dropzone';
import { useQueryClient } from '@tanstack/react-query';
import { IconFile, IconPackage, IconRocket, IconTrash, IconUpload, IconX } from '@tabler/icons-react';
import { useEffect, useRef, useState } from 'react';
import { AdminApiError, errorMessage } from '../api/client.ts';
import { keys, useDeleteStored, useStored } from '../api/queries.ts';
import type { StoredItem, StoredKind } from '../../src-shared/contract/index.ts';
import { PACKAGE_NAME_PATTERN } from '../../src-shared/contract/rules.ts';
import { navigate, useLocation } from '../lib/router.tsx';
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
import { uploadFile, type PackageDescription, type UploadHandle } from '../lib/upload.ts';
import { DeployModal, PackageInfoModal } from '../features/deployments.tsx';
import { Gate, RoleNotice, useCan } from '../components/permissions.tsx';

interface Upload {
  key: string;
  file: File;
  name: string;
  size: number;
  progress: number;
  /** `unreadable`: an APK whose manifest could not be read, refused (nothing stored) until the admin keeps it. */
  state: 'uploading' | 'done' | 'failed' | 'unreadable';
  error?: string;
  handle?: UploadHandle;
}

const APK_MIME_TYPE = 'application/vnd.android.package-archive';
const isApk = (file: File) => /\.apk$/i.test(file.name) || file.type === APK_MIME_TYPE;
const PACKAGE_NAME = new RegExp(PACKAGE_NAME_PATTERN);

function UploadList({
  uploads,
  onDismiss,
  onKeep,
}: {
  uploads: Upload[];
  onDismiss: (key: string) => void;
  onKeep: (upload: Upload) => void;
}) {
  if (uploads.length === 0) return null;
  return (
    <Stack gap="xs" mt="md" data-testid="uploads">
      {uploads.map((upload) =>
        upload.state === 'unreadable' ? (
          <Card key={upload.key} withBorder radius="sm" p="sm" data-testid="unreadable-apk">
            <Text size="sm" fw={500}>
              {upload.name} was not added
            </Text>
            <Text size="sm" c="red">
              {upload.error}
            </Text>
            <Text size="xs" c="dimmed" mt={4}>
              Devices need its package name and version code to install it. Keep it only if you trust the file and know them.
            </Text>
            <Group gap="xs" mt="xs">
              <Button size="xs" variant="light" onClick={() => onKeep(upload)} aria-label={`Keep ${upload.name} as a package`}>
                Keep as a package…
              </Button>
              <Button size="xs" variant="default" onClick={() => onDismiss(upload.key)} aria-label={`Refuse ${upload.name}`}>
                Refuse it
              </Button>
            </Group>
          </Card>
        ) : (
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
        ),
      )}
    </Stack>
  );
}

/** An APK whose manifest could not be read, kept as the package the admin describes (uploaded again with if_unreadable=keep). */
function KeepAsPackageModal({
  upload,
  onKeep,
  onClose,
}: {
  upload: Upload | null;
  onKeep: (upload: Upload, description: PackageDescription) => void;
  onClose: () => void;
}) {
  const [packageName, setPackageName] = useState('');
  const [versionCode, setVersionCode] = useState<number | string>('');
  const [versionName, setVersionName] = useState('');
  const nameProblem = packageName !== '' && !PACKAGE_NAME.test(packageName) ? 'Dot-separated names, e.g. com.example.app' : null;
  const ready = packageName !== '' && nameProblem === null && versionCode !== '';
  return (
    <Modal opened={upload !== null} onClose={onClose} title={upload ? `Keep ${upload.name} as a package` : ''}>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (!upload || !ready) return;
          onKeep(upload, {
            if_unreadable: 'keep',
            package_name: packageName,
            version_code: Number(versionCode),
            ...(versionName.trim() === '' ? {} : { version_name: versionName.trim() }),
          });
          onClose();
        }}
      >
        <Stack>
          <Text size="sm">
            Its manifest could not be read, so the server cannot tell what it installs. Give its package name and version code:
            devices are told these, and the file is sent again.
          </Text>
          <TextInput
            label="Package name"
            placeholder="com.example.app"
            value={packageName}
            onChange={(e) => setPackageName(e.currentTarget.value.trim())}
            error={nameProblem}
            required
            data-autofocus
          />
          <NumberInput
            label="Version code"
            min={0}
            max={2 ** 31 - 1}
            allowDecimal={false}
            value={versionCode}
            onChange={setVersionCode}
            required
          />
          <TextInput
            label="Version name"
            placeholder="1.0"
            value={versionName}
            onChange={(e) => setVersionName(e.currentTarget.value)}
            maxLength={100}
          />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" disabled={!ready}>
              Keep as a package
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
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
                    <Gate permission="files.write">
                      <Button
                        size="xs"
                        variant="default"
                        onClick={() => setDescribing(item)}
                        aria-label={`Set the package name of ${item.name}`}
                      >
                        Set package name…
                      </Button>
                    </Gate>
                  ) : null}
                  <Gate permission="deployments.write">
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
                  </Gate>
                  <Gate permission="files.write">
                    <Tooltip label="Delete">
                      <ActionIcon
                        variant="subtle"
                        color="red"
                        aria-label={`Delete ${item.name}`}
                        loading={remove.isPending && remove.variables === item.id}
                        onClick={() =>
                          confirmAction(
                            {
                              title: `Delete ${item.name}?`,
                              message: 'Devices can no longer download it.',
                              confirmLabel: 'Delete',
                            },
                            () =>
                              remove.mutate(item.id, {
                                onSuccess: () => notifySuccess(`${item.name} deleted`),
                                onError: (e) => notifyError('Not deleted', e),
                              }),
                          )
                        }
                      >
                        <IconTrash size={16} />
                      </ActionIcon>
                    </Tooltip>
                  </Gate>
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

interface Incoming {
  id: number;
  files: File[];
}

function StorePanel({
  kind,
  incoming,
  onApks,
}: {
  kind: StoredKind;
  /** Files handed over by the other panel (APKs dropped on Files, sent here as packages). */
  incoming?: Incoming | null;
  /** Files panel: APKs dropped here are offered as packages instead of being stored as plain files. */
  onApks?: (apks: File[]) => void;
}) {
  const client = useQueryClient();
  const list = useStored(kind);
  const [uploads, setUploads] = useState<Upload[]>([]);
  const [keeping, setKeeping] = useState<Upload | null>(null);
  const update = (key: string, change: Partial<Upload>) =>
    setUploads((all) => all.map((u) => (u.key === key ? { ...u, ...change } : u)));

  const send = (file: File, description: PackageDescription = {}) => {
    const key = `${file.name}-${file.size}-${Math.random().toString(36).slice(2)}`;
    const handle = uploadFile(kind, file, (progress) => update(key, { progress }), description);
    setUploads((all) => [{ key, file, name: file.name, size: file.size, progress: 0, state: 'uploading', handle }, ...all]);
    handle.promise.then(
      () => {
        update(key, { state: 'done', progress: 1 });
        void client.invalidateQueries({ queryKey: keys.stored(kind) });
        setTimeout(() => setUploads((all) => all.filter((u) => u.key !== key || u.state !== 'done')), 4000);
      },
      (error: unknown) =>
        update(key, {
          state: error instanceof AdminApiError && error.code === 'ERROR_APK_UNREADABLE' ? 'unreadable' : 'failed',
          error: errorMessage(error),
        }),
    );
  };

  const start = (files: File[]) => {
    // On the Files tab, an APK is offered as a package first; the other files go on at once.
    const offered = onApks ? files.filter((file) => isApk(file)) : [];
    for (const file of files) if (!offered.includes(file)) send(file);
    if (offered.length > 0) onApks?.(offered);
  };

  const mayWrite = useCan('files.write').allowed;
  // Each hand-over once (the id changes with each).
  const handled = useRef(0);
  useEffect(() => {
    if (!incoming || incoming.id === handled.current) return;
    handled.current = incoming.id;
    for (const file of incoming.files) send(file);
    // eslint-disable-next-line react-hooks/exhaustive-deps -- only a new hand-over starts uploads (send is a new function each render)
  }, [incoming]);

  return (
    <Stack gap="md">
      <div>
        <RoleNotice permission="files.write" />
        {mayWrite ? (
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
        ) : null}
        <UploadList
          uploads={uploads}
          onDismiss={(key) => setUploads((all) => all.filter((u) => u.key !== key))}
          onKeep={setKeeping}
        />
        <KeepAsPackageModal
          key={keeping?.key ?? 'none'}
          upload={keeping}
          onClose={() => setKeeping(null)}
          onKeep={(upload, description) => {
            setUploads((all) => all.filter((u) => u.key !== upload.key));
            send(upload.file, description);
          }}
        />
      </div>
      <QueryView query={list}>{(items) => <StoredTable kind={kind} items={items} />}</QueryView>
    </Stack>
  );
}

/** APKs dropped on the Files tab: add them as packages (devices install them) or store them as plain files. */
function ApkOfferModal({
  offer,
  onPackages,
  onFiles,
  onClose,
}: {
  offer: File[] | null;
  onPackages: () => void;
  onFiles: () => void;
  onClose: () => void;
}) {
  const count = offer?.length ?? 0;
  return (
    <Modal
      opened={offer !== null}
      onClose={onClose}
      title={count === 1 ? 'Add this app as a package?' : 'Add these apps as packages?'}
    >
      <Stack>
        <Text size="sm">
          {count === 1 ? 'This is an Android app (APK).' : `These ${count} files are Android apps (APK).`} As a package, devices
          can install it and its name and version are read from it; as a plain file, devices only download it.
        </Text>
        <List size="sm" data-testid="offered-apks">
          {offer?.map((file) => (
            <List.Item key={`${file.name}-${file.size}`}>{file.name}</List.Item>
          ))}
        </List>
        <Group justify="flex-end">
          <Button variant="default" onClick={onFiles}>
            Store as {count === 1 ? 'a plain file' : 'plain files'}
          </Button>
          <Button onClick={onPackages} data-autofocus>
            Add as {count === 1 ? 'a package' : 'packages'}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

export function FilesPage() {
  const { search } = useLocation();
  const tab = new URLSearchParams(search).get('tab') === 'packages' ? 'packages' : 'files';
  const files = useStored('file');
  const packages = useStored('package');
  const [offer, setOffer] = useState<File[] | null>(null);
  const [toPackages, setToPackages] = useState<Incoming | null>(null);
  const [toFiles, setToFiles] = useState<Incoming | null>(null);
  const handOver = (files: File[], to: 'packages' | 'files') => {
    if (files.length === 0) return;
    const incoming = { id: Date.now() + Math.random(), files };
    if (to === 'packages') setToPackages(incoming);
    else setToFiles(incoming);
  };
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
            <StorePanel kind="file" incoming={toFiles} onApks={setOffer} />
          </Tabs.Panel>
          <Tabs.Panel value="packages">
            <StorePanel kind="package" incoming={toPackages} />
          </Tabs.Panel>
        </Tabs>
      </Card>
      <ApkOfferModal
        offer={offer}
        onClose={() => setOffer(null)}
        onFiles={() => {
          if (offer) handOver(offer, 'files');
          setOffer(null);
        }}
        onPackages={() => {
          if (offer) {
            handOver(offer, 'packages');
            navigate('/files?tab=packages', { replace: true });
          }
          setOffer(null);
        }}
      />
    </>
  );
}
