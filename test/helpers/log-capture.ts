// A server's log lines as a test reads them: the stream to hand to serve(t, { logStream }).
import { Writable } from 'node:stream';

export class LogCapture extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: string, cb: () => void): void {
    this.text += chunk.toString();
    cb();
  }
  /** every line so far, parsed (pino's JSON) */
  lines(): Record<string, unknown>[] {
    return this.text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }
}
