// A report's chart as a PNG and its data as CSV, made in the browser: the chart's SVG (recharts,
// under Mantine's charts) is copied with its computed colours and fonts written in (an SVG drawn as
// an image sees no page CSS, so `var(--mantine-color-…)` would be black), drawn on a canvas under
// the report's title, and saved; the CSV is the points the chart shows, one line per day.
import type { Report } from '../../src-shared/contract/index.ts';

export { reportCsv } from '../../src-shared/report-csv.ts';

/** The chart's rows: one per day, `day` then each series' value (null: no sample that day). */
export function chartRows(report: Report): Record<string, string | number | null>[] {
  return report.points.map((point) => ({ day: point.day, ...point.values }));
}

/** The file name a download gets: `enrollments-2026-10-28-to-2026-11-26.csv`, with the fleet when one is chosen. */
export function reportFileName(report: Report, extension: 'csv' | 'png', fleetName?: string): string {
  const fleet = fleetName
    ? `-${fleetName
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, '-')
        .replace(/^-|-$/g, '')}`
    : '';
  return `${report.report}${fleet}-${report.from}-to-${report.to}.${extension}`;
}

/** Saves a blob under a name (an anchor with `download`, clicked). */
export function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const anchor = document.createElement('a');
  anchor.href = url;
  anchor.download = name;
  document.body.append(anchor);
  anchor.click();
  anchor.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

const STYLE_PROPERTIES = [
  'fill',
  'fill-opacity',
  'stroke',
  'stroke-width',
  'stroke-opacity',
  'stroke-dasharray',
  'opacity',
  'font-family',
  'font-size',
  'font-weight',
  'text-anchor',
  'dominant-baseline',
  'visibility',
  'display',
] as const;

/** A copy of `svg` that draws the same outside the page: every element's computed style written on it. */
function standalone(svg: SVGSVGElement): { markup: string; width: number; height: number } {
  const { width, height } = svg.getBoundingClientRect();
  const copy = svg.cloneNode(true) as SVGSVGElement;
  const originals = [svg, ...svg.querySelectorAll('*')];
  const copies = [copy, ...copy.querySelectorAll('*')];
  originals.forEach((original, index) => {
    const target = copies[index] as SVGElement | undefined;
    if (!target) return;
    const computed = getComputedStyle(original);
    const style = STYLE_PROPERTIES.map((name) => `${name}:${computed.getPropertyValue(name)}`).join(';');
    target.setAttribute('style', style);
  });
  copy.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
  copy.setAttribute('width', String(Math.ceil(width)));
  copy.setAttribute('height', String(Math.ceil(height)));
  return { markup: new XMLSerializer().serializeToString(copy), width: Math.ceil(width), height: Math.ceil(height) };
}

/**
 * The chart inside `container` as a PNG: its SVG drawn at twice its size on a white canvas (dark:
 * the page's background), under `title` and a line of `legend` (the series' names and colours).
 */
export async function chartPng(container: HTMLElement, title: string, legend: { label: string; color: string }[]): Promise<Blob> {
  const svg = container.querySelector<SVGSVGElement>('svg.recharts-surface');
  if (!svg) throw new Error('The chart has not been drawn yet');
  const { markup, width, height } = standalone(svg);
  const image = new Image();
  image.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(markup)}`;
  await image.decode();
  const scale = 2;
  const canvasWidth = width + 32;
  const page = getComputedStyle(document.body);
  const canvas = document.createElement('canvas');
  const context = canvas.getContext('2d');
  if (!context) throw new Error('This browser cannot draw on a canvas');
  // The legend's items laid out first, wrapped to the chart's width: they set where the chart starts.
  context.font = `12px ${page.fontFamily}`;
  const placed: { label: string; color: string; x: number; y: number }[] = [];
  let x = 16;
  let y = 40;
  for (const item of legend) {
    const itemWidth = 14 + context.measureText(item.label).width + 16;
    if (x > 16 && x + itemWidth > canvasWidth - 16) {
      x = 16;
      y += 18;
    }
    placed.push({ ...item, x, y });
    x += itemWidth;
  }
  const top = y + 24;
  canvas.width = canvasWidth * scale;
  canvas.height = (height + top + 16) * scale;
  context.scale(scale, scale);
  context.fillStyle = page.backgroundColor || '#ffffff';
  context.fillRect(0, 0, canvasWidth, height + top + 16);
  context.fillStyle = page.color || '#000000';
  context.font = `600 16px ${page.fontFamily}`;
  context.fillText(title, 16, 26);
  context.font = `12px ${page.fontFamily}`;
  for (const item of placed) {
    context.fillStyle = item.color;
    context.fillRect(item.x, item.y, 10, 10);
    context.fillStyle = page.color || '#000000';
    context.fillText(item.label, item.x + 14, item.y + 9);
  }
  context.drawImage(image, 16, top, width, height);
  return new Promise((resolve, reject) =>
    canvas.toBlob((blob) => (blob ? resolve(blob) : reject(new Error('The PNG could not be made'))), 'image/png'),
  );
}
