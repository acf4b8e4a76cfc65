import {
  ActionIcon,
  AppShell,
  Badge,
  Burger,
  Group,
  NavLink,
  Text,
  Tooltip,
  useMantineColorScheme,
  VisuallyHidden,
} from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import {
  IconBell,
  IconDeviceMobile,
  IconDeviceDesktopCog,
  IconLogout,
  IconFiles,
  IconStack2,
  IconLayoutDashboard,
  IconMail,
  IconMoon,
  IconPrinter,
  IconQrcode,
  IconUserCheck,
  IconSettings,
  IconKey,
  IconUsers,
  IconHistory,
  IconSun,
  IconUserCircle,
  IconChartBar,
  IconListCheck,
} from '@tabler/icons-react';
import { Fragment, useEffect, useState, type ReactNode } from 'react';
import { admin, AdminApiError } from '../api/client.ts';
import { desktop } from '../lib/desktop.ts';
import { useStatus, useViews } from '../api/queries.ts';
import { useLiveState } from '../live/LiveProvider.tsx';
import { ApprovalsPage } from '../pages/Approvals.tsx';
import { CodePage } from '../pages/CodePage.tsx';
import { CodePoster } from '../pages/CodePoster.tsx';
import { CodesPage } from '../pages/Codes.tsx';
import { Dashboard } from '../pages/Dashboard.tsx';
import { Devices } from '../pages/Devices.tsx';
import { FilesPage } from '../pages/Files.tsx';
import { FleetsPage } from '../pages/Fleets.tsx';
import { InvitationPage } from '../pages/InvitationPage.tsx';
import { Invitations } from '../pages/Invitations.tsx';
import { NotFound } from '../pages/NotFound.tsx';
import { PrintSheet } from '../pages/PrintSheet.tsx';
import { SettingsPage } from '../pages/Settings.tsx';
import { TokensPage } from '../pages/Tokens.tsx';
import { AuditPage } from '../pages/Audit.tsx';
import { AlertsPage } from '../pages/Alerts.tsx';
import { ReportsPage } from '../pages/Reports.tsx';
import { JobPage, JobsPage } from '../pages/Jobs.tsx';
import { AccountPage } from '../pages/Account.tsx';
import { AccountsPage } from '../pages/Accounts.tsx';
import { useMe } from '../api/accounts.ts';
import type { Permission } from '../../src-shared/contract/permissions.ts';
import { Link, matchPath, navigate, useLocation } from '../lib/router.tsx';

/** The pages, each with the permission it needs to be of use: an entry the role lacks it for is not shown. */
const NAV: {
  to: string;
  permission: Permission | 'signed-in';
  label: string;
  icon: typeof IconMail;
  match: (p: string) => boolean;
}[] = [
  { to: '/', permission: 'status.read', label: 'Dashboard', icon: IconLayoutDashboard, match: (p: string) => p === '/' },
  {
    to: '/invitations',
    permission: 'invitations.read',
    label: 'Invitations',
    icon: IconMail,
    match: (p: string) => p.startsWith('/invitations'),
  },
  {
    to: '/codes',
    permission: 'codes.read',
    label: 'Enrollment codes',
    icon: IconQrcode,
    match: (p: string) => p.startsWith('/codes'),
  },
  {
    to: '/approvals',
    permission: 'devices.read',
    label: 'Approvals',
    icon: IconUserCheck,
    match: (p: string) => p.startsWith('/approvals'),
  },
  {
    to: '/devices',
    permission: 'devices.read',
    label: 'Devices',
    icon: IconDeviceMobile,
    match: (p: string) => p.startsWith('/devices'),
  },
  { to: '/jobs', permission: 'devices.read', label: 'Jobs', icon: IconListCheck, match: (p: string) => p.startsWith('/jobs') },
  { to: '/fleets', permission: 'fleets.read', label: 'Fleets', icon: IconStack2, match: (p: string) => p.startsWith('/fleets') },
  {
    to: '/reports',
    permission: 'devices.read',
    label: 'Reports',
    icon: IconChartBar,
    match: (p: string) => p.startsWith('/reports'),
  },
  {
    to: '/print',
    permission: 'invitations.read',
    label: 'Print sheets',
    icon: IconPrinter,
    match: (p: string) => p.startsWith('/print'),
  },
  {
    to: '/files',
    permission: 'files.read',
    label: 'Files & packages',
    icon: IconFiles,
    match: (p: string) => p.startsWith('/files'),
  },
  { to: '/alerts', permission: 'alerts.read', label: 'Alerts', icon: IconBell, match: (p: string) => p.startsWith('/alerts') },
  {
    to: '/settings',
    permission: 'settings.read',
    label: 'Settings',
    icon: IconSettings,
    match: (p: string) => p.startsWith('/settings'),
  },
  {
    to: '/accounts',
    permission: 'accounts.manage',
    label: 'Accounts',
    icon: IconUsers,
    match: (p: string) => p.startsWith('/accounts'),
  },
  { to: '/tokens', permission: 'tokens.own', label: 'API tokens', icon: IconKey, match: (p: string) => p.startsWith('/tokens') },
  { to: '/audit', permission: 'audit.read', label: 'Audit', icon: IconHistory, match: (p: string) => p.startsWith('/audit') },
  {
    to: '/account',
    permission: 'signed-in',
    label: 'My account',
    icon: IconUserCircle,
    match: (p: string) => p === '/account',
  },
];

function route(pathname: string): { title: string; element: ReactNode } {
  if (pathname === '/') return { title: 'Dashboard', element: <Dashboard /> };
  if (matchPath('/invitations', pathname)) return { title: 'Invitations', element: <Invitations /> };
  const invitation = matchPath('/invitations/:id', pathname);
  if (invitation && /^\d+$/.test(invitation.id!)) {
    return { title: `Invitation ${invitation.id}`, element: <InvitationPage key={invitation.id} id={Number(invitation.id)} /> };
  }
  if (matchPath('/codes', pathname)) return { title: 'Enrollment codes', element: <CodesPage /> };
  const code = matchPath('/codes/:id', pathname);
  if (code && /^\d+$/.test(code.id!))
    return { title: 'Enrollment code', element: <CodePage key={code.id} id={Number(code.id)} /> };
  if (matchPath('/approvals', pathname)) return { title: 'Waiting for approval', element: <ApprovalsPage /> };
  if (matchPath('/devices', pathname)) return { title: 'Devices', element: <Devices /> };
  if (matchPath('/jobs', pathname)) return { title: 'Jobs', element: <JobsPage /> };
  const job = matchPath('/jobs/:id', pathname);
  if (job && /^\d+$/.test(job.id!)) return { title: `Job #${job.id}`, element: <JobPage key={job.id} id={Number(job.id)} /> };
  if (matchPath('/fleets', pathname)) return { title: 'Fleets', element: <FleetsPage id={null} /> };
  const fleet = matchPath('/fleets/:id', pathname);
  if (fleet && /^\d+$/.test(fleet.id!)) return { title: 'Fleets', element: <FleetsPage id={Number(fleet.id)} /> };
  if (matchPath('/reports', pathname)) return { title: 'Reports', element: <ReportsPage /> };
  if (matchPath('/files', pathname)) return { title: 'Files & packages', element: <FilesPage /> };
  if (matchPath('/alerts', pathname)) return { title: 'Alerts', element: <AlertsPage /> };
  if (matchPath('/settings', pathname)) return { title: 'Settings', element: <SettingsPage /> };
  if (matchPath('/accounts', pathname)) return { title: 'Accounts', element: <AccountsPage /> };
  if (matchPath('/tokens', pathname)) return { title: 'API tokens', element: <TokensPage /> };
  if (matchPath('/audit', pathname)) return { title: 'Audit', element: <AuditPage /> };
  if (matchPath('/account', pathname)) return { title: 'My account', element: <AccountPage /> };
  return { title: 'Not found', element: <NotFound /> };
}

function LiveIndicator() {
  const state = useLiveState();
  const { color, label, hint } = {
    live: { color: 'teal', label: 'Live', hint: 'Updates arrive as they happen' },
    connecting: { color: 'gray', label: 'Connecting…', hint: 'Opening the live event stream' },
    reconnecting: { color: 'orange', label: 'Reconnecting…', hint: 'The server is not answering; retrying' },
    'signed-out': { color: 'red', label: 'Signed out', hint: 'Open the console again from the sign-in link' },
  }[state];
  return (
    <Tooltip label={hint}>
      <Badge color={color} variant="dot" size="lg" data-testid="live-state" data-state={state} role="status">
        {label}
      </Badge>
    </Tooltip>
  );
}

function ColorSchemeToggle() {
  const { colorScheme, setColorScheme } = useMantineColorScheme();
  const next = colorScheme === 'auto' ? 'dark' : colorScheme === 'dark' ? 'light' : 'auto';
  const label = { auto: 'Theme: follows the system', dark: 'Theme: dark', light: 'Theme: light' }[colorScheme];
  return (
    <Tooltip label={`${label} (click for ${next})`}>
      <ActionIcon variant="default" size="lg" onClick={() => setColorScheme(next)} aria-label={`${label}; switch to ${next}`}>
        {colorScheme === 'dark' ? (
          <IconMoon size={18} />
        ) : colorScheme === 'light' ? (
          <IconSun size={18} />
        ) : (
          <IconDeviceDesktopCog size={18} />
        )}
      </ActionIcon>
    </Tooltip>
  );
}

/** Who is signed in to this console, and with which role. */
function SignedInAs() {
  const me = useMe();
  if (!me.data) return null;
  const { account, role, fleets } = me.data;
  // An operator or observer scoped to fleets sees those fleets' devices, invitations and codes only.
  const scope =
    fleets === null
      ? null
      : fleets.length > 0
        ? `Scoped to fleets: ${fleets.map((f) => f.name).join(', ')}`
        : 'Scoped to no fleet';
  return (
    <Group gap={6} wrap="nowrap">
      <Tooltip label={account.email ? `Signed in as ${account.email}` : 'The owner: this computer’s user'}>
        <Link to="/account" data-testid="signed-in-as" style={{ color: 'inherit', textDecoration: 'none' }}>
          <Group gap={6} wrap="nowrap" visibleFrom="sm">
            <Text size="sm" fw={500}>
              {account.display_name}
            </Text>
            <Badge variant="light" size="sm">
              {role}
            </Badge>
          </Group>
        </Link>
      </Tooltip>
      {scope && (
        <Tooltip label="Lists, counts, the activity and the live updates show these fleets only">
          <Badge variant="outline" color="grape" size="sm" maw={260} data-testid="fleet-scope">
            {scope}
          </Badge>
        </Tooltip>
      )}
    </Group>
  );
}

/** Ends the console's session on the server; the desktop window signs its user in by itself, so it has none. */
function SignOutButton() {
  const [busy, setBusy] = useState(false);
  if (desktop()) return null;
  const signOut = async () => {
    setBusy(true);
    try {
      await admin.signOut();
    } catch {
      // Already signed out, or the server is away: the sign-in page says what to do either way.
    }
    window.location.assign('/sign-in?signed-out=1');
  };
  return (
    <Tooltip label="Sign out of this browser">
      <ActionIcon
        variant="default"
        size="lg"
        loading={busy}
        onClick={() => void signOut()}
        aria-label="Sign out"
        data-testid="sign-out"
      >
        <IconLogout size={18} />
      </ActionIcon>
    </Tooltip>
  );
}

/** The saved views under Devices, each with how many devices it holds now (live). */
function ViewLinks({ pathname, search }: { pathname: string; search: string }) {
  const views = useViews();
  if (!views.data?.length) return null;
  const open = pathname === '/devices' ? new URLSearchParams(search).get('view') : null;
  return (
    <div role="group" aria-label="Saved views" data-testid="nav-views">
      {views.data.map((view) => {
        const active = open === String(view.id);
        return (
          <NavLink
            key={view.id}
            component={Link}
            to={`/devices?view=${view.id}`}
            label={view.name}
            title={view.where || 'every device'}
            pl={38}
            active={active}
            aria-current={active ? 'page' : undefined}
            data-testid="nav-view"
            rightSection={
              <Badge size="xs" variant="light" color="gray" data-testid="nav-view-count">
                {view.count.toLocaleString()}
                <VisuallyHidden> devices</VisuallyHidden>
              </Badge>
            }
            styles={{ root: { borderRadius: 'var(--mantine-radius-md)' }, label: { fontSize: 'var(--mantine-font-size-sm)' } }}
          />
        );
      })}
    </div>
  );
}

export function App() {
  const { pathname, search } = useLocation();
  const [opened, { toggle, close }] = useDisclosure();
  const status = useStatus();
  const me = useMe();
  useEffect(close, [pathname, close]);
  const live = useLiveState();
  const signedOut = live === 'signed-out' || (status.error instanceof AdminApiError && status.error.status === 401);
  // Signed out (cookie gone or the admin token changed): the sign-in page says what to do.
  useEffect(() => {
    if (signedOut)
      navigate(`/sign-in?from=${encodeURIComponent(window.location.pathname + window.location.search)}`, { replace: true });
  }, [signedOut]);

  // The print sheet is its own document: no navigation around the pages that get printed.
  if (matchPath('/print', pathname)) return <PrintSheet />;
  const poster = matchPath('/codes/:id/poster', pathname);
  if (poster && /^\d+$/.test(poster.id!)) return <CodePoster id={Number(poster.id)} />;

  const current = route(pathname);
  const warnings = status.data?.warnings.length ?? 0;
  const waiting = status.data?.counts.pending_approval ?? 0;
  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 230, breakpoint: 'sm', collapsed: { mobile: !opened } }} padding="lg">
      <title>{`${current.title} · MDM Console`}</title>
      {/* The first stop of the Tab key: past the header and the navigation, straight to the page. */}
      <a
        href="#main"
        className="skip-link"
        onClick={(event) => {
          event.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to main content
      </a>
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="sm" wrap="nowrap">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Toggle navigation" />
            <img src="/favicon.svg" alt="" width={28} height={28} />
            <Text fw={700} size="lg">
              MDM Console
            </Text>
          </Group>
          <Group gap="sm" wrap="nowrap">
            <SignedInAs />
            <LiveIndicator />
            <ColorSchemeToggle />
            <SignOutButton />
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="sm" aria-label="Main">
        <nav>
          {NAV.filter((item) => !me.data || item.permission === 'signed-in' || me.data.permissions.includes(item.permission)).map(
            (item) => (
              <Fragment key={item.to}>
                <NavLink
                  component={Link}
                  to={item.to}
                  label={item.label}
                  leftSection={<item.icon size={18} stroke={1.6} />}
                  active={item.match(pathname) && !(item.to === '/devices' && search.includes('view='))}
                  aria-current={
                    item.match(pathname) && !(item.to === '/devices' && search.includes('view=')) ? 'page' : undefined
                  }
                  rightSection={
                    item.to === '/approvals' && waiting > 0 ? (
                      <Badge size="xs" color="orange" circle data-testid="nav-waiting">
                        {waiting}
                        <VisuallyHidden> devices waiting</VisuallyHidden>
                      </Badge>
                    ) : item.to === '/' && warnings > 0 ? (
                      <Badge size="xs" color="orange" circle>
                        {warnings}
                        <VisuallyHidden> warnings</VisuallyHidden>
                      </Badge>
                    ) : undefined
                  }
                  styles={{ root: { borderRadius: 'var(--mantine-radius-md)' } }}
                />
                {item.to === '/devices' ? <ViewLinks pathname={pathname} search={search} /> : null}
              </Fragment>
            ),
          )}
        </nav>
      </AppShell.Navbar>
      <AppShell.Main id="main" tabIndex={-1} style={{ outline: 'none' }}>
        <div className="page">{current.element}</div>
      </AppShell.Main>
    </AppShell>
  );
}
