/** Parses CSV text (RFC 4180: quotes, doubled quotes, CRLF, `,` or `;` separators) into rows. */
export function parseCsv(text: string): string[][] {
  const source = text.replace(/^\uFEFF/, '');
  const firstLine = source.split(/\r?\n/, 1)[0] ?? '';
  const separator = firstLine.includes(';') && !firstLine.includes(',') ? ';' : ',';
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < source.length; i++) {
    const char = source[i]!;
    if (quoted) {
      if (char === '"' && source[i + 1] === '"') {
        field += '"';
        i++;
      } else if (char === '"') quoted = false;
      else field += char;
    } else if (char === '"' && field === '') quoted = true;
    else if (char === separator) {
      row.push(field);
      field = '';
    } else if (char === '\n' || char === '\r') {
      if (char === '\r' && source[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += char;
  }
  if (quoted) throw new Error('the file ends inside a quoted field');
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows;
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
