/** Print sheets: paper sizes and how invitation cards are laid out on them. */
export type Paper = 'a4' | 'letter';

export interface PaperSpec {
  label: string;
  /** CSS @page size keyword. */
  css: string;
  widthMm: number;
  heightMm: number;
  marginMm: number;
  columns: number;
  rows: number;
}

export const PAPERS: Record<Paper, PaperSpec> = {
  a4: { label: 'A4', css: 'A4', widthMm: 210, heightMm: 297, marginMm: 10, columns: 2, rows: 3 },
  letter: { label: 'Letter', css: 'letter', widthMm: 215.9, heightMm: 279.4, marginMm: 10, columns: 2, rows: 3 },
};

export function isPaper(value: unknown): value is Paper {
  return value === 'a4' || value === 'letter';
}

/** A4 where the locale uses it, Letter in the US and Canada (and the Americas that follow them). */
export function defaultPaper(locale: string): Paper {
  const region = /[-_]([A-Z]{2})\b/.exec(locale)?.[1];
  return region && ['US', 'CA', 'MX', 'PH', 'CL', 'CO', 'VE'].includes(region) ? 'letter' : 'a4';
}

/** The size of one card, in mm, with `gapMm` between cards. */
export function cardSize(paper: PaperSpec, gapMm = 6): { widthMm: number; heightMm: number } {
  const innerWidth = paper.widthMm - 2 * paper.marginMm;
  const innerHeight = paper.heightMm - 2 * paper.marginMm;
  return {
    widthMm: (innerWidth - gapMm * (paper.columns - 1)) / paper.columns,
    heightMm: (innerHeight - gapMm * (paper.rows - 1)) / paper.rows,
  };
}

/** Splits the cards into pages of columns × rows. */
export function paginate<T>(items: readonly T[], paper: PaperSpec): T[][] {
  const perPage = paper.columns * paper.rows;
  const pages: T[][] = [];
  for (let i = 0; i < items.length; i += perPage) pages.push(items.slice(i, i + perPage));
  return pages;
}

/** The `@page` rule for the chosen paper (the browser's print dialog and Electron's PDF use it). */
export function pageRule(paper: PaperSpec): string {
  return `@page { size: ${paper.css} portrait; margin: ${paper.marginMm}mm; }`;
}

/**
 * `?ids=1,2,3&paper=a4[&all=1]` ⇄ state. Unknown or repeated ids are dropped, order kept. `all`:
 * print cards for used, revoked and expired invitations too (left out unless asked).
 */
export function parsePrintQuery(search: string): { ids: number[]; paper: Paper | null; all: boolean } {
  const params = new URLSearchParams(search);
  const ids: number[] = [];
  for (const part of (params.get('ids') ?? '').split(',')) {
    const id = Number(part);
    if (Number.isInteger(id) && id > 0 && !ids.includes(id)) ids.push(id);
  }
  const paper = params.get('paper');
  return { ids, paper: isPaper(paper) ? paper : null, all: params.get('all') === '1' };
}

export function printQuery(ids: readonly number[], paper?: Paper, { all = false } = {}): string {
  const params = new URLSearchParams();
  params.set('ids', ids.join(','));
  if (paper) params.set('paper', paper);
  if (all) params.set('all', '1');
  return `?${params.toString().replace(/%2C/g, ',')}`;
}
