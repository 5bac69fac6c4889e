// Server-Sent Events over fetch. `EventSource` cannot send an
// `Authorization` header, so the tail is read with fetch and a stream reader
// (works in Chromium and Firefox alike); the parser follows the SSE spec for
// `data:` lines, comments and blank-line dispatch.
import { authHeaders, errorOf, isAbort, ApiError } from './client';

/** Splits an SSE byte stream into the `data` of each event. */
export class SseParser {
  private buf = '';
  private data: string[] = [];

  /** Feeds a chunk of text; returns the events it completed. */
  push(chunk: string): string[] {
    this.buf += chunk;
    const out: string[] = [];
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buf);
      if (!m) break;
      // A lone '\r' at the end may be the first half of '\r\n': wait.
      if (m[0] === '\r' && m.index === this.buf.length - 1) break;
      const line = this.buf.slice(0, m.index);
      this.buf = this.buf.slice(m.index + m[0].length);
      if (line === '') {
        if (this.data.length > 0) out.push(this.data.join('\n'));
        this.data = [];
      } else if (line.startsWith(':')) {
        // comment (keep-alive)
      } else {
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'data') this.data.push(value);
      }
    }
    return out;
  }
}

/** Reads an SSE endpoint until `signal` aborts or the server ends the stream. */
export async function readSse(
  url: string,
  onData: (data: string) => void,
  signal: AbortSignal,
  onOpen?: () => void,
): Promise<void> {
  let resp: Response;
  try {
    resp = await fetch(url, {
      headers: { ...authHeaders('GET'), Accept: 'text/event-stream' },
      credentials: 'same-origin',
      signal,
    });
  } catch (e) {
    if (isAbort(e)) return;
    throw new ApiError('network', `cannot reach the server: ${String(e)}`, 0);
  }
  if (!resp.ok) throw await errorOf(resp);
  if (!resp.body) throw new ApiError('internal', 'the response has no body', resp.status);
  onOpen?.();
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new SseParser();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      for (const d of parser.push(value)) onData(d);
    }
  } catch (e) {
    if (isAbort(e) || signal.aborted) return;
    throw new ApiError('network', `the live stream broke: ${String(e)}`, 0);
  } finally {
    reader.releaseLock();
  }
}
