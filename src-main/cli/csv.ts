import { detectSeparator, parseDelimitedRecords } from '../../src-shared/delimited.ts';

export interface CsvInvitation {
  email: string;
  firstname?: string;
  lastname?: string;
  fleet?: string;
  days?: number;
}

/** A row of the file and the line of the file it is on (the header is line 1), to name it by. */
export interface CsvRow {
  line: number;
  invitation: CsvInvitation;
}

/** Rows of an invitations CSV (`,`, `;` or tab separated): header row naming `email` and optionally firstname, lastname, fleet. */
export function invitationsFromCsv(text: string): CsvRow[] {
  const records = parseDelimitedRecords(text, detectSeparator(text.replace(/^\uFEFF/, ''))).filter((record) =>
    record.fields.some((cell) => cell.trim() !== ''),
  );
  const header = records.shift()?.fields.map((name) => name.trim().toLowerCase());
  if (!header || !header.includes('email')) throw new Error('the first row must be a header naming an "email" column');
  const known = ['email', 'firstname', 'lastname', 'fleet'];
  const unknown = header.filter((name) => name && !known.includes(name));
  if (unknown.length) throw new Error(`unknown column(s) ${unknown.join(', ')}; expected ${known.join(', ')}`);
  return records.map(({ fields, line }) => {
    const value = (name: string) => {
      const index = header.indexOf(name);
      const cell = index >= 0 ? fields[index]?.trim() : undefined;
      return cell ? cell : undefined;
    };
    return {
      line,
      invitation: {
        email: value('email') ?? '',
        firstname: value('firstname'),
        lastname: value('lastname'),
        fleet: value('fleet'),
      },
    };
  });
}
