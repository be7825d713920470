import { useRef } from 'preact/hooks';

// A list whose filters or page change while its answer is on the way must show the answer to the
// last request, not the one that happened to arrive last.

/** `begin()` marks a request as the latest; the function it returns tells whether it still is. */
export function useLatestRequest() {
  const generation = useRef(0);
  return () => {
    const mine = ++generation.current;
    return () => mine === generation.current;
  };
}
