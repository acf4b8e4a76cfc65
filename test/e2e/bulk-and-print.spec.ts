import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { admin, decodeQrOf, expect, SCREENSHOTS, shot, test } from './fixtures.ts';

function pdfPages(pdf: Buffer): { count: number; sizes: string[] } {
  const text = pdf.toString('latin1');
  const pages = text.match(/\/Type\s*\/Page(?![s\w])/g) ?? [];
  const sizes = [...text.matchAll(/\/MediaBox\s*\[\s*([\d.\s]+)\]/g)].map((m) =>
    m[1]!
      .trim()
      .split(/\s+/)
      .map((n) => Math.round(Number(n)))
      .join(' '),
  );
  return { count: pages.length, sizes };
}

test('bulk import from a CSV with a bad row: all or nothing unless told to skip it, then a print sheet', async ({
  page,
}, testInfo) => {
  const stamp = Date.now();
  const good = Array.from({ length: 30 }, (_, i) => `person${i}.${stamp}@example.com,First${i},Last${i}`);
  // A long address, to see where it wraps in the preview.
  good[3] = `alexandra.worthington-smythe.${stamp}@subsidiary.example-corporation.com,Alexandra,Worthington`;
  const csv = ['email,firstname,lastname', ...good.slice(0, 10), `not-an-address,Bad,Row`, ...good.slice(10)].join('\r\n');

  await page.goto('/invitations');
  await page.getByRole('button', { name: 'Invite many' }).click();
  const dialog = page.getByRole('dialog', { name: 'Invite many people' });
  await dialog.getByRole('tab', { name: 'CSV file' }).click();
  await dialog
    .locator('input[type="file"]')
    .setInputFiles({ name: 'people.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });

  // Every row checked in the preview; the bad one says why, named by its line of the file.
  const preview = dialog.getByTestId('bulk-preview');
  await expect(preview.locator('tbody tr')).toHaveCount(31);
  const bad = preview.locator('tbody tr[data-valid="false"]');
  await expect(bad).toHaveCount(1);
  await expect(bad).toContainText('not-an-address');
  await expect(bad).toContainText('needs an @');
  await expect(bad.locator('td').first()).toHaveText('12');
  // The CLI's rule: nothing is created while a row has a problem, unless the admin skips those rows.
  await expect(dialog.getByTestId('bulk-counts')).toHaveText('31 rows: 30 ready, 1 with problems (fix them, or skip them).');
  await expect(dialog.getByRole('button', { name: 'Create 30 invitations' })).toBeDisabled();

  // The long address wraps only after its @ or before a dot, never inside a word.
  const starts = await preview
    .locator('tbody tr', { hasText: 'alexandra.' })
    .locator('td')
    .nth(1)
    .evaluate((cell) => {
      // The little of the DOM this reads (this project's TypeScript has no DOM library).
      interface TextNode {
        textContent: string | null;
      }
      interface Doc {
        createTreeWalker(root: unknown, what: number): { nextNode(): TextNode | null };
        createRange(): {
          setStart(n: TextNode, i: number): void;
          setEnd(n: TextNode, i: number): void;
          getBoundingClientRect(): { top: number };
        };
      }
      const doc = (globalThis as unknown as { document: Doc }).document;
      const text = (cell as unknown as TextNode).textContent ?? '';
      const walker = doc.createTreeWalker(cell, 4 /* NodeFilter.SHOW_TEXT */);
      const tops: { top: number; index: number }[] = [];
      let offset = 0;
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const length = node.textContent?.length ?? 0;
        for (let i = 0; i < length; i++) {
          const range = doc.createRange();
          range.setStart(node, i);
          range.setEnd(node, i + 1);
          tops.push({ top: Math.round(range.getBoundingClientRect().top), index: offset + i });
        }
        offset += length;
      }
      const lines = tops.filter((t, i) => i === 0 || t.top > tops[i - 1]!.top + 2).map((t) => t.index);
      return { text, lines };
    });
  expect(starts.lines.length, 'the long address wraps in this column').toBeGreaterThan(1);
  for (const index of starts.lines.slice(1)) {
    const before = starts.text[index - 1];
    const at = starts.text[index];
    expect(before === '@' || at === '.', `a line starts at "${starts.text.slice(index)}"`).toBe(true);
  }

  await dialog.getByRole('checkbox', { name: 'Skip the 1 row with problems and create the others' }).check();
  await expect(dialog.getByTestId('bulk-counts')).toHaveText('31 rows: 30 ready, 1 with problems (they will be skipped).');
  await shot(page, 'invitations-bulk-preview', testInfo);

  await dialog.getByRole('button', { name: 'Create 30 invitations' }).click();
  const summary = dialog.getByTestId('bulk-summary');
  await expect(summary).toContainText('30 created');
  await expect(summary).toContainText('1 skipped');
  // 30 emails through a real SMTP server: give the mail worker more than the default 10 s.
  await expect(summary.getByTestId('mail-progress')).toContainText('30 of 30 written to the outbox', { timeout: 30_000 });
  await shot(page, 'invitations-bulk-summary', testInfo);
  const listed = await admin.invitations.list({ query: { q: String(stamp) } });
  expect(listed.total).toBe(30);

  // A print sheet of what was just created: 30 cards, 6 a page.
  await summary.getByRole('button', { name: 'Print sheet for these' }).click();
  await expect(page).toHaveURL(/\/print\?ids=/);
  await expect(page.getByTestId('sheet-card')).toHaveCount(30);
  await expect(page.locator('section.sheet-page')).toHaveCount(5);
});

test('pasted addresses: names, separators and duplicates', async ({ page }, testInfo) => {
  const stamp = Date.now();
  await page.goto('/invitations?bulk=1');
  const dialog = page.getByRole('dialog', { name: 'Invite many people' });
  await dialog
    .getByRole('textbox', { name: 'Addresses' })
    .fill(
      `Barbara Liskov <barbara.${stamp}@example.com>, edsger.${stamp}@example.com\nken.${stamp}@example.com; barbara.${stamp}@example.com\nradia.${stamp}@example`,
    );
  const preview = dialog.getByTestId('bulk-preview');
  await expect(preview.locator('tbody tr')).toHaveCount(5);
  await expect(preview.locator('tbody tr').first()).toContainText('Barbara Liskov');
  await expect(preview.locator('tbody tr[data-valid="false"]')).toHaveCount(2);
  await expect(preview).toContainText('is already in line 1');
  await expect(preview).toContainText('needs a dot');
  await shot(page, 'invitations-bulk-paste', testInfo);
  await expect(dialog.getByRole('button', { name: 'Create 3 invitations' })).toBeDisabled();
  await dialog.getByRole('checkbox', { name: 'Skip the 2 rows with problems and create the others' }).check();
  await dialog.getByRole('button', { name: 'Create 3 invitations' }).click();
  await expect(dialog.getByTestId('bulk-summary')).toContainText('3 created');
  await dialog.getByRole('button', { name: 'Done' }).click();
  await expect(dialog).toBeHidden();
  // The list is current without a reload.
  await page.getByLabel('Search invitations').fill(String(stamp));
  await expect(page.getByTestId('invitations-table').locator('tbody tr')).toHaveCount(3);
  await shot(page, 'invitations-list', testInfo);
});

test.describe('print sheet at print resolution', () => {
  test.use({ deviceScaleFactor: 2 });
  test('print sheet: selected invitations on A4 and Letter, print stylesheet, PDF pages, scannable cards', async ({
    page,
  }, testInfo) => {
    const stamp = Date.now();
    await admin.settings.update({
      body: { helpdesk_name: 'IT Desk', helpdesk_phone: '+1 555 0100', helpdesk_email: 'help@example.com' },
    });
    const { items } = await admin.invitations.createMany({
      body: {
        invitations: Array.from({ length: 8 }, (_, i) => ({
          email: `card${i}.${stamp}@example.com`,
          firstname: `Card`,
          lastname: `Holder ${i}`,
        })),
        send_email: false,
      },
    });

    await page.goto(`/invitations?q=${stamp}`);
    const table = page.getByTestId('invitations-table');
    await expect(table.locator('tbody tr')).toHaveCount(8);
    await page.getByLabel('Select all on this page').check();
    await page.getByRole('button', { name: 'Print sheet (8)' }).click();
    await expect(page).toHaveURL(/\/print\?ids=/);

    const sheet = page.getByTestId('print-sheet');
    await expect(sheet).toHaveAttribute('data-ready', 'true');
    await expect(page.getByTestId('sheet-card')).toHaveCount(8);
    await expect(page.locator('section.sheet-page')).toHaveCount(2);
    const first = page.getByTestId('sheet-card').first();
    await expect(first).toContainText('IT Desk · +1 555 0100 · help@example.com');
    await expect(first).toContainText('then scan this code');
    // The card's QR code scans to the invitation's deeplink.
    const id = Number(await first.getAttribute('data-invitation-id'));
    const invitation = items.find((item) => item.id === id);
    expect(await decodeQrOf(first.locator('img'))).toBe(invitation!.deeplink);
    await page.getByRole('radio', { name: 'A4' }).check({ force: true });
    const overflowing = () =>
      page
        .getByTestId('sheet-card')
        .evaluateAll((cards) => cards.filter((card) => card.scrollHeight > card.clientHeight + 1).length);
    expect(await overflowing()).toBe(0);
    await shot(page, 'print-sheet-a4', testInfo);

    // A4 by the print stylesheet: 2 pages of 210 × 297 mm.
    const a4Pdf = await page.pdf({ preferCSSPageSize: true, printBackground: true });
    writeFileSync(join(SCREENSHOTS, 'print-sheet-a4.pdf'), a4Pdf);
    const a4 = pdfPages(a4Pdf);
    expect(a4.count).toBe(2);
    expect(a4.sizes[0]).toBe('0 0 595 842');

    await page.getByText('Letter', { exact: true }).click();
    await expect(page).toHaveURL(/paper=letter/);
    await expect(sheet).toHaveAttribute('data-paper', 'letter');
    expect(await overflowing()).toBe(0);
    await shot(page, 'print-sheet-letter', testInfo);
    const letterPdf = await page.pdf({ preferCSSPageSize: true, printBackground: true });
    writeFileSync(join(SCREENSHOTS, 'print-sheet-letter.pdf'), letterPdf);
    const letter = pdfPages(letterPdf);
    expect(letter.count).toBe(2);
    expect(letter.sizes[0]).toBe('0 0 612 792');

    // What the print dialog gets: the cards only, no toolbar.
    await page.emulateMedia({ media: 'print' });
    await expect(page.locator('.print-toolbar')).toBeHidden();
    await shot(page, 'print-sheet-print-media', testInfo, { fullPage: true });
    await page.emulateMedia({ media: 'screen' });
    await admin.settings.update({ body: { helpdesk_name: '', helpdesk_phone: '', helpdesk_email: '' } });
  });
});

test('print sheet without a selection offers every pending invitation', async ({ page }, testInfo) => {
  await page.goto('/print');
  await expect(page.getByText('No invitations chosen')).toBeVisible();
  await shot(page, 'print-sheet-empty', testInfo);
  await page.getByRole('button', { name: /^All \d+ pending$/ }).click();
  await expect(page.getByTestId('print-sheet')).toHaveAttribute('data-ready', 'true', { timeout: 20_000 });
});
