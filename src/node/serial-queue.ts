/**
 * Runs tasks one at a time in call order, whether or not callers await them; a failed task does
 * not stop the ones after it.
 */
export class SerialQueue {
  #tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(() => task());
    this.#tail = result.catch(() => undefined);
    return result;
  }
}
