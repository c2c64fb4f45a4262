/**
 * Lays out `sdk/` as an installed npm package in a temporary folder, offline: the package's files under
 * `node_modules/<name>` and its dependencies (at the versions locked in `deno.lock`) copied from Deno's npm
 * cache, the way `npm install` would place them.
 *
 * @module
 */

const ROOT = new URL("../", import.meta.url);
const SDK = new URL("sdk/", ROOT);

/** Deno's npm cache folder. */
async function npmCache(): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), { args: ["info", "--json"], stdout: "piped" }).output();
  return JSON.parse(new TextDecoder().decode(out.stdout)).npmCache;
}

async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    if (entry.isDirectory) await copyTree(`${from}/${entry.name}`, `${to}/${entry.name}`);
    else if (entry.isFile) await Deno.copyFile(`${from}/${entry.name}`, `${to}/${entry.name}`);
  }
}

/** The SDK's `package.json`. */
export async function sdkPackageJson(): Promise<
  { name: string; dependencies: Record<string, string>; files: string[]; exports: Record<string, unknown> }
> {
  return JSON.parse(await Deno.readTextFile(new URL("package.json", SDK)));
}

/**
 * Creates `<dir>/node_modules/<sdk name>` with the files `package.json` publishes (`*.js`, `*.d.ts`,
 * `README.md`, `package.json`) and its dependency tree from Deno's npm cache. Returns the package name.
 */
export async function installSdk(dir: string): Promise<string> {
  const pkg = await sdkPackageJson();
  const target = `${dir}/node_modules/${pkg.name}`;
  await Deno.mkdir(target, { recursive: true });
  for await (const entry of Deno.readDir(SDK)) {
    if (entry.isFile && /(\.js|\.d\.ts|^README\.md|^package\.json)$/.test(entry.name)) {
      await Deno.copyFile(new URL(entry.name, SDK), `${target}/${entry.name}`);
    }
  }
  const lock = JSON.parse(await Deno.readTextFile(new URL("deno.lock", ROOT))).npm as Record<
    string,
    { dependencies?: string[] }
  >;
  const cache = `${await npmCache()}/registry.npmjs.org`;
  const done = new Set<string>();
  const install = async (dependency: string) => {
    // A lock entry names a dependency as "name" or, when several versions are locked, "name@version".
    const at = dependency.lastIndexOf("@");
    const name = at > 0 ? dependency.slice(0, at) : dependency;
    const locked = Object.keys(lock).find((k) =>
      at > 0
        ? k.split("_")[0] === dependency
        : k.startsWith(`${name}@`) && /^\d/.test(k.slice(name.length + 1))
    );
    if (!locked) throw new Error(`${dependency} is not in deno.lock`);
    if (done.has(locked)) return;
    done.add(locked);
    const version = locked.slice(name.length + 1).split("_")[0];
    await copyTree(`${cache}/${name}/${version}`, `${dir}/node_modules/${name}`);
    for (const dep of lock[locked].dependencies ?? []) await install(dep);
  };
  for (const name of Object.keys(pkg.dependencies)) await install(name);
  return pkg.name;
}
