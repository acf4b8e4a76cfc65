// The one quote-aware splitter (RFC 4180: quoted fields, doubled quotes, CRLF/LF/CR line ends, a
// leading BOM), shared by the console's CSV import, the CLI's `invite --csv` and the backend's
// deeplink codec. The device simulator keeps its own on purpose: it is the wire's oracle.

export class DelimitedTextError extends Error {
  override name = 'DelimitedTextError';
}

/** The separator spreadsheets export with (`,`, `;` or tab), guessed from the first line outside quotes. */
export function detectSeparator(text: string): ',' | ';' | '\t' {
  let quoted = false;
  const counts = { ',': 0, ';': 0, '\t': 0 };
  for (const char of text) {
    if (char === '"') quoted = !quoted;
    else if (!quoted && (char === '\n' || char === '\r')) break;
    else if (!quoted && (char === ',' || char === ';' || char === '\t')) counts[char]++;
  }
  if (counts['\t'] > counts[','] && counts['\t'] >= counts[';']) return '\t';
  if (counts[';'] > counts[',']) return ';';
  return ',';
}

/** One record and the line of the text it starts on (1-based; a quoted field may span lines). */
export interface DelimitedRecord {
  fields: string[];
  line: number;
}

/**
 * Records of `input`, each a list of fields. With `multiline` false the whole input is one record
 * and line breaks are ordinary characters (a deeplink's data line).
 */
export function parseDelimited(input: string, separator: string, multiline = true): string[][] {
  return parseDelimitedRecords(input, separator, multiline).map((record) => record.fields);
}

/** As parseDelimited, with the line each record starts on, so a problem can name its line of the file. */
export function parseDelimitedRecords(input: string, separator: string, multiline = true): DelimitedRecord[] {
  const text = input.replace(/^\uFEFF/, '');
  const rows: DelimitedRecord[] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  let wasQuoted = false;
  let line = 1;
  let start = 1;
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (quoted) {
      if (char === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else quoted = false;
      } else {
        if (char === '\n' || (char === '\r' && text[i + 1] !== '\n')) line++;
        field += char;
      }
      continue;
    }
    if (char === '"' && field.trim() === '' && !wasQuoted) {
      quoted = true;
      wasQuoted = true;
      field = '';
    } else if (char === separator) {
      row.push(field);
      field = '';
      wasQuoted = false;
    } else if (multiline && (char === '\n' || char === '\r')) {
      if (char === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push({ fields: row, line: start });
      line++;
      start = line;
      row = [];
      field = '';
      wasQuoted = false;
    } else field += char;
  }
  if (quoted) throw new DelimitedTextError('The text ends inside a quoted field (a " is not closed)');
  if (field !== '' || row.length > 0 || !multiline) {
    row.push(field);
    rows.push({ fields: row, line: start });
  }
  return rows;
}
