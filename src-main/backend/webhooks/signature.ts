import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * A delivery's signature: HMAC-SHA256, keyed with the webhook's secret, of `<timestamp>.<body>`
 * (the timestamp is the X-MDM-Timestamp header, Unix seconds), as `sha256=<hex>`. Signing the
 * timestamp with the body means a captured delivery cannot be replayed later under a fresh time.
 */
export function signDelivery(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** What a receiver does (docs/alerts.md): recompute, compare in constant time, refuse an old timestamp. */
export function verifyDelivery(
  secret: string,
  headers: { signature: string | undefined; timestamp: string | undefined },
  body: string,
  nowSeconds = Math.floor(Date.now() / 1000),
  toleranceSeconds = 300,
): boolean {
  const timestamp = Number(headers.timestamp);
  if (!Number.isInteger(timestamp) || Math.abs(nowSeconds - timestamp) > toleranceSeconds) return false;
  const expected = Buffer.from(signDelivery(secret, timestamp, body));
  const given = Buffer.from(headers.signature ?? '');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
