import '../styles/print.css';
import { Button, Container, Group, SegmentedControl, Text, Title } from '@mantine/core';
import { IconArrowLeft, IconPrinter } from '@tabler/icons-react';
import { useState, type CSSProperties } from 'react';
import { useCode } from '../api/codes.ts';
import { Link } from '../lib/router.tsx';
import { ErrorState, LoadingState } from '../components/common.tsx';
import { formatDate } from '../lib/format.ts';
import { shortFingerprint } from '../lib/hash.ts';
import { defaultPaper, pageRule, PAPERS, type Paper } from '../lib/print-layout.ts';

/** One enrollment code on one page (A4 or Letter): the QR code, the instructions, who may use it and whom to ask. */
export function CodePoster({ id }: { id: number }) {
  const code = useCode(id);
  const [paper, setPaper] = useState<Paper>(defaultPaper(navigator.language));
  const [loaded, setLoaded] = useState(false);
  const spec = PAPERS[paper];
  if (code.isPending) return <LoadingState />;
  if (code.isError) return <ErrorState error={code.error} />;
  const c = code.data;
  const contact = [c.helpdesk.name, c.helpdesk.phone, c.helpdesk.email, c.helpdesk.website].filter(Boolean);
  const style = {
    '--paper-width': `${spec.widthMm}mm`,
    '--paper-height': `${spec.heightMm}mm`,
    '--paper-margin': `${spec.marginMm}mm`,
  } as CSSProperties;
  return (
    <div className="print-root">
      <title>{`Poster · ${c.name} · MDM Console`}</title>
      <style>{pageRule(spec)}</style>
      <div className="print-toolbar no-print">
        <Container size="lg" py="sm">
          <Group justify="space-between">
            <Group gap="sm">
              <Button component={Link} to={`/codes/${c.id}`} variant="subtle" leftSection={<IconArrowLeft size={16} />}>
                {c.name}
              </Button>
              <div>
                <Title order={1} size="h3">
                  Poster
                </Title>
                <Text size="xs" c="dimmed">
                  One {spec.label} page to put up where people enroll
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
                onChange={(v) => setPaper(v as Paper)}
              />
              <Button leftSection={<IconPrinter size={16} />} disabled={!loaded} onClick={() => window.print()}>
                Print
              </Button>
            </Group>
          </Group>
        </Container>
      </div>
      <div style={style} data-testid="code-poster" data-paper={paper} data-ready={loaded}>
        <section className="sheet-page poster-page">
          <h1>{c.name}</h1>
          <p className="poster-lead">Enroll your phone or tablet</p>
          <img
            src={`/api/codes/${c.id}/qr.svg?v=${shortFingerprint(c.deeplink)}`}
            alt={`Enrollment QR code ${c.name}`}
            onLoad={() => setLoaded(true)}
            onError={() => setLoaded(true)}
          />
          <ol className="poster-steps">
            <li>Install the MDM agent app on your device.</li>
            <li>Scan this code with the app (or the camera) and confirm.</li>
            <li>
              Enter <strong>your own work email address</strong>
              {c.domains.length ? <> — it must end in {c.domains.map((d) => `@${d}`).join(' or ')}</> : null}.
            </li>
            {c.approval === 'manual' ? <li>Wait for your IT team to approve the device.</li> : null}
          </ol>
          <div className="poster-help">
            {contact.length ? <>Help: {contact.join(' · ')}</> : <>Questions? Ask your IT team.</>}
            {c.expires_at ? <div className="expiry">Valid until {formatDate(c.expires_at)}</div> : null}
          </div>
        </section>
      </div>
    </div>
  );
}
