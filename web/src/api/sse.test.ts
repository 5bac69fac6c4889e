import { describe, expect, it } from 'vitest';
import { SseParser } from './sse';

describe('SseParser', () => {
  it('splits data events, skips comments and joins multi-line data', () => {
    const p = new SseParser();
    expect(p.push('data: {"a":1}\n\n: keep-alive\n\ndata: x\ndata: y\n\n')).toEqual(['{"a":1}', 'x\ny']);
  });

  it('keeps a partial event across chunks, including a split CRLF', () => {
    const p = new SseParser();
    expect(p.push('data: {"a"')).toEqual([]);
    expect(p.push(':2}\r')).toEqual([]);
    expect(p.push('\n\r\n')).toEqual(['{"a":2}']);
  });

  it('ignores other fields and events without data', () => {
    const p = new SseParser();
    expect(p.push('event: ping\nid: 3\n\nretry: 10\ndata:no-space\n\n')).toEqual(['no-space']);
  });
});
