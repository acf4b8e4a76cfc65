// The embedded broker's two listeners, plain MQTT and MQTT over TLS, both handing their sockets to aedes.
import type { Aedes } from 'aedes';
import { createServer as createTcpServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { BrokerConnections, type ConnectionShare } from '../connection-cap.ts';
import type { BrokerCertificate } from '../tls-certificate.ts';

export interface Listeners {
  port: number;
  tlsPort: number;
  /** Every open connection of both listeners, capped (connection-cap.ts). */
  connections: BrokerConnections;
  /** Stops listening; `closed` resolves once the servers have, `destroy` ends the sockets left. */
  stop(): { closed: Promise<unknown>; destroy(): void };
}

function listen(server: Server, port: number, host: string, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      // Keeps code and port: startup-error.ts words it, naming the option that changes it.
      reject(Object.assign(error, { port: (error as { port?: number }).port ?? port, listener: what }));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

const ignore = () => {};

const closeServer = (server: Server) =>
  new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));

/**
 * Listens on `port` and `tlsPort` (0 = any free port). Beyond its share of descriptors
 * (`maxConnections`) a listener makes room by closing a connection that has not logged in, else
 * drops the newcomer before it costs anything. On failure nothing is left listening.
 */
export async function startListeners(
  aedes: Aedes,
  options: {
    host: string;
    port: number;
    tlsPort: number;
    certificate: BrokerCertificate;
    maxConnections?: number | undefined;
    connectionShare?: ConnectionShare | undefined;
  },
): Promise<Listeners> {
  const accept = (socket: Socket) => {
    if (!socket.destroyed) aedes.handle(socket); // not one the cap refused
  };
  const tcpServer = createTcpServer();
  const { certificate } = options;
  const tlsServer = createTlsServer({ cert: certificate.cert, key: certificate.key, minVersion: 'TLSv1.2' }, (socket) => {
    socket.on('error', ignore);
    accept(socket);
  });
  tlsServer.on('tlsClientError', ignore); // failed handshakes: the client sees them, nothing to do here
  // Counted (and given their error and close handlers) before aedes sees them.
  const connections = new BrokerConnections([tcpServer, tlsServer], options.maxConnections, options.connectionShare);
  tcpServer.on('connection', accept);
  const closeBoth = () => Promise.all([closeServer(tcpServer), closeServer(tlsServer)]);
  try {
    const port = await listen(tcpServer, options.port, options.host, 'MQTT');
    const tlsPort = await listen(tlsServer, options.tlsPort, options.host, 'MQTT TLS');
    return {
      port,
      tlsPort,
      connections,
      stop: () => ({ closed: closeBoth(), destroy: () => connections.destroyAll() }),
    };
  } catch (error) {
    await closeBoth();
    throw error;
  }
}
