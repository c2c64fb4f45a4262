/**
 * One page interface over both browser drivers of the tests — Playwright's Chromium and Puppeteer's Firefox
 * ESR (WebDriver BiDi) — for tests that run the same page scripts in both: open a page, go to a URL,
 * evaluate a script, click, and the page errors seen.
 *
 * @module
 */
import { launchChromium } from "./browser.ts";
import { launchFirefox } from "./firefox.ts";

/** What a test needs of a page, whichever browser driver. */
export interface AnyPage {
  goto(url: string): Promise<unknown>;
  evaluate(script: string): Promise<unknown>;
  click(selector: string): Promise<void>;
}

/** A browser of either driver: its pages (each with the `pageerror`s it saw), and closing it. */
export interface AnyBrowser {
  page(): Promise<{ page: AnyPage; errors: string[] }>;
  close(): Promise<void>;
}

/** The part of a Playwright or Puppeteer page the tests use. */
interface DriverPage {
  on(event: "pageerror", listener: (e: unknown) => void): unknown;
  goto(url: string): Promise<unknown>;
  evaluate(script: string): Promise<unknown>;
  click(selector: string): Promise<void>;
}

/** Either driver's browser as an {@link AnyBrowser}. */
function anyBrowser(b: { newPage(): Promise<DriverPage>; close(): Promise<void> }): AnyBrowser {
  return {
    async page() {
      const page = await b.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      return {
        page: { goto: (u) => page.goto(u), evaluate: (s) => page.evaluate(s), click: (s) => page.click(s) },
        errors,
      };
    },
    close: () => b.close(),
  };
}

/** Debian's Chromium (with sound), through Playwright; `autoplay` as `launchChromium` takes it. */
export async function chromium(options: { autoplay?: "allowed" | "gesture" } = {}): Promise<AnyBrowser> {
  return anyBrowser(await launchChromium({ media: true, ...options }));
}

/**
 * Debian's Firefox ESR, through Puppeteer over WebDriver BiDi, on its mock audio device; `autoplay` as
 * `launchFirefox` takes it. (A second page of one Firefox is a background tab, which draws nothing: a test
 * that watches two players at once launches a browser for each.)
 */
export async function firefox(options: { autoplay?: "allowed" | "gesture" } = {}): Promise<AnyBrowser> {
  return anyBrowser(await launchFirefox(options));
}

/**
 * Polls `script` in the page until it is truthy, every 100 ms, for at most `deadlineMs`; the error says what
 * was awaited and the page's player's state and stats then.
 */
export async function until(page: AnyPage, script: string, what: string, deadlineMs: number): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!(await page.evaluate(script))) {
    if (Date.now() > end) {
      const st = await page.evaluate(
        "JSON.stringify([globalThis.player?.state(), globalThis.player?.stats()])",
      );
      throw new Error(`timed out waiting for ${what}: ${st}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
