import '../styles/print.css';
import { Alert, Anchor, Button, Container, Group, Loader, SegmentedControl, Text, Title, Tooltip } from '@mantine/core';
import { IconArrowLeft, IconFileTypePdf, IconPrinter } from '@tabler/icons-react';
import { useQuery } from '@tanstack/react-query';
import { useMemo, useState, type CSSProperties } from 'react';
import { admin } from '../api/client.ts';
import { useInvitationsByIds } from '../api/queries.ts';
import type { InvitationDetail } from '../../src-shared/contract/index.ts';
import { Link, navigate, useLocation } from '../lib/router.tsx';
import { EmptyState, ErrorState, LoadingState, notifyError, notifySuccess } from '../components/common.tsx';
import { UnreachableWarning } from '../features/reachability.tsx';
import { desktop } from '../lib/desktop.ts';
import { formatDate, fullName } from '../lib/format.ts';
import { shortFingerprint } from '../lib/hash.ts';
import {
  cardSize,
  defaultPaper,
  pageRule,
  paginate,
  PAPERS,
  parsePrintQuery,
  printQuery,
  type Paper,
} from '../lib/print-layout.ts';

function Card({ invitation, onLoad }: { invitation: InvitationDetail; onLoad: () => void }) {
  const { helpdesk } = invitation;
  const contact = [helpdesk.name, helpdesk.phone, helpdesk.email, helpdesk.website].filter(Boolean);
  const name = fullName(invitation);
  return (
    <div className="sheet-card" data-testid="sheet-card" data-invitation-id={invitation.id}>
      <img
        src={`/api/invitations/${invitation.id}/qr.svg?v=${shortFingerprint(invitation.deeplink)}`}
        alt={`Enrollment QR code for ${invitation.email}`}
        onLoad={onLoad}
        onError={onLoad}
      />
      <div className="who">{invitation.email}</div>
      {name ? <div className="name">{name}</div> : null}
      <ol className="steps">
        <li>1. Install the MDM agent app, then scan this code.</li>
        <li>2. Confirm; if asked, sign in with the address above.</li>
      </ol>
      <div className="helpdesk">
        <div>{contact.length ? <>Help: {contact.join(' · ')}</> : <>Questions? Ask your IT team.</>}</div>
        <div className="expiry">Valid until {formatDate(invitation.expires_at)}</div>
      </div>
    </div>
  );
}

const PAPER_KEY = 'mdm-console.print-paper';

/** The paper chosen last time, on this browser (a sheet printed on Letter once is Letter next time). */
function rememberedPaper(): Paper | null {
  try {
    const stored = localStorage.getItem(PAPER_KEY);
    return stored && stored in PAPERS ? (stored as Paper) : null;
  } catch {
    return null;
  }
}

function rememberPaper(paper: Paper): void {
  try {
    localStorage.setItem(PAPER_KEY, paper);
  } catch {
    // Storage refused (private mode): the choice lasts for this page only.
  }
}

export function PrintSheet() {
  const { search } = useLocation();
  const { ids, paper: asked, all } = parsePrintQuery(search);
  const [paper, setPaperState] = useState<Paper>(asked ?? rememberedPaper() ?? defaultPaper(navigator.language));
  const spec = PAPERS[paper];
  const invitations = useInvitationsByIds(ids);
  const [loaded, setLoaded] = useState(0);
  const [saving, setSaving] = useState(false);
  const pending = useQuery({
    queryKey: ['invitations', 'list', { status: 'pending', limit: 600 }],
    queryFn: ({ signal }) => admin.invitations.list({ status: 'pending', limit: 600 }, signal),
    enabled: ids.length === 0,
  });

  const setPaper = (next: Paper) => {
    setPaperState(next);
    rememberPaper(next);
    navigate(`/print${printQuery(ids, next, { all })}`, { replace: true });
  };

  const found = useMemo(() => invitations.data ?? [], [invitations.data]);
  // Used, revoked and expired invitations can no longer enroll a device: their cards are left out
  // unless the admin asks for them.
  const unusable = found.filter((c) => c.status !== 'pending');
  const cards = useMemo(() => (all ? found : found.filter((c) => c.status === 'pending')), [all, found]);
  const setAll = (next: boolean) => {
    // The cards are drawn afresh (see the sheet's key), so their QR codes are counted afresh.
    setLoaded(0);
    navigate(`/print${printQuery(ids, paper, { all: next })}`, { replace: true });
  };
  const pages = useMemo(() => paginate(cards, spec), [cards, spec]);
  const size = cardSize(spec);
  const ready = cards.length > 0 && loaded >= cards.length;
  const skipped = ids.length - found.length;
  const bridge = desktop();

  const style = {
    '--paper-width': `${spec.widthMm}mm`,
    '--paper-height': `${spec.heightMm}mm`,
    '--paper-margin': `${spec.marginMm}mm`,
    '--paper-columns': spec.columns,
    '--paper-rows': spec.rows,
    '--card-gap': '6mm',
    // As large as the card allows once its text has room (about 40 mm of it).
    '--qr-size': `${Math.min(48, Math.floor(size.heightMm - 40))}mm`,
  } as CSSProperties;

  const savePdf = async () => {
    if (!bridge) return;
    setSaving(true);
    try {
      const saved = await bridge.savePdf({
        paper: spec.label as 'A4' | 'Letter',
        suggestedName: `invitations-${new Date().toISOString().slice(0, 10)}.pdf`,
      });
      if (saved) notifySuccess(`Saved ${saved.path}`);
    } catch (error) {
      notifyError('The PDF was not saved', error);
    } finally {
      setSaving(false);
    }
  };

  return (
    <div className="print-root">
      <title>Print sheet · MDM Console</title>
      <style>{pageRule(spec)}</style>
      <div className="print-toolbar no-print">
        <Container size="lg" py="sm">
          <Group justify="space-between" wrap="wrap" gap="sm">
            <Group gap="sm">
              <Button component={Link} to="/invitations" variant="subtle" leftSection={<IconArrowLeft size={16} />}>
                Invitations
              </Button>
              <div>
                <Title order={1} size="h3">
                  Print sheet
                </Title>
                <Text size="xs" c="dimmed">
                  {cards.length
                    ? `${cards.length} card${cards.length === 1 ? '' : 's'} on ${pages.length} ${spec.label} page${pages.length === 1 ? '' : 's'} · ${spec.columns * spec.rows} a page, ${Math.round(size.widthMm)} × ${Math.round(size.heightMm)} mm each`
                    : 'QR code cards to hand out'}
                </Text>
              </div>
            </Group>
            <Group gap="sm">
              <SegmentedControl
                aria-label="Paper size"
                data={[
                  { value: 'a4', label: 'A4' },
                  { value: 'letter', label: 'Letter' },
                ]}
                value={paper}
                onChange={(value) => setPaper(value as Paper)}
              />
              <Tooltip label="Waiting for the QR codes to load" disabled={ready || cards.length === 0}>
                <Button leftSection={<IconPrinter size={16} />} disabled={!ready} onClick={() => window.print()}>
                  Print
                </Button>
              </Tooltip>
              {bridge ? (
                <Button
                  variant="default"
                  leftSection={<IconFileTypePdf size={16} />}
                  disabled={!ready}
                  loading={saving}
                  onClick={() => void savePdf()}
                >
                  Save PDF
                </Button>
              ) : null}
            </Group>
          </Group>
          <div className="sheet-warning">
            <UnreachableWarning what="The QR codes on these cards" />
          </div>
          {skipped > 0 && !invitations.isPending ? (
            <Alert color="orange" variant="light" mt="sm" p="xs">
              {skipped} selected invitation{skipped === 1 ? ' was' : 's were'} not found (deleted?) and left out.
            </Alert>
          ) : null}
          {unusable.length > 0 ? (
            <Alert color="orange" variant="light" mt="sm" p="xs" data-testid="print-unusable">
              <Group justify="space-between" gap="xs" wrap="wrap">
                <Text size="sm">
                  {unusable.length} selected invitation{unusable.length === 1 ? ' was' : 's were'} used, revoked or expired (
                  {unusable
                    .map((c) => c.email)
                    .slice(0, 3)
                    .join(', ')}
                  {unusable.length > 3 ? '…' : ''}):{' '}
                  {all
                    ? `${unusable.length === 1 ? 'its card is' : 'their cards are'} printed, though ${unusable.length === 1 ? 'it' : 'they'} can no longer enroll a device.`
                    : `left out, as ${unusable.length === 1 ? 'it' : 'they'} can no longer enroll a device.`}
                </Text>
                <Button size="compact-sm" variant="light" color="orange" onClick={() => setAll(!all)}>
                  {all ? 'Leave them out' : 'Print them too'}
                </Button>
              </Group>
            </Alert>
          ) : null}
        </Container>
      </div>
      {ids.length === 0 ? (
        <Container size="sm" py="xl" className="no-print">
          {pending.isPending ? (
            <LoadingState />
          ) : pending.isError ? (
            <ErrorState error={pending.error} />
          ) : (
            <EmptyState
              title="No invitations chosen"
              action={
                <Group>
                  <Button component={Link} to="/invitations?status=pending" variant="default">
                    Choose on the invitations page
                  </Button>
                  <Button
                    disabled={(pending.data?.items.length ?? 0) === 0}
                    onClick={() =>
                      navigate(
                        `/print${printQuery(
                          pending.data!.items.map((i) => i.id),
                          paper,
                        )}`,
                      )
                    }
                  >
                    All {pending.data?.items.length ?? 0} pending
                  </Button>
                </Group>
              }
            >
              Select invitations with the checkboxes on the invitations page and press “Print sheet”, or take every pending
              invitation.
            </EmptyState>
          )}
        </Container>
      ) : invitations.isPending ? (
        <LoadingState label="Preparing the cards…" />
      ) : invitations.isError ? (
        <Container size="sm" py="xl">
          <ErrorState error={invitations.error} />
        </Container>
      ) : cards.length === 0 ? (
        <EmptyState
          title={
            found.length === 0
              ? 'None of these invitations exists any more'
              : 'None of these invitations can enroll a device any more'
          }
          action={
            <Anchor component={Link} to="/invitations">
              Back to invitations
            </Anchor>
          }
        />
      ) : (
        <div key={String(all)} style={style} data-testid="print-sheet" data-paper={paper} data-ready={ready}>
          {pages.map((page, index) => (
            <section key={index} className="sheet-page" aria-label={`Page ${index + 1} of ${pages.length}`}>
              {page.map((invitation) => (
                <Card key={invitation.id} invitation={invitation} onLoad={() => setLoaded((n) => n + 1)} />
              ))}
            </section>
          ))}
        </div>
      )}
      {!ready && cards.length > 0 ? (
        <Group justify="center" className="no-print" mt="md">
          <Loader size="xs" />
          <Text size="xs" c="dimmed">
            Loading QR codes… {loaded}/{cards.length}
          </Text>
        </Group>
      ) : null}
    </div>
  );
}
