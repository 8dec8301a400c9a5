// A minimal Server-Sent Events client for the change feed tests: fetch + a stream reader,
// parsing events (id, event, data) and comment lines as the EventSource spec does.
export interface SseEvent {
  id: string;
  event: string;
  data: string;
}

export interface SseStream {
  status: number;
  headers: Headers;
  /** the next `n` events (comments skipped); rejects if the stream ends first */
  next(n?: number): Promise<SseEvent[]>;
  /** the next comment line (without the leading ':') */
  nextComment(): Promise<string>;
  /** resolves when the server ends the stream */
  ended(): Promise<void>;
  close(): void;
}

export async function openSse(url: string, headers: Record<string, string> = {}): Promise<SseStream> {
  const ac = new AbortController();
  const r = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: ac.signal });
  const queue: (SseEvent | { comment: string })[] = [];
  let waiters: (() => void)[] = [];
  let done = false;
  let buf = '';
  let cur: Partial<SseEvent> = {};
  const wake = () => {
    const w = waiters;
    waiters = [];
    for (const f of w) f();
  };
  const pump = async () => {
    if (!r.body) return;
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    try {
      for (;;) {
        const { value, done: d } = await reader.read();
        if (d) break;
        buf += dec.decode(value, { stream: true });
        let i: number;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (line === '') {
            if (cur.data !== undefined) queue.push({ id: cur.id ?? '', event: cur.event ?? 'message', data: cur.data });
            cur = {};
          } else if (line.startsWith(':')) queue.push({ comment: line.slice(1).trim() });
          else {
            const c = line.indexOf(':');
            const field = c < 0 ? line : line.slice(0, c);
            const val = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
            if (field === 'id') cur.id = val;
            else if (field === 'event') cur.event = val;
            else if (field === 'data') cur.data = cur.data === undefined ? val : cur.data + '\n' + val;
          }
        }
        wake();
      }
    } catch {
      /* aborted */
    }
    done = true;
    wake();
  };
  if (r.status === 200) void pump();
  const take = async <T>(pick: () => T | undefined): Promise<T> => {
    for (;;) {
      const v = pick();
      if (v !== undefined) return v;
      if (done) throw new Error('the stream ended');
      await new Promise<void>((res) => waiters.push(res));
    }
  };
  return {
    status: r.status,
    headers: r.headers,
    async next(n = 1) {
      const out: SseEvent[] = [];
      while (out.length < n) {
        out.push(
          await take(() => {
            while (queue.length && 'comment' in queue[0]!) queue.shift();
            return queue.length ? (queue.shift() as SseEvent) : undefined;
          }),
        );
      }
      return out;
    },
    nextComment() {
      return take(() => {
        while (queue.length && !('comment' in queue[0]!)) queue.shift();
        return queue.length ? (queue.shift() as { comment: string }).comment : undefined;
      });
    },
    async ended() {
      while (!done) await new Promise<void>((res) => waiters.push(res));
    },
    close() {
      ac.abort();
    },
  };
}
