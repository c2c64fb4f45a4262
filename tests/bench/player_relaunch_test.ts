import assert from "node:assert/strict";
import { BrowserHung, measureWithRelaunch, scriptName, stepGuard } from "../../bench/player.ts";

const never = () => new Promise<never>(() => {});

Deno.test("stepGuard: a step that ends passes through, its value or its error", async () => {
  const guard = stepGuard(5_000);
  assert.equal(await guard("a read", Promise.resolve(42)), 42);
  await assert.rejects(guard("a failing read", Promise.reject(new Error("page error"))), /page error/);
  // (a failed step is not a hung browser: the next step still runs)
  assert.equal(await guard("another read", Promise.resolve("ok")), "ok");
});

Deno.test("stepGuard: a step that does not end is a hung browser, and so is every step after it", async () => {
  const guard = stepGuard(50);
  const err = await guard("player.stats()", never()).catch((e) => e);
  assert.ok(err instanceof BrowserHung);
  assert.match(err.message, /did not end in 0\.05 s \(player\.stats\(\)\)/);
  // Nothing more is asked of a deadlocked browser: later steps fail at once with the same error.
  const later = await guard("closing a page", Promise.resolve("closed")).catch((e) => e);
  assert.equal(later, err);
});

Deno.test("scriptName: a step is named by its script's head, never by what it carries", () => {
  assert.equal(scriptName("globalThis.player.stats()"), "globalThis.player.stats");
  assert.equal(scriptName("  void globalThis.sampleLags()"), "void globalThis.sampleLags");
  // (a probe's start carries the session's token: none of it is named)
  assert.equal(scriptName('startProbe({"meta":{"session_token":"eyJhbGciOi.secret"}})'), "startProbe");
  assert.equal(scriptName("(async () => JSON.stringify(globalThis.marks))()"), "a script");
});

/** A browser that records being closed. */
const fakeBrowser = (name: string, closed: string[]) => ({
  name,
  close: () => Promise.resolve(void closed.push(name)),
});

Deno.test("measureWithRelaunch: a part that hung is measured again in a relaunched browser", async () => {
  const closed: string[] = [];
  const state = { browser: fakeBrowser("first", closed), relaunches: 0, max: 3 };
  const tried: string[] = [];
  const result = await measureWithRelaunch(
    state,
    "webcodecs connects",
    (b) => {
      tried.push(b.name);
      return b.name === "first"
        ? Promise.reject(new BrowserHung("a read", 60_000))
        : Promise.resolve(`${b.name}'s`);
    },
    () => Promise.resolve(fakeBrowser("second", closed)),
  );
  assert.equal(result, "second's");
  assert.deepEqual(tried, ["first", "second"]);
  assert.deepEqual(closed, ["first"]);
  assert.equal(state.relaunches, 1);
  assert.equal(state.browser.name, "second");
});

Deno.test("measureWithRelaunch: any other failure stops the run; so does a hang past the most relaunches", async () => {
  const closed: string[] = [];
  const state = { browser: fakeBrowser("first", closed), relaunches: 0, max: 2 };
  let n = 0;
  const relaunch = () => Promise.resolve(fakeBrowser(`relaunched ${++n}`, closed));
  await assert.rejects(
    measureWithRelaunch(state, "steady", () => Promise.reject(new Error("no frame shown in 20 s")), relaunch),
    /no frame shown/,
  );
  assert.equal(state.relaunches, 0);
  assert.deepEqual(closed, []);

  await assert.rejects(
    measureWithRelaunch(state, "steady", () => Promise.reject(new BrowserHung("a read", 60_000)), relaunch),
    BrowserHung,
  );
  assert.equal(state.relaunches, 2);
  assert.deepEqual(closed, ["first", "relaunched 1"]);
  assert.equal(state.browser.name, "relaunched 2");
});
