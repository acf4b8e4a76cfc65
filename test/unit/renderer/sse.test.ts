import { describe, expect, it } from 'vitest';
import { SseParser } from '../../../src-renderer/lib/sse.ts';

describe('SseParser (text/event-stream)', () => {
  it('parses named events with ids and JSON data, as the admin stream sends them', () => {
    const parser = new SseParser();
    const out = parser.push('retry: 2000\n\nid: 7\nevent: agent.enrolled\ndata: {"id":7}\n\n');
    expect(out).toEqual([{ type: 'agent.enrolled', data: '{"id":7}', lastEventId: '7' }]);
    expect(parser.retry).toBe(2000);
  });

  it('joins chunks split anywhere, including between \\r and \\n', () => {
    const parser = new SseParser();
    const text = 'id: 1\r\nevent: a\r\ndata: one\r\n\r\nid: 2\r\ndata: two\r\n\r\n';
    const messages = [];
    for (const char of text) messages.push(...parser.push(char));
    expect(messages).toEqual([
      { type: 'a', data: 'one', lastEventId: '1' },
      { type: 'message', data: 'two', lastEventId: '2' },
    ]);
  });

  it('keeps multi-line data, ignores comments and blocks without data, and keeps the last id', () => {
    const parser = new SseParser();
    expect(parser.push(': keep-alive\n\n')).toEqual([]);
    expect(parser.push('id: 9\nevent: x\n\n')).toEqual([]);
    expect(parser.push('data: a\ndata:b\ndata\n\n')).toEqual([{ type: 'message', data: 'a\nb\n', lastEventId: '9' }]);
  });

  it('accepts lone \\r line ends and ignores unknown fields and bad retry values', () => {
    const parser = new SseParser();
    expect(parser.push('foo: bar\rretry: soon\rdata: x\r\r')).toEqual([{ type: 'message', data: 'x', lastEventId: '' }]);
    expect(parser.retry).toBeNull();
  });
});
