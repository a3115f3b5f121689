/** Work that may finish after the response (an ExecutionContext, or anything with the same method). */
export interface Background {
  waitUntil(promise: Promise<unknown>): void;
}
