/** A progress line on stderr: rewritten in place on a terminal, one line per update otherwise. */
export function progressWriter(stream: NodeJS.WritableStream) {
  const interactive = (stream as { isTTY?: boolean }).isTTY === true;
  let shown = false;
  return {
    update(text: string): void {
      stream.write(interactive ? `\r${text}\u001b[K` : `${text}\n`);
      shown = true;
    },
    done(): void {
      if (interactive && shown) stream.write('\n');
      shown = false;
    },
  };
}
