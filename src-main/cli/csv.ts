import { detectSeparator, parseDelimited } from '../../src-shared/delimited.ts';

/** Rows of CSV text (`,`, `;` or tab separated), with the console's splitter. */
export function parseCsv(text: string): string[][] {
  return parseDelimited(text, detectSeparator(text.replace(/^\uFEFF/, '')));
}

export interface CsvInvitation {
  email: string;
  firstname?: string;
  lastname?: string;
  fleet?: string;
}

/** Rows of an invitations CSV: header row naming `email` and optionally firstname, lastname, fleet. */
export function invitationsFromCsv(text: string): CsvInvitation[] {
  const rows = parseCsv(text).filter((row) => row.some((cell) => cell.trim() !== ''));
  const header = rows.shift()?.map((name) => name.trim().toLowerCase());
  if (!header || !header.includes('email')) throw new Error('the first row must be a header naming an "email" column');
  const known = ['email', 'firstname', 'lastname', 'fleet'];
  const unknown = header.filter((name) => name && !known.includes(name));
  if (unknown.length) throw new Error(`unknown column(s) ${unknown.join(', ')}; expected ${known.join(', ')}`);
  return rows.map((cells) => {
    const value = (name: string) => {
      const index = header.indexOf(name);
      const cell = index >= 0 ? cells[index]?.trim() : undefined;
      return cell ? cell : undefined;
    };
    return { email: value('email') ?? '', firstname: value('firstname'), lastname: value('lastname'), fleet: value('fleet') };
  });
}
