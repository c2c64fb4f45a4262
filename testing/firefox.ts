/**
 * Debian's Firefox ESR (`/usr/bin/firefox-esr`), headless, driven by `puppeteer-core` over WebDriver BiDi —
 * the project's second browser engine (never a downloaded browser: puppeteer-core downloads nothing, and
 * the executable is Debian's). Headless Firefox on a machine without a sound server has no audio device:
 * `media.cubeb.force_mock_context` gives it a mock one, on which an `AudioContext` runs and its output
 * timestamps advance as on a device.
 *
 * @module
 */
import puppeteer, { type Browser } from "puppeteer-core";

/** Where Debian installs Firefox ESR. */
export const FIREFOX = "/usr/bin/firefox-esr";

/**
 * Launches headless Firefox ESR. `autoplay: "allowed"` lets media (and an `AudioContext`) start without a
 * user gesture; by default it is Firefox's own rule, as in a user's browser: sound waits for a click.
 */
export async function launchFirefox(options: { autoplay?: "allowed" | "gesture" } = {}): Promise<Browser> {
  return await puppeteer.launch({
    browser: "firefox",
    executablePath: FIREFOX,
    headless: true,
    extraPrefsFirefox: {
      "media.cubeb.force_mock_context": true,
      // (0: allowed; 1: blocked until a user gesture, Firefox's default for audible media)
      ...(options.autoplay === "allowed" ? { "media.autoplay.default": 0 } : {}),
      "media.autoplay.block-webaudio": options.autoplay !== "allowed",
      "datareporting.policy.dataSubmissionEnabled": false,
      "browser.shell.checkDefaultBrowser": false,
    },
  });
}
