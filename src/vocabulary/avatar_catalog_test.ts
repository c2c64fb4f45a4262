import assert from "node:assert/strict";
import { ApiError } from "../errors.ts";
import { AVATAR_CATALOG, resolveAvatarConfig } from "./avatar_catalog.ts";

Deno.test("avatar catalog: defaults for omitted ids, 400 SVC_RENDER_MISCONFIGURED naming the catalog's ids", () => {
  assert.deepEqual(resolveAvatarConfig(AVATAR_CATALOG, undefined), { avatarId: "ada", bgId: "studio" });
  assert.deepEqual(resolveAvatarConfig(AVATAR_CATALOG, { avatar_id: "kai", bg_id: "sunset" }), {
    avatarId: "kai",
    bgId: "sunset",
  });
  assert.throws(
    () => resolveAvatarConfig(AVATAR_CATALOG, { avatar_id: "nobody" }),
    (e) =>
      e instanceof ApiError && e.status === 400 && e.code === "SVC_RENDER_MISCONFIGURED" &&
      e.message.includes("ada, ben, kai"),
  );
  assert.throws(
    () => resolveAvatarConfig(AVATAR_CATALOG, { bg_id: "moon" }),
    (e) => e instanceof ApiError && e.message.includes("studio, sunset, office"),
  );
});
