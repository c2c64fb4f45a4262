/**
 * Overwrites the event loop thread's stack below JavaScript once a request that carried provider credentials
 * has its answer.
 *
 * Deno's HTTP server reads a connection's bytes in buffers on the event loop thread's stack, so the first
 * bytes of a create request — its head, its API key and, for a body of a few hundred bytes, the whole body
 * with its credentials — stay there until the stack grows that deep again (measured: 1–2 copies of an
 * external engine's request, 21–26 KiB below the stack's top, after every ending; see docs/api.md). A timer
 * callback runs JavaScript from the event loop itself, the shallowest a JavaScript stack gets; from there
 * `scrubStack` recurses through 512 KiB of large interpreter frames, which overwrites those buffers (the
 * memory-scan test finds none left). Freed heap memory is glibc's business (`GLIBC_TUNABLES`).
 *
 * @module
 */
import { scrubStack } from "../auth/memory_scrub.ts";

/** Schedules the scrub (one timer at a time) and lets a closing process wait for it. */
export class StackScrub {
  #pending: Promise<void> | null = null;

  /** Asks for a scrub from the next timer callback; resolves once it has run. */
  request(): Promise<void> {
    this.#pending ??= new Promise<void>((resolve) =>
      setTimeout(() => {
        this.#pending = null;
        scrubStack();
        resolve();
      }, 0)
    );
    return this.#pending;
  }

  /** Resolves when no scrub is pending. */
  settled(): Promise<void> {
    return this.#pending ?? Promise.resolve();
  }
}
