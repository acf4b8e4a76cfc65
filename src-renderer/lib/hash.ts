/** A short, stable fingerprint of a string (FNV-1a, 32 bits, base 36): cache-busts QR image URLs. */
export function shortFingerprint(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(36);
}
