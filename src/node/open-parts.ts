// What a node process has opened, in order, so that it is closed in the
// reverse order: the part built last (the ticker) goes first, the gRPC server
// built first goes last. A start that fails halfway closes what it opened
// the same way, so the listeners are free again and the data untouched.

export class OpenParts {
  private readonly closers: (() => void | Promise<void>)[] = [];

  /** Records how to close a part just opened. */
  add(close: () => void | Promise<void>): void {
    this.closers.push(close);
  }

  /**
   * Closes every part, the last opened first, each once. A part that fails
   * to close does not keep the others open: the first error is thrown after
   * all were closed.
   */
  async closeAll(): Promise<void> {
    let first: unknown = null;
    for (let close = this.closers.pop(); close !== undefined; close = this.closers.pop()) {
      try {
        await close();
      } catch (err) {
        first ??= err;
      }
    }
    if (first !== null) throw first;
  }
}
