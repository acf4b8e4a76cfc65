// The console's CSV import reads files with the shared splitter (src-shared/delimited.ts).
import {
  DelimitedTextError,
  detectSeparator,
  parseDelimited,
  parseDelimitedRecords,
  type DelimitedRecord,
} from '../../src-shared/delimited.ts';

export { detectSeparator, DelimitedTextError as CsvError };

export function parseCsv(input: string, separator = detectSeparator(input.replace(/^\uFEFF/, ''))): string[][] {
  return parseDelimited(input, separator);
}

/** The records with the line of the file each starts on. */
export function parseCsvRecords(input: string, separator = detectSeparator(input.replace(/^\uFEFF/, ''))): DelimitedRecord[] {
  return parseDelimitedRecords(input, separator);
}
