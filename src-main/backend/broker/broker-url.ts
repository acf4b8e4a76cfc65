// --mqtt-broker-url / --mqtt-public-url: mqtt[s]://USER:PASSWORD@HOST:PORT[,HOST:PORT…]

export interface BrokerAddress {
  host: string;
  port: number;
}

export interface BrokerUrl {
  tls: boolean;
  username: string;
  password: string;
  servers: BrokerAddress[];
  /** The URL without its credentials, to show. */
  display: string;
}

export class BrokerUrlError extends Error {}

/** rabbitmq: a secret the nodes can present; it goes unescaped into the user info of URLs in rabbitmq.conf. */
export const AUTH_SECRET_PATTERN = /^[A-Za-z0-9._~-]{16,}$/;

/** Parses the URL of an external broker; several hosts (a cluster) are comma-separated. */
export function parseBrokerUrl(text: string, what = '--mqtt-broker-url'): BrokerUrl {
  const match = /^(mqtts?):\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#]+)\/?$/.exec(text.trim());
  if (!match) throw new BrokerUrlError(`${what} must look like mqtt[s]://USER:PASSWORD@HOST:PORT[,HOST:PORT…], not "${text}"`);
  const [, scheme, user, pass, hostList] = match;
  const tls = scheme === 'mqtts';
  const servers = hostList!.split(',').map((entry) => {
    const hostPort = /^(\[[^\]]+\]|[^:]+)(?::(\d{1,5}))?$/.exec(entry.trim());
    const port = hostPort?.[2] === undefined ? (tls ? 8883 : 1883) : Number(hostPort[2]);
    if (!hostPort || port < 1 || port > 65535) throw new BrokerUrlError(`${what}: "${entry}" is not HOST:PORT`);
    return { host: hostPort[1]!.replace(/^\[|\]$/g, ''), port };
  });
  return {
    tls,
    username: decodeURIComponent(user ?? ''),
    password: decodeURIComponent(pass ?? ''),
    servers,
    display: `${scheme}://${user ? `${decodeURIComponent(user)}@` : ''}${hostList}`,
  };
}
