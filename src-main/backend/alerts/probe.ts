import { connect } from 'node:net';

/** Whether a TCP connection to host:port opens within `timeoutMs`: null when it does, else why not. */
export function tcpProblem(host: string, port: number, timeoutMs = 5000): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (problem: string | null) => {
      socket.removeAllListeners();
      socket.on('error', () => {});
      socket.destroy();
      resolve(problem);
    };
    socket.setTimeout(timeoutMs, () => done(`no connection to ${host}:${port} within ${timeoutMs / 1000} s`));
    socket.once('connect', () => done(null));
    socket.once('error', (error: NodeJS.ErrnoException) =>
      done(`cannot connect to ${host}:${port}: ${error.code ?? error.message}`),
    );
  });
}
