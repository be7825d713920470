/** Waits `ms` milliseconds. */
export async function sleep(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls until `condition` holds (bounded: the machine may be busy), then returns whether it did. */
export async function eventually(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<boolean> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(20)) {
    if (await condition()) return true;
  }
  return condition();
}
