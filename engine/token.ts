/**
 * The engine's bearer token file: read it, or create a random one (mode 0600).
 *
 * @module
 */

/**
 * Returns the token stored in `file`, creating the file with a new random token (32 random bytes,
 * base64url, mode 0600) when it does not exist. The parent directory is created with mode 0700.
 *
 * @param file path of the token file
 * @returns the token and whether it was just created
 * @throws Error if the file exists but holds no usable token
 */
export async function loadOrCreateToken(file: string): Promise<{ token: string; created: boolean }> {
  try {
    const token = (await Deno.readTextFile(file)).trim();
    if (!/^[\x21-\x7e]{1,4096}$/.test(token)) {
      throw new Error(`token file ${file} must hold one token of visible ASCII characters`);
    }
    return { token, created: false };
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  const slash = file.lastIndexOf("/");
  if (slash > 0) await Deno.mkdir(file.slice(0, slash), { recursive: true, mode: 0o700 });
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const token = btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(
    /=+$/,
    "",
  );
  try {
    await Deno.writeTextFile(file, token + "\n", { mode: 0o600, createNew: true });
  } catch (err) {
    if (err instanceof Deno.errors.AlreadyExists) return await loadOrCreateToken(file);
    throw err;
  }
  if (Deno.build.os !== "windows") await Deno.chmod(file, 0o600);
  return { token, created: true };
}
