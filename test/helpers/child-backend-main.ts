// Runs a backend in a process of its own (options as JSON in argv[2]) so a test can measure its
// memory or give it its own file-descriptor limit. Prints the server info as one JSON line.
import { startBackend } from '../../src-main/backend/server.ts';

const backend = await startBackend(JSON.parse(process.argv[2] ?? '{}'));
process.stdout.write(`${JSON.stringify(backend.info)}\n`);
const stop = () => void backend.close().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
