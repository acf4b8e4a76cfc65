// The console's CSV import reads files with the shared splitter (src-shared/delimited.ts).
import { DelimitedTextError, detectSeparator, parseDelimited } from '../../src-shared/delimited.ts';

export { detectSeparator, DelimitedTextError as CsvError };

export function parseCsv(input: string, separator = detectSeparator(input.replace(/^\uFEFF/, ''))): string[][] {
  return parseDelimited(input, separator);
}
