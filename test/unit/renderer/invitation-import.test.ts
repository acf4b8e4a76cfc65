import { describe, expect, it } from 'vitest';
import { createInBatches, validateInChunks } from '../../../src-renderer/lib/bulk-create.ts';
import { detectSeparator, parseCsv } from '../../../src-renderer/lib/csv.ts';
import { emailProblem } from '../../../src-renderer/lib/email.ts';
import { isValidEmail } from '../../../src-shared/contract/rules.ts';
import {
  chunk,
  mergeServerErrors,
  parseCsvText,
  parsePasted,
  toInvitationInput,
  validateRows,
  type ImportRow,
} from '../../../src-renderer/lib/invitation-import.ts';

const emails = (rows: ImportRow[]) => rows.map((row) => row.email);

describe('CSV', () => {
  it('handles quotes, doubled quotes, CRLF, a BOM and spreadsheet separators', () => {
    expect(parseCsv('\uFEFFemail,name\r\n"a@x.io","Doe, ""J"""\r\n')).toEqual([
      ['email', 'name'],
      ['a@x.io', 'Doe, "J"'],
    ]);
    expect(detectSeparator('email;firstname\na@x.io;A')).toBe(';');
    expect(detectSeparator('email\tfirstname')).toBe('\t');
    expect(detectSeparator('"a;b",c')).toBe(',');
    expect(parseCsv('a;b\n1;2')).toEqual([
      ['a', 'b'],
      ['1', '2'],
    ]);
    expect(() => parseCsv('"open')).toThrow(/quoted field/);
  });

  it('names each row by its line of the file, also after a quoted cell that spans lines (as the CLI does)', () => {
    const text =
      'email,firstname\r\n\r\n"ada@example.com","Ada\r\nthe first"\nbob@example.com,Bob\n\ncy@example.com,"C\n\nY"\nd@example.com,D';
    expect(parseCsvText(text).rows.map((row) => [row.source, row.email])).toEqual([
      [3, 'ada@example.com'],
      [5, 'bob@example.com'],
      [7, 'cy@example.com'],
      [10, 'd@example.com'],
    ]);
    expect(parseCsvText('ada@example.com\n"bob@example.com\n"\ncy@example.com').rows.map((row) => row.source)).toEqual([1, 2, 4]);
  });

  it('reads a file with a header (aliases, any order, a full-name column), reporting ignored columns', () => {
    const result = parseCsvText('E-mail;Name;Group;Notes\nada@example.com;Ada King Lovelace;Sales;x\n\n');
    expect(result.errors).toEqual(['Ignored column(s): "Notes"']);
    expect(result.rows).toEqual([
      {
        source: 2,
        email: 'ada@example.com',
        firstname: 'Ada King',
        lastname: 'Lovelace',
        fleet: 'Sales',
        days: null,
        problems: [],
      },
    ]);
  });

  it('reads a headerless file: email first, or whichever cell has an @', () => {
    const result = parseCsvText('ada@example.com,Ada,Lovelace,Sales,30\nAlan,Turing,alan@example.com,Lab\n');
    expect(
      result.rows.map(({ email, firstname, lastname, fleet, days }) => ({ email, firstname, lastname, fleet, days })),
    ).toEqual([
      { email: 'ada@example.com', firstname: 'Ada', lastname: 'Lovelace', fleet: 'Sales', days: 30 },
      { email: 'alan@example.com', firstname: 'Alan', lastname: 'Turing', fleet: 'Lab', days: null },
    ]);
  });

  it('says what is wrong with a lifetime that is not a number, and with an empty or broken file', () => {
    expect(parseCsvText('email,days\na@x.io,soon').rows[0]!.problems).toEqual(['lifetime "soon" is not a whole number of days']);
    expect(parseCsvText('\n\n').errors).toEqual(['The file is empty']);
    expect(parseCsvText('email\n"a@x.io').errors[0]).toMatch(/quoted field/);
  });
});

describe('pasted addresses', () => {
  it('takes commas, semicolons, spaces, new lines and "Name <address>"', () => {
    const { rows } = parsePasted(
      'Ada Lovelace <ada@example.com>, "Turing, Alan" <alan@example.com>\ngrace@example.com; linus@example.com ken@example.com\n\nmailto:tim@example.com',
    );
    expect(emails(rows)).toEqual([
      'ada@example.com',
      'alan@example.com',
      'grace@example.com',
      'linus@example.com',
      'ken@example.com',
      'tim@example.com',
    ]);
    expect(rows[0]).toMatchObject({ firstname: 'Ada', lastname: 'Lovelace', source: 1 });
    expect(rows[1]).toMatchObject({ firstname: 'Turing,', lastname: 'Alan' });
    expect(rows[2]!.source).toBe(2);
    expect(rows[5]!.source).toBe(4);
  });

  it('treats a pasted spreadsheet selection or CSV with a header as a table', () => {
    expect(parsePasted('ada@example.com\tAda\tLovelace').rows[0]).toMatchObject({
      email: 'ada@example.com',
      firstname: 'Ada',
      lastname: 'Lovelace',
    });
    expect(parsePasted('email,fleet\nada@example.com,Sales').rows[0]).toMatchObject({
      email: 'ada@example.com',
      fleet: 'Sales',
      source: 2,
    });
    expect(parsePasted('   ').rows).toEqual([]);
  });
});

describe('row validation', () => {
  it('checks addresses, duplicates (case-insensitive), names, fleets and lifetimes', () => {
    const { rows } = parseCsvText(
      'email,firstname,fleet,days\nada@example.com,,Sales,7\nADA@example.com,,,\nbad,,,\nb@example.com,,Nowhere,0\n,' +
        'x'.repeat(101) +
        ',,',
    );
    const checked = validateRows(rows, { fleets: ['Default fleet', 'sales'] });
    expect(checked.map((row) => row.problems)).toEqual([
      [],
      ['ada@example.com is already in line 2'],
      ['An email address needs an @'],
      ['unknown fleet "Nowhere"', 'lifetime must be 1 to 180 days'],
      ['An email address is required', 'first name is longer than 100 characters'],
    ]);
    // Validating again does not pile up messages.
    expect(validateRows(checked, { fleets: ['sales'] })[1]!.problems).toEqual(['ada@example.com is already in line 2']);
  });

  it('adds the server\'s "row N:" errors to the rows that were sent', () => {
    const rows = validateRows(parsePasted('a@example.com\nb@example.com\nbad').rows);
    const sent = rows.filter((row) => row.problems.length === 0);
    const merged = mergeServerErrors(rows, sent, ['row 2: Unknown fleet "X"', 'not a row error', 'row 9: out of range']);
    expect(merged.map((row) => row.problems)).toEqual([[], ['Unknown fleet "X"'], ['An email address needs an @']]);
  });

  it('builds API bodies with defaults for what a row leaves empty', () => {
    const [row] = parsePasted('Ada Lovelace <ada@example.com>').rows;
    expect(toInvitationInput(row!, { fleet: 'Sales', days: 30 })).toEqual({
      email: 'ada@example.com',
      firstname: 'Ada',
      lastname: 'Lovelace',
      fleet: 'Sales',
      days: 30,
    });
    expect(toInvitationInput({ ...row!, firstname: null, lastname: null })).toEqual({ email: 'ada@example.com' });
    expect(chunk([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(() => chunk([1], 0)).toThrow(RangeError);
  });

  it('agrees with the server on addresses and explains problems as they are typed', () => {
    expect(isValidEmail('first.last+tag@sub.example.co')).toBe(true);
    expect(isValidEmail('a@b')).toBe(false);
    expect(isValidEmail('a b@example.com')).toBe(false);
    expect(isValidEmail('a@-example.com')).toBe(false);
    expect(emailProblem('')).toBe('An email address is required');
    expect(emailProblem('', { required: false })).toBeNull();
    expect(emailProblem('ada@example')).toBe('The domain "example" needs a dot, as in example.com');
    expect(emailProblem('ada @example.com')).toBe('An email address has no spaces');
    expect(emailProblem('ada@example.com')).toBeNull();
  });
});

describe('creating in batches', () => {
  const rows = validateRows(parsePasted(Array.from({ length: 7 }, (_, i) => `p${i}@example.com`).join('\n')).rows);

  it('reports progress after each batch and keeps going after a refused one', async () => {
    const progress: string[] = [];
    const outcome = await createInBatches(
      rows,
      async (batch) => {
        if (batch[0]!.email === 'p3@example.com')
          throw Object.assign(new Error('1 row(s) are invalid'), { rows: ['row 2: taken'] });
        return batch.map((row) => ({ email: row.email }));
      },
      {
        batchSize: 3,
        onProgress: (done, total) => progress.push(`${done}/${total}`),
        errorOf: (error) => ({ message: (error as Error).message, errors: (error as { rows: string[] }).rows }),
      },
    );
    expect(progress).toEqual(['0/7', '3/7', '6/7', '7/7']);
    expect(outcome.created.map(({ item }) => item.email)).toEqual([
      'p0@example.com',
      'p1@example.com',
      'p2@example.com',
      'p6@example.com',
    ]);
    expect(outcome.failed.map(({ row, message }) => `${row.email}: ${message}`)).toEqual([
      'p3@example.com: Not created: another row of its batch was refused',
      'p4@example.com: taken',
      'p5@example.com: Not created: another row of its batch was refused',
    ]);
  });

  it('marks every row of a batch that failed without row errors, and stops when cancelled', async () => {
    const controller = new AbortController();
    const outcome = await createInBatches(
      rows,
      async (batch) => {
        controller.abort();
        if (batch.length) throw new Error('The console cannot reach its server.');
        return [];
      },
      { batchSize: 5, signal: controller.signal },
    );
    expect(outcome.failed.slice(0, 5).every(({ message }) => message === 'The console cannot reach its server.')).toBe(true);
    expect(outcome.failed.slice(5).map(({ message }) => message)).toEqual([
      'Cancelled before it was sent',
      'Cancelled before it was sent',
    ]);
  });
});

describe('checking more rows than one request takes', () => {
  it('asks in chunks and numbers every error as a position in the whole import', async () => {
    const rows = Array.from({ length: 12 }, (_, i) => `r${i + 1}`);
    const asked: string[][] = [];
    // A stand-in for the server's rule: it refuses rows whose name ends in 5 or 1, numbering within its request.
    const errors = await validateInChunks(
      rows,
      async (part) => {
        asked.push(part);
        return part.flatMap((row, i) => (/[15]$/.test(row) ? [`row ${i + 1}: ${row} refused`] : []));
      },
      5,
    );
    expect(asked.map((part) => part.length)).toEqual([5, 5, 2]);
    expect(errors).toEqual(['row 1: r1 refused', 'row 5: r5 refused', 'row 11: r11 refused']);
  });
});
