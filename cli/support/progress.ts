// A one-line progress bar on stderr, drawn only when stderr is a terminal (scripts and CI logs get
// nothing), redrawn at most every 100 ms.
const WIDTH = 30;

export interface Progress {
  /** Sets how far along it is (`done` of `total`), with an optional note after the bar. */
  update(done: number, total: number, note?: string): void;
  /** Draws the last state and ends the line. */
  finish(): void;
}

export function progressBar(label: string, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return { update: () => undefined, finish: () => undefined };
  let last = 0;
  let line = '';
  let drawn = false;
  const draw = () => {
    stream.write(`\r${line}\x1b[K`);
    drawn = true;
  };
  return {
    update(done, total, note = '') {
      const fraction = total > 0 ? Math.min(1, done / total) : 0;
      const filled = Math.round(fraction * WIDTH);
      line = `${label} [${'#'.repeat(filled)}${'-'.repeat(WIDTH - filled)}] ${Math.floor(fraction * 100)}%${note ? ` ${note}` : ''}`;
      const now = Date.now();
      if (now - last >= 100) {
        last = now;
        draw();
      }
    },
    finish() {
      if (line) draw();
      if (drawn) stream.write('\n');
    },
  };
}
