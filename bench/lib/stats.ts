/** Percentile by nearest rank over unsorted samples (copied, not modified). */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = Float64Array.from(samples).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function median(samples: readonly number[]): number {
  return percentile(samples, 50);
}

export function mean(samples: readonly number[]): number {
  return samples.length === 0 ? Number.NaN : samples.reduce((a, b) => a + b, 0) / samples.length;
}

/** Rounds for the report: 3 significant digits, integers kept whole. */
export function round(value: number, digits = 3): number {
  if (!Number.isFinite(value) || value === 0) return value;
  if (Math.abs(value) >= 10 ** digits) return Math.round(value);
  return Number(value.toPrecision(digits));
}

export const MiB = 1024 * 1024;
