import { BlockList, isIP } from 'node:net';

/**
 * The balancers whose X-Forwarded-For a listener believes (`serve --trust-proxy`, env
 * MDM_CONSOLE_TRUST_PROXY): addresses and CIDR ranges, comma-separated. A request from one of them
 * has the forwarded client as `request.ip` (Fastify's `trustProxy`); from any other address the
 * header is ignored. Never "everyone": a device could then pick its own address for every limit.
 */
export function parseTrustProxy(text: string, source = '--trust-proxy'): string[] {
  const entries = text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  for (const entry of entries) {
    const [address = '', prefix, extra] = entry.split('/');
    const family = isIP(address);
    const bits = family === 4 ? 32 : 128;
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits);
    if (family === 0 || !prefixOk || extra !== undefined)
      throw new Error(
        `${source}: "${entry.slice(0, 100)}" is not an address or a CIDR range (such as 127.0.0.1, 10.0.0.0/8 or ::1)`,
      );
  }
  return entries;
}

/**
 * Whether a socket's address is one of the trusted balancers (`parseTrustProxy`'s entries): the
 * agent listener does not cap such an address's connections per address, since every device behind
 * the balancer arrives from it (they still count in the listener's total).
 */
export function trustedProxyMatcher(entries: readonly string[]): (address: string) => boolean {
  if (entries.length === 0) return () => false;
  const list = new BlockList();
  for (const entry of entries) {
    const [address = '', prefix] = entry.split('/');
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(prefix), family);
  }
  return (address) => {
    // An IPv4 client of a dual-stack listener appears as ::ffff:a.b.c.d.
    const plain = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
    const family = isIP(plain);
    return family !== 0 && list.check(plain, family === 6 ? 'ipv6' : 'ipv4');
  };
}
