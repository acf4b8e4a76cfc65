/**
 * An incremental parser for the text/event-stream format (the HTML standard's rules), fed with
 * decoded text chunks as they arrive. EventSource only dispatches named events to listeners that
 * know the name in advance; the console wants every type, so it reads the stream itself.
 */
export interface SseMessage {
  /** The `event:` field, "message" when absent. */
  type: string;
  data: string;
  /** The last `id:` seen (it persists across messages, as in EventSource). */
  lastEventId: string;
}

export class SseParser {
  private buffer = '';
  private data: string[] = [];
  private type = '';
  private lastEventId = '';
  private pendingId: string | null = null;
  /** The server's `retry:` value in ms, when it sent one. */
  retry: number | null = null;

  /** A \r ended the previous chunk: a \n starting this one belongs to that line end. */
  private afterCr = false;

  /** Feeds a chunk; returns the messages it completed. */
  push(chunk: string): SseMessage[] {
    if (chunk === '') return [];
    if (this.afterCr && chunk.startsWith('\n')) chunk = chunk.slice(1);
    this.afterCr = false;
    this.buffer += chunk;
    const out: SseMessage[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (!match) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      // A lone \r at the very end may be the first half of \r\n split across chunks.
      if (match[0] === '\r' && this.buffer === '') this.afterCr = true;
      const message = this.line(line);
      if (message) out.push(message);
    }
    return out;
  }

  private line(line: string): SseMessage | null {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'data':
        this.data.push(value);
        break;
      case 'event':
        this.type = value;
        break;
      case 'id':
        if (!value.includes('\0')) this.pendingId = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retry = Number(value);
        break;
    }
    return null;
  }

  private dispatch(): SseMessage | null {
    if (this.pendingId !== null) {
      this.lastEventId = this.pendingId;
      this.pendingId = null;
    }
    const type = this.type || 'message';
    const data = this.data;
    this.type = '';
    this.data = [];
    if (data.length === 0) return null;
    return { type, data: data.join('\n'), lastEventId: this.lastEventId };
  }
}
